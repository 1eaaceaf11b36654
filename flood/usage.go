package flood

import (
	"errors"
	"fmt"

	"github.com/crowdfed/crowd/flood/record"
)

// usage is a *record.UsageError, the program's one usage-error type: the
// engine's parsers (--rates, --arrivals) report bad input as the record's
// (--expect, --compare) do, and a CLI maps it to exit 2.
func usage(in, format string, args ...any) error {
	return record.Usagef("%q: %s", in, fmt.Sprintf(format, args...))
}

// ErrInvalidPlan is wrapped by every error about a Plan (or pacer, ladder)
// that cannot run; a CLI maps it to exit status 2.
var ErrInvalidPlan = errors.New("flood: invalid plan")
