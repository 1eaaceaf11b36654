package record

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
