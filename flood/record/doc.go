// Package record is the run record: what a flood measured, as data. It holds
// the measurement types the engine fills (Stats, Counts, Tally and Class, the
// per-second Tick and Progress, Window, Result), the histogram geometry every
// histogram shares (one copy: NewHist, RecordDuration, HistRecord.Decode),
// the versioned JSON Record (SCHEMA.md) with Merge, the verdicts computed
// over a record (BottleneckRule, CapacityRule, Deviations), the --expect and
// --stop-when Gates, Compare of two runs, and the record's files in an out
// directory (RecordFile: its checkpoints and final record, the runs.md row).
//
// The direction of the knot: the engine (package flood) imports record and
// feeds its collector record's types (Offer, Delivery, Outcome: sends.go);
// the Recorder is that collector for the record (a Progress each second, a
// Result snapshot each checkpoint, the final Result after End). record
// never imports the engine, so the record, its gates
// and its reports (package flood/report) are read and written by tools that
// never run a flood, and the audience reads record types without the engine.
//
// The runs.md row stays here, beside RecordFile: the row is written with
// each record file, as the out directory's index, and report renders from
// record, never the other way round.
package record
