//go:build !unix

package statedir

import (
	"errors"
	"os"
)

var errBusy = errors.New("locked by another process")

// lock is a no-op where flock(2) does not exist: the state directory is
// then unguarded.
func lock(*os.File) error { return nil }

// unlock is a no-op where lock is.
func unlock(*os.File) error { return nil }
