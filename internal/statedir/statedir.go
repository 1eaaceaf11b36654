// Package statedir guards the crowd's state directory (keys, CA, follow
// graph, activity log): it checks that --state names a directory before
// anything is made in it, and lets one process at a time own it, by a lock
// the kernel releases when the owner dies, even by kill -9.
package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNotDir marks a --state that names something other than a directory.
var ErrNotDir = errors.New("not a usable state directory")

// ErrInUse marks a state directory another process owns.
var ErrInUse = errors.New("state directory in use")

// LockFile is the name of the lock in the state directory; it holds the
// owner's pid, for the message a second process gets.
const LockFile = "lock"

// Prepare makes sure dir is a directory, creating it (and its parents)
// when missing. Its one error names --state, so a mistake shows once, not
// once per file the crowd would have made in it.
func Prepare(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("%w: --state %s is a file, not a directory: pass a directory (it is created if missing)", ErrNotDir, dir)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: --state %s: %v", ErrNotDir, dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: --state %s cannot be created: %v", ErrNotDir, dir, err)
	}
	return nil
}

// AcquireExisting is Acquire for a command that works on a crowd's state
// rather than making one (rotating its keys, pruning its follows): a dir
// that does not exist is an error wrapping ErrNotDir that says so, and
// nothing is created, so that a misspelt --state is not taken for an empty
// crowd. Its ErrInUse error names the owner and gives no advice: the
// command knows what its user should do instead, and "pass another
// --state" would have it work on another crowd's state.
func AcquireExisting(dir string) (*Lock, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: --state %s does not exist: give the --state the crowd's serve was given", ErrNotDir, dir)
	}
	return acquire(dir)
}

// Lock is the ownership of a state directory. Release it when done; the
// kernel releases it when the process ends, however it ends.
type Lock struct {
	f *os.File
}

// Acquire prepares dir (see Prepare) and takes its lock without waiting.
// When another process holds it, the error wraps ErrInUse and names dir
// and that process's pid, with a serve's advice: stop it, or pass another
// --state.
func Acquire(dir string) (*Lock, error) {
	l, err := acquire(dir)
	if errors.Is(err, ErrInUse) {
		return nil, fmt.Errorf("%w: stop it, or pass another --state", err)
	}
	return l, err
}

// acquire is Acquire without the advice.
func acquire(dir string) (*Lock, error) {
	if err := Prepare(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--state %s: %w", dir, err)
	}
	if err := lock(f); err != nil {
		f.Close()
		if errors.Is(err, errBusy) {
			return nil, fmt.Errorf("%w: --state %s is owned by %s", ErrInUse, dir, owner(path))
		}
		return nil, fmt.Errorf("--state %s: lock %s: %w", dir, path, err)
	}
	// The pid is only for the message above: the lock is the flock.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// owner describes the process named in the lock file at path.
func owner(path string) string {
	data, err := os.ReadFile(path)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || perr != nil {
		return "another process (its pid is not written yet)"
	}
	return fmt.Sprintf("another crowd process, pid %d", pid)
}

// Release gives the directory up. It is idempotent.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	// Unlocked before the close: closing drops the lock only with the
	// last descriptor of the open file, and a child this process was
	// starting holds a copy of it until its exec closes it, so a second
	// Acquire here would find the directory still owned, by this pid.
	err := errors.Join(unlock(l.f), l.f.Close())
	l.f = nil
	return err
}
