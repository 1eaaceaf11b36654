package loadrun

import (
	"errors"

	"github.com/crowdfed/crowd/audience"
)

// RunSummary is what a crowd run record's run section says (raw is the
// record file's bytes): the lines crowd run printed after its table (the
// personas' homes, the drain, the deliveries to the crowd), for a report
// of the record; nil for a flood's record, which has no such section. A
// section of a schema or version this crowd does not read is one line
// saying so, in its place; the error is a section that does not decode.
func RunSummary(raw []byte) ([]string, error) {
	rs, err := audience.ReadRun(raw)
	if errors.Is(err, audience.ErrRunUnread) {
		// The section carries its own schema and version so that the
		// flood's figures around it stay readable: not a reason to refuse them.
		return []string{err.Error()}, nil
	}
	if err != nil || rs == nil {
		return nil, err
	}
	return audience.SummaryLines(rs), nil
}
