package record

import "fmt"

// UsageError is a mistake in how the program was asked to run: a flag, an
// argument or an expression it cannot understand, a file a flag names, a
// state that is not the crowd's. It is the program's one usage-error type
// (the flood's parsers, the load run and the CLI all return it), so a CLI
// maps it to exit status 2 in one place, unlike a missed gate (1). It
// lives here, in the record, because every room that parses input (flood,
// loadrun, cmd) may import the record and the record imports none of them.
type UsageError struct{ Err error }

// Error is the wrapped error's message, which names the flag or input.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap is the wrapped error, for errors.Is and errors.As.
func (e *UsageError) Unwrap() error { return e.Err }

// Usage wraps err as a *UsageError; nil stays nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Err: err}
}

// Usagef is Usage of a formatted error (%w wraps, as in fmt.Errorf).
func Usagef(format string, args ...any) error { return &UsageError{Err: fmt.Errorf(format, args...)} }

// usage is a *UsageError that quotes the input in and says what is wrong
// with it.
func usage(in, format string, args ...any) error {
	return Usagef("%q: %s", in, fmt.Sprintf(format, args...))
}
