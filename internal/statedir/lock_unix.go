//go:build unix

package statedir

import (
	"errors"
	"os"
	"syscall"
)

var errBusy = errors.New("locked by another process")

// unlock releases f's flock(2) for every descriptor of its open file.
func unlock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// lock takes an exclusive flock(2) on f without waiting: a lock of the
// open file, which the kernel drops with the last descriptor.
func lock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errBusy
		default:
			return err
		}
	}
}
