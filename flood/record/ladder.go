package record

import "fmt"

// RungRow is one rung of a ladder.
type RungRow struct {
	Index    int
	Rate     float64 // the rung's target rate
	Record   *Record
	Shoulder bool         // a StopWhen expression held on this rung
	Stop     []GateResult // the StopWhen results
}

// LadderResult is a finished ladder.
type LadderResult struct {
	Rows     []RungRow
	Shoulder int        // index of the shoulder rung, -1 when none was reached
	Partial  bool       // stopped by cancellation or a partial rung
	Reason   StopReason // why it stopped early, if it did
	Capacity Capacity   // the verdict over the rows (DefaultCapacityRule)
}

// WeatherNote says what weather the ladder's rungs met: nothing when every
// rung met clear weather; a line when all met the same; else a line per
// rung, under a warning that the capacity verdict compares rungs measured
// under different weather.
func (res LadderResult) WeatherNote() []string {
	met := make([]string, len(res.Rows))
	same := true
	for i, row := range res.Rows {
		met[i] = row.Record.WeatherMet()
		same = same && met[i] == met[0]
	}
	switch {
	case len(met) == 0 || same && met[0] == "clear":
		return nil
	case same:
		return []string{"weather: every rung met " + met[0]}
	}
	lines := []string{"weather: the rungs met different weather, so the capacity verdict compares unlike floods:"}
	for i, row := range res.Rows {
		lines = append(lines, fmt.Sprintf("  %g/s: %s", row.Rate, met[i]))
	}
	return lines
}
