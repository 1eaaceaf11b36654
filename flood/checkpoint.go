package flood

import (
	"slices"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// checkpoint is a consistent snapshot of the run at now, taken by the ticker
// while sends go on: the Result that Run would return had the run been
// interrupted now, minus the sends still in flight (Sent counts them,
// Completed and Aborted do not yet).
func (e *engine) checkpoint(now time.Time) *record.Result {
	window := now.Sub(e.start)
	if e.p.Duration > 0 {
		window = min(window, e.p.Duration)
	}
	r := e.collect(now, window)
	r.Partial, r.Reason = true, record.ReasonCheckpoint
	// The ticker keeps appending to its timeline; the snapshot keeps its own.
	r.Timeline = slices.Clone(e.timeline)
	return r
}

// collect merges the recorder shards and the dispatcher's counters into a
// Result ending at end, whose measured window ends at windowEnd (an offset
// from the start). It is safe while the run goes on: each shard is merged
// under its own lock (a worker waits that long once, never a send), then the
// counters are copied under the dispatcher's. In that order every completion
// seen in a shard was counted as sent before, so in every type
// Sent >= Completed + Aborted (the difference is in flight) and
// Offered = Sent + Dropped; after the run both are equalities.
func (e *engine) collect(end time.Time, windowEnd time.Duration) *record.Result {
	r := &record.Result{
		Start:       e.start,
		End:         end,
		Elapsed:     end.Sub(e.start),
		Overall:     record.NewStats(),
		Types:       make(map[string]*record.Stats),
		Dispatch:    record.NewHist(),
		Rate:        e.p.Pacer.Rate(),
		Duration:    e.p.Duration,
		Warmup:      e.p.Warmup,
		MaxSends:    e.p.MaxSends,
		MaxInflight: e.p.MaxInflight,
		Timeout:     e.p.Timeout,
	}
	var lastPicked, lastDone time.Duration
	for _, rec := range e.recs {
		rec.mu.Lock()
		r.Dispatch.Merge(rec.dispatch)
		lastPicked, lastDone = max(lastPicked, rec.lastPicked), max(lastDone, rec.lastDone)
		for typ, s := range rec.types {
			st := r.Types[typ]
			if st == nil {
				st = record.NewStats()
				r.Types[typ] = st
			}
			// Completed and Aborted come from the recorders, Offered, Sent,
			// Dropped and Starved from the dispatcher: the sum is exact.
			st.Merge(s)
		}
		rec.mu.Unlock()
	}
	e.mu.Lock()
	r.WarmupCounts = e.warm
	lastDue := e.lastDue
	for typ, c := range e.types {
		if c.Offered == 0 {
			continue // only seen in the warm-up
		}
		st := r.Types[typ]
		if st == nil {
			st = record.NewStats()
			r.Types[typ] = st
		}
		st.Counts.Merge(*c)
	}
	e.mu.Unlock()
	for _, st := range r.Types {
		r.Overall.Merge(st)
	}
	warm := e.p.Warmup
	if r.Overall.Counts.Offered == 0 {
		lastDue = warm
	}
	r.Window = record.Window{
		FirstDue:    warm.Seconds(),
		LastDue:     max(warm, lastDue).Seconds(),
		LastSent:    max(warm, lastPicked).Seconds(),
		LastAnswer:  max(warm, lastDone).Seconds(),
		ScheduleEnd: max(warm, windowEnd).Seconds(),
	}
	r.Measured = max(0, max(windowEnd, lastDone)-warm)
	return r
}
