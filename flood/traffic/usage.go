package traffic

import (
	"fmt"

	"github.com/crowdfed/crowd/flood/record"
)

// usage is a *record.UsageError, the program's one usage-error type: the
// traffic's parsers (--mix, --personas, --signing, --tamper) report bad input
// as the record's (--expect, --compare) do, and a CLI maps it to exit 2.
func usage(in, format string, args ...any) error {
	return record.Usagef("%q: %s", in, fmt.Sprintf(format, args...))
}
