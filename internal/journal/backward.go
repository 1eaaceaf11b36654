package journal

import (
	"bytes"
)

// Backward gives the complete lines of the journal at path to fn from the
// last towards the first, each without its newline and with the byte
// offset where it starts, until fn returns false or the file's start. It
// reads 64 KiB blocks from the end, so its cost is what fn asks for, not
// the file's size. An unterminated tail is skipped (DropTornTail repairs
// it); a missing file has no lines. fn must not keep line.
func Backward(path string, fn func(off int64, line []byte) bool) error {
	f, err := openJournal(path)
	if f == nil || err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	const block = 64 << 10
	// pending holds the bytes of the file from off to the end of the line
	// being assembled: whole lines, the first possibly cut at off.
	var pending []byte
	off := st.Size()
	tail := true // until the last newline is found, bytes belong to the torn tail
	for off > 0 {
		k := min(int64(block), off)
		off -= k
		buf := make([]byte, k, int(k)+len(pending))
		if _, err := f.ReadAt(buf, off); err != nil {
			return err
		}
		pending = append(buf, pending...)
		if tail {
			i := bytes.LastIndexByte(pending, '\n')
			if i < 0 {
				pending = pending[:0]
				continue
			}
			pending, tail = pending[:i+1], false
		}
		// Hand out every line whose start is known: those after a newline.
		for {
			end := len(pending) - 1 // pending ends with a newline
			i := bytes.LastIndexByte(pending[:end], '\n')
			if i < 0 {
				break
			}
			if !fn(off+int64(i)+1, pending[i+1:end]) {
				return nil
			}
			pending = pending[:i+1]
		}
	}
	if !tail && len(pending) > 0 {
		fn(0, pending[:len(pending)-1])
	}
	return nil
}
