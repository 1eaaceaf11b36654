package record

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Result is what Run measured. Histograms are merged from all workers; times
// are wall-clock (Start, End) or durations.
type Result struct {
	Start   time.Time
	End     time.Time     // all sends finished
	Elapsed time.Duration // End - Start
	// Measured is the elapsed window that rates divide by: from the end of
	// the warm-up to the later of the schedule's end (Duration, the
	// interruption, or the due time after the last of MaxSends) and the last
	// measured answer. A run whose answers come after its schedule (a
	// MaxSends run at a rate no generator keeps) is measured over the time
	// it took, never over its schedule alone.
	Measured time.Duration
	Window   Window // when the measured sends were due, taken and answered
	Partial  bool   // the run stopped before its schedule ended
	Reason   string // why it is partial: "interrupted", "source exhausted", "source error: ..."
	Err      error  // the Source's error, if that stopped the run

	Overall      *Stats            // all types (measured window only)
	Types        map[string]*Stats // per activity type
	Dispatch     *hdr.Histogram    // picked - intended (µs): the generator's own delay, measured window
	WarmupCounts Counts            // sends offered during the warm-up (not measured)
	Timeline     []Tick

	// The plan as run, for the record.
	Rate        float64
	Duration    time.Duration
	Warmup      time.Duration
	MaxSends    int64
	MaxInflight int
	Timeout     time.Duration
}

// ReasonCheckpoint is the Reason of a Result that Plan.Checkpoint receives,
// and so the partial_reason of a record written from it: the run was still
// going. A record that says so after the run should have ended is what a
// killed generator left behind.
const ReasonCheckpoint = "in progress (checkpoint)"
