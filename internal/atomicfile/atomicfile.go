// Package atomicfile writes files so that a crash at any moment leaves
// either the old file or the whole new one, never a torn one: the data goes
// to a temporary file in the same directory, is fsynced, then renamed or
// linked into place, and the directory is fsynced so the new name holds.
// The crowd keeps keys, its CA, queued deliveries and run records this way.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Write replaces path with data (mode perm), atomically and durably. A
// directory at path (or a symbolic link to one) is not replaced: the error
// says it is one.
func Write(path string, data []byte, perm os.FileMode) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("write %s: it is a directory: name a file", path)
	}
	tmp, err := synced(filepath.Dir(path), filepath.Base(path), data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after the rename: nothing left to remove
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Create writes data to path (mode perm) only if path does not exist,
// atomically and durably; it fails with an error wrapping fs.ErrExist when
// it does. Of several processes creating the same path at once, exactly
// one succeeds. Where the file system has no hard links, it falls back to
// an existence check and a rename.
func Create(path string, data []byte, perm os.FileMode) error {
	tmp, err := synced(filepath.Dir(path), filepath.Base(path), data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := link(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// CreateNumbered writes data under the first free name of dir/base+ext,
// dir/base-2+ext, dir/base-3+ext …, never replacing a file, and returns the
// path it took. It gives up after 1000 names.
func CreateNumbered(dir, base, ext string, data []byte, perm os.FileMode) (string, error) {
	tmp, err := synced(dir, base+ext, data, perm)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	for i := 1; i <= 1000; i++ {
		name := base + ext
		if i > 1 {
			name = base + "-" + strconv.Itoa(i) + ext
		}
		path := filepath.Join(dir, name)
		err := link(tmp, path)
		if err == nil {
			return path, SyncDir(dir)
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s: 1000 names taken: %w", filepath.Join(dir, base+ext), fs.ErrExist)
}

// SyncDir makes the entries of dir (a rename, a new link) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// synced writes data to a new temporary file in dir, fsynced and closed,
// and returns its name. Its errors name the file asked for (dir/name),
// not the temporary one beside it.
func synced(dir, name string, data []byte, perm os.FileMode) (string, error) {
	asked := func(err error) error {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return "", asked(err)
	}
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(f.Name())
		return "", asked(err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", asked(err)
	}
	return f.Name(), nil
}

// link gives tmp the name path, failing with fs.ErrExist when path exists.
func link(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	// No hard links here (some network and FUSE file systems).
	if _, statErr := os.Lstat(path); statErr == nil {
		return fmt.Errorf("%s: %w", path, fs.ErrExist)
	}
	return os.Rename(tmp, path)
}

// Append adds data to the end of path (created with perm if missing),
// preceded by header when the file is new or empty, and fsyncs it: a
// table of runs (runs.md) grows this way, one durable row at a time. The
// header and the row are written in one call, so a crash never leaves a
// header without its first row half written.
func Append(path string, header, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	buf := data
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		buf = append(append([]byte(nil), header...), data...)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
