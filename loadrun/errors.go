package loadrun

import (
	"errors"

	"github.com/crowdfed/crowd/flood/record"
)

// usage is err as the program's usage error (*record.UsageError): a
// mistake in how the run was asked for, the CLI's exit status 2.
func usage(err error) error { return record.Usage(err) }

// usagef is usage of a formatted error.
func usagef(format string, args ...any) error { return record.Usagef(format, args...) }

// ErrInterrupted marks a run stopped by its context (SIGINT, SIGTERM): it
// neither met nor missed its gates. Whatever record it had is written.
var ErrInterrupted = errors.New("interrupted")
