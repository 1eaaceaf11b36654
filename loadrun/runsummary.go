package loadrun

import "github.com/crowdfed/crowd/audience"

// RunSummary is what a crowd run record's run section says (raw is the
// record file's bytes): the lines crowd run printed after its table (the
// personas' homes, the drain, the deliveries to the crowd), for a report
// of the record; nil for a flood's record, which has no such section. Its
// error says a section of a schema or version this crowd does not read.
func RunSummary(raw []byte) ([]string, error) {
	rs, err := audience.ReadRun(raw)
	if err != nil || rs == nil {
		return nil, err
	}
	return audience.SummaryLines(rs), nil
}
