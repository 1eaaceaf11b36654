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
	Window   Window     // when the measured sends were due, taken and answered
	Partial  bool       // the run stopped before its schedule ended
	Reason   StopReason // why it is partial
	Err      error      // the Source's error, if that stopped the run

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
	Dispatcher  Dispatcher // how the dispatcher's thread ran the schedule
}

// StopReason says why a run (or a ladder) stopped before its schedule
// ended: a Result's Reason, a record's partial_reason. A merged record joins
// the reasons of its parts with "; ". Compare with the constants, never with
// a string literal.
type StopReason string

// The reasons a run stops early. A source's error and a rung's error are
// reasons too (ReasonError).
const (
	// ReasonInterrupted: the run's context was cancelled (Ctrl-C, a signal).
	ReasonInterrupted StopReason = "interrupted"
	// ReasonExhausted: the Source had no more requests (io.EOF).
	ReasonExhausted StopReason = "source exhausted"
	// ReasonCheckpoint is the Reason of a Result that RecorderOptions.Checkpoint
	// receives, and so the partial_reason of a record written from it: the
	// run was still going. A record that says so after the run should have
	// ended is what a killed generator left behind.
	ReasonCheckpoint StopReason = "in progress (checkpoint)"
)

// ReasonError is the reason of a run stopped by err, prefixed with what
// failed ("source error", or a ladder's rung).
func ReasonError(prefix string, err error) StopReason {
	if prefix == "" {
		return StopReason(err.Error())
	}
	return StopReason(prefix + ": " + err.Error())
}
