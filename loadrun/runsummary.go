package loadrun

import (
	"errors"
	"fmt"
	"strings"

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

// RunComparison is what crowd compare shows, after its verdict, of two
// records' run sections (baseRaw, headRaw: each record file's bytes; the
// names: what its table calls them). Both read: the two side by side
// (audience.WriteRunComparison), shown, not judged. One read: a line
// naming the record that has it and saying what the other is, a flood's
// record or one whose section this crowd does not read. Neither: "" for
// two floods' records, or a line saying what each section is. A section
// that does not read is said, never an error: compare's verdict is on the
// flood's figures, which did.
func RunComparison(baseName string, baseRaw []byte, headName string, headRaw []byte) string {
	base, baseErr := audience.ReadRun(baseRaw)
	head, headErr := audience.ReadRun(headRaw)
	if base != nil && head != nil {
		var b strings.Builder
		audience.WriteRunComparison(&b, base, head) // a strings.Builder takes every write
		return b.String()
	}
	// what says why a record has no run section to show.
	what := func(side, name string, err error) string {
		if err != nil {
			return fmt.Sprintf("%s (%s): %v", side, name, err)
		}
		return fmt.Sprintf("%s (%s) is a flood's record, which has none", side, name)
	}
	switch {
	case base != nil:
		return fmt.Sprintf("crowd run: only base (%s) has a run section to show; %s\n", baseName, what("head", headName, headErr))
	case head != nil:
		return fmt.Sprintf("crowd run: only head (%s) has a run section to show; %s\n", headName, what("base", baseName, baseErr))
	case baseErr != nil || headErr != nil:
		return fmt.Sprintf("crowd run: no run section to show: %s; %s\n", what("base", baseName, baseErr), what("head", headName, headErr))
	}
	return ""
}
