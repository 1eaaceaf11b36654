package flood

import (
	"fmt"

	"github.com/crowdfed/crowd/flood/record"
)

// usage is a *record.UsageError: the flood's parsers (--mix, --rates,
// --personas, --signing) report bad input in the same type as the record's
// (--expect, --compare), so a CLI maps them all to exit status 2.
func usage(in, format string, args ...any) error {
	return &record.UsageError{Input: in, Msg: fmt.Sprintf(format, args...)}
}
