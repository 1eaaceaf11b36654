// Package journal reads the crowd's append-only JSON-lines journals (the
// follow graph, the activity log) by one rule: a line counts once its
// newline is on disk. An unterminated last line is what a crash mid-append
// leaves (torn): it is dropped and the file cut back to its complete lines.
// Any other line that does not read is damage nobody can repair silently:
// the caller gets an error naming the file and line, and the file is left
// byte-identical.
package journal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrDamaged marks a complete journal line that could not be read.
var ErrDamaged = errors.New("damaged journal line")

// Torn is the unterminated last line a crash left, and that was dropped.
type Torn struct {
	// Path is the journal's file.
	Path string
	// Line is the 1-based number the torn line had.
	Line int
	// Bytes is how long the dropped tail was.
	Bytes int64
}

// Damaged builds the error for line n (1-based) of path that could not be
// read because of why: it names path:n, says the file was left as it is,
// and how to repair it.
func Damaged(path string, n int, why error) error {
	return fmt.Errorf("%w: %s:%d: %v; the file is left as it was: repair that line, or delete it "+
		"(sed -i '%dd' %s) and accept losing what it recorded, then start again", ErrDamaged, path, n, why, n, path)
}

// Replay gives each complete line of the journal at path (without its
// newline) and its 1-based number to apply, in order. A missing file is an
// empty journal. When apply refuses a line, Replay stops with a Damaged
// error and changes nothing. When every complete line was applied and an
// unterminated tail follows them, the file is truncated to its complete
// lines (and synced), and the tail is reported.
func Replay(path string, apply func(n int, line []byte) error) (*Torn, error) {
	f, err := openJournal(path)
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var good int64
	n := 0
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			if len(line) == 0 {
				return nil, nil
			}
			torn := &Torn{Path: path, Line: n + 1, Bytes: int64(len(line))}
			return torn, truncate(path, good)
		}
		if err != nil {
			return nil, err
		}
		n++
		if err := apply(n, line[:len(line)-1]); err != nil {
			return nil, Damaged(path, n, err)
		}
		good += int64(len(line))
	}
}

// DropTornTail cuts an unterminated last line off the journal at path
// without reading the rest of it (the activity log can be large) and
// reports what it dropped; nil when the file ends with a newline, is empty
// or is missing.
func DropTornTail(path string) (*Torn, error) {
	f, err := openJournal(path)
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	end := st.Size()
	buf := make([]byte, 64<<10)
	for off := end; off > 0; {
		k := min(int64(len(buf)), off)
		off -= k
		if _, err := f.ReadAt(buf[:k], off); err != nil {
			return nil, err
		}
		i := bytes.LastIndexByte(buf[:k], '\n')
		if i < 0 {
			continue
		}
		good := off + int64(i) + 1
		if good == end {
			return nil, nil
		}
		return dropAt(f, path, good, end)
	}
	if end == 0 {
		return nil, nil
	}
	return dropAt(f, path, 0, end)
}

func dropAt(f *os.File, path string, good, end int64) (*Torn, error) {
	n, err := LineAt(f, good)
	if err != nil {
		return nil, err
	}
	return &Torn{Path: path, Line: n, Bytes: end - good}, truncate(path, good)
}

// LineAt is the 1-based number of the line that starts at byte off of r:
// one more than the newlines before it.
func LineAt(r io.ReaderAt, off int64) (int, error) {
	n := 1
	buf := make([]byte, 64<<10)
	for pos := int64(0); pos < off; {
		k := min(int64(len(buf)), off-pos)
		got, err := r.ReadAt(buf[:k], pos)
		n += bytes.Count(buf[:got], []byte{'\n'})
		pos += int64(got)
		if err != nil && !(err == io.EOF && pos >= off) {
			return 0, err
		}
		if got == 0 {
			break
		}
	}
	return n, nil
}

// openJournal opens path for reading; a missing journal is (nil, nil),
// an empty one.
func openJournal(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return f, err
}

// truncate cuts path to size bytes and syncs it, so the dropped tail does
// not come back after a crash.
func truncate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("drop the torn tail of %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("drop the torn tail of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("drop the torn tail of %s: %w", path, err)
	}
	return nil
}
