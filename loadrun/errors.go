package loadrun

import (
	"errors"
	"fmt"
)

// UsageError is a mistake in how the run was asked for (a flag, a file it
// names, a state that is not the crowd's): the CLI's exit status 2.
type UsageError struct{ Err error }

func (u *UsageError) Error() string { return u.Err.Error() }
func (u *UsageError) Unwrap() error { return u.Err }

// usage wraps err as a *UsageError.
func usage(err error) error { return &UsageError{Err: err} }

// usagef is usage of a formatted error.
func usagef(format string, args ...any) error { return usage(fmt.Errorf(format, args...)) }

// ErrInterrupted marks a run stopped by its context (SIGINT, SIGTERM): it
// neither met nor missed its gates. Whatever record it had is written.
var ErrInterrupted = errors.New("interrupted")
