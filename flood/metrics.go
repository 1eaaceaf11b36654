package flood

import (
	"sync"
	"time"

	"github.com/crowdfed/crowd/flood/record"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// outcome is one finished send as a worker hands it to its recorder. Times
// are offsets from the start of the run.
type outcome struct {
	typ      string
	measured bool
	aborted  bool
	class    record.Class
	status   int                    // the answer's status code, 0 without one
	rl       record.RateLimitSample // what the answer said of the rate limit, Retry-After included
	intended time.Duration
	picked   time.Duration // the worker took the send (before RoundTrip)
	actual   time.Duration // the request got its connection (or picked)
	done     time.Duration // answer drained, or the error
}

// completion is o as Plan.Watch sees it, with the timings record files.
func (o *outcome) completion() Completion {
	c := Completion{Type: o.typ, Measured: o.measured, Aborted: o.aborted}
	if !o.aborted {
		c.Class, c.RetryAfter = o.class, o.rl.Said&record.SaidRetryAfter != 0
		c.Latency, c.Service, c.Lateness = o.done-o.intended, o.done-o.actual, o.actual-o.intended
	}
	return c
}

// interval accumulates one second of outcomes for the timeline; lat holds
// answered sends only, as Stats.Latency does.
type interval struct {
	lat, late               *hdr.Histogram
	completed, ok, errs, r4 int64
}

func newInterval() *interval { return &interval{lat: record.NewHist(), late: record.NewHist()} }

func (iv *interval) reset() {
	iv.lat.Reset()
	iv.late.Reset()
	iv.completed, iv.ok, iv.errs, iv.r4 = 0, 0, 0, 0
}

func (iv *interval) merge(o *interval) {
	iv.lat.Merge(o.lat)
	iv.late.Merge(o.late)
	iv.completed += o.completed
	iv.ok += o.ok
	iv.errs += o.errs
	iv.r4 += o.r4
}

// recorder is one shard of the measurements. hdrhistogram-go is not
// goroutine-safe, so each worker records into its own shard; workers never
// share one unless there are more workers than shards (see Plan.Recorders).
// The mutex is otherwise contended only by the once-a-second tick, which just
// swaps the interval pointer, and by the final merge.
type recorder struct {
	mu       sync.Mutex
	types    map[string]*record.Stats
	dispatch *hdr.Histogram // picked - intended: the generator's own delay
	iv       *interval
	// The latest measured send a worker took, and the latest answer of one:
	// where the run's elapsed window ends (see Result.Window).
	lastPicked, lastDone time.Duration
}

func newRecorder() *recorder {
	return &recorder{types: make(map[string]*record.Stats), dispatch: record.NewHist(), iv: newInterval()}
}

// record files one outcome. Called by a worker after each send.
func (r *recorder) record(o *outcome) {
	lat := o.done - o.intended
	late := o.actual - o.intended
	r.mu.Lock()
	if o.measured {
		st := r.types[o.typ]
		if st == nil {
			st = record.NewStats()
			r.types[o.typ] = st
		}
		if o.aborted {
			st.Counts.Aborted++
		} else {
			st.Counts.Completed++
			st.Tally.Add(o.class, o.rl.Said&record.SaidRetryAfter != 0)
			st.RateLimits.Add(o.class, o.rl)
			st.Observe(o.class, lat, o.done-o.actual, late)
			record.RecordDuration(r.dispatch, o.picked-o.intended)
			r.lastPicked = max(r.lastPicked, o.picked)
			r.lastDone = max(r.lastDone, o.done)
		}
	}
	if !o.aborted {
		iv := r.iv
		iv.completed++
		if o.class.OK() {
			iv.ok++
		} else {
			iv.errs++
		}
		if o.class == record.Class429 {
			iv.r4++
		}
		if o.class.Answered() {
			record.RecordDuration(iv.lat, lat)
		}
		record.RecordDuration(iv.late, late)
	}
	r.mu.Unlock()
}
