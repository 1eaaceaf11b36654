package record

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// DefaultCheckpointEvery is how often a Recorder checkpoints by default: a
// SIGKILLed generator loses at most this much of its record.
const DefaultCheckpointEvery = 5 * time.Second

// RecorderOptions configures a Recorder. Every field may be zero.
type RecorderOptions struct {
	// Shards is the number of histogram shards, at most the run's
	// MaxInflight. 0 = min(2*GOMAXPROCS, 32). A worker records into shard
	// (worker index mod Shards): with at least as many shards as workers
	// each has its own; more shards cost ~0.6 MB per activity type each.
	// They are made by NewRecorder, so that no run's clock waits for them.
	Shards int
	// Progress, when set, is called once a second (and once at the end)
	// from the Recorder's ticker goroutine; it must return quickly.
	Progress func(Progress)
	// Checkpoint, when set, is called from the ticker goroutine every
	// CheckpointEvery with a consistent snapshot of the run so far: what
	// Result would be had the run been interrupted then, less the sends
	// still in flight, marked Partial with Reason ReasonCheckpoint. The
	// Result is the callee's to keep. It is not called for the end of the
	// run. While it runs the once-a-second tick waits (never a send), so it
	// should return within a second or so. Written with RecordFile, it
	// leaves a readable record of a generator killed with SIGKILL.
	Checkpoint func(*Result)
	// CheckpointEvery is the checkpoint period: checkpoints are taken at
	// the first tick (whole second) at or after each multiple of it.
	// 0 = DefaultCheckpointEvery.
	CheckpointEvery time.Duration
}

// Recorder is the collector that composes a run's Result: HDR histograms
// and tallies per activity type, a timeline tick each second, and
// checkpoints. It implements flood.Collector; one Recorder serves one run.
type Recorder struct {
	o      RecorderOptions
	s      Schedule
	shards []*shard

	// The offers' counters, written by the dispatcher under mu, so the
	// ticker reads a consistent set (Offered = Sent + Dropped in every
	// type) by taking mu once.
	mu      sync.Mutex
	types   map[string]*Counts
	warm    Counts
	tot     Counts        // all types, warm-up included: the ticker's totals
	lastDue time.Duration // intended time of the latest measured send offered

	t      ticker
	stop   Stop
	result *Result
}

// NewRecorder returns a Recorder for one run.
func NewRecorder(o RecorderOptions) *Recorder {
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = DefaultCheckpointEvery
	}
	if o.Shards <= 0 {
		o.Shards = min(2*runtime.GOMAXPROCS(0), 32)
	}
	r := &Recorder{o: o, types: make(map[string]*Counts), shards: make([]*shard, o.Shards)}
	for i := range r.shards {
		r.shards[i] = newShard()
	}
	r.t.init(o.Shards)
	return r
}

// Begin keeps as many shards as the run has slots and starts the ticker.
func (r *Recorder) Begin(s Schedule) {
	r.s = s
	r.shards = r.shards[:max(1, min(len(r.shards), s.MaxInflight))]
	r.t.start(r)
}

// Offered counts one offered send. The dispatchers call it; one lock per
// send, contended only by the ticker's reads once a second and, where
// several share the schedule (Dispatcher.Threads), by another dispatcher.
func (r *Recorder) Offered(o Offer) {
	r.mu.Lock()
	c := &r.warm
	if o.Measured {
		c = r.counts(o.Type)
		r.lastDue = max(r.lastDue, o.Due) // dispatchers sharing a schedule may offer slightly out of order
	}
	c.Offered++
	r.tot.Offered++
	if o.Starved {
		c.Starved++
		r.tot.Starved++
	}
	if o.Dropped {
		c.Dropped++
		r.tot.Dropped++
	} else {
		c.Sent++
		r.tot.Sent++
	}
	if o.Written {
		c.Written++
		r.tot.Written++
	}
	r.mu.Unlock()
}

func (r *Recorder) counts(t string) *Counts {
	c := r.types[t]
	if c == nil {
		c = &Counts{}
		r.types[t] = c
	}
	return c
}

// Answered files one finished send in worker's shard.
func (r *Recorder) Answered(worker int, d *Delivery) {
	r.shards[worker%len(r.shards)].record(d)
}

// Settled is nothing to the record: the answer was filed already.
func (r *Recorder) Settled(any, Outcome) {}

// End stops the ticker (after a last, partial tick) and composes the
// Result.
func (r *Recorder) End(st Stop) {
	r.stop = st
	r.t.finish()
	res := r.collect(st.End, st.WindowEnd)
	res.Partial, res.Reason, res.Err = st.Partial, st.Reason, st.Err
	res.Timeline = r.t.timeline
	r.result = res
}

// Result is the run's Result, nil before End.
func (r *Recorder) Result() *Result { return r.result }

// checkpoint is a consistent snapshot of the run at now, taken by the ticker
// while sends go on: the Result had the run been interrupted now, minus the
// sends still in flight (Sent counts them, Completed and Aborted do not yet).
func (r *Recorder) checkpoint(now time.Time) *Result {
	window := now.Sub(r.s.Start)
	if r.s.Duration > 0 {
		window = min(window, r.s.Duration)
	}
	res := r.collect(now, window)
	res.Partial, res.Reason = true, ReasonCheckpoint
	// The ticker keeps appending to its timeline; the snapshot keeps its own.
	res.Timeline = slices.Clone(r.t.timeline)
	return res
}

// collect merges the shards and the offers' counters into a Result ending
// at end, whose measured window ends at windowEnd. It is safe while the run
// goes on: each shard is merged under its own lock (a worker waits that
// long once, never a send), then the counters are copied under mu. In that
// order every answer seen in a shard was counted as sent before, so in every
// type Sent >= Completed + Aborted (the difference is in flight) and
// Offered = Sent + Dropped; after the run both are equalities.
func (r *Recorder) collect(end time.Time, windowEnd time.Duration) *Result {
	s := r.s
	res := &Result{
		Start: s.Start, End: end, Elapsed: end.Sub(s.Start),
		Overall: NewStats(), Types: make(map[string]*Stats), Dispatch: NewHist(),
		Rate: s.Rate, Duration: s.Duration, Warmup: s.Warmup, MaxSends: s.MaxSends, MaxInflight: s.MaxInflight, Timeout: s.Timeout,
		Dispatcher: s.Dispatcher,
	}
	stats := func(typ string) *Stats {
		st := res.Types[typ]
		if st == nil {
			st = NewStats()
			res.Types[typ] = st
		}
		return st
	}
	var lastPicked, lastDone time.Duration
	for _, sh := range r.shards {
		sh.mu.Lock()
		res.Dispatch.Merge(sh.dispatch)
		lastPicked, lastDone = max(lastPicked, sh.lastPicked), max(lastDone, sh.lastDone)
		for typ, st := range sh.types {
			// Completed and Aborted come from the shards, Offered, Sent,
			// Dropped and Starved from the offers: the sum is exact.
			stats(typ).Merge(st)
		}
		sh.mu.Unlock()
	}
	r.mu.Lock()
	res.WarmupCounts = r.warm
	lastDue := r.lastDue
	for typ, c := range r.types {
		stats(typ).Counts.Merge(*c)
	}
	r.mu.Unlock()
	for _, st := range res.Types {
		res.Overall.Merge(st)
	}
	warm := s.Warmup
	if res.Overall.Counts.Offered == 0 {
		lastDue = warm
	}
	res.Window = Window{
		FirstDue:    warm.Seconds(),
		LastDue:     max(warm, lastDue).Seconds(),
		LastSent:    max(warm, lastPicked).Seconds(),
		LastAnswer:  max(warm, lastDone).Seconds(),
		ScheduleEnd: max(warm, windowEnd).Seconds(),
	}
	res.Measured = max(0, max(windowEnd, lastDone)-warm)
	return res
}

// interval accumulates one second of answers for the timeline; lat holds
// answered sends only, as Stats.Latency does.
type interval struct {
	lat, late               *hdr.Histogram
	completed, ok, errs, r4 int64
}

func newInterval() *interval { return &interval{lat: NewHist(), late: NewHist()} }

func (iv *interval) reset() {
	// A quiet second (a replayed run's gap, a stalled SUT) has nothing to
	// clear, and clearing a histogram walks all its buckets.
	for _, h := range [...]*hdr.Histogram{iv.lat, iv.late} {
		if h.TotalCount() != 0 {
			h.Reset()
		}
	}
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

// shard is one worker's share of the measurements. hdrhistogram-go is not
// goroutine-safe, so each worker records into its own shard; workers never
// share one unless there are more workers than shards. The mutex is
// otherwise contended only by the once-a-second tick, which just swaps the
// interval pointer, and by collect.
type shard struct {
	mu       sync.Mutex
	types    map[string]*Stats
	dispatch *hdr.Histogram // picked - intended: the generator's own delay
	iv       *interval
	answered int64 // sends finished, warm-up and aborted included: the ticker's in-flight count
	// The latest measured send a worker took, and the latest answer of one:
	// where the run's elapsed window ends (see Result.Window).
	lastPicked, lastDone time.Duration
}

func newShard() *shard {
	return &shard{types: make(map[string]*Stats), dispatch: NewHist(), iv: newInterval()}
}

// record files one finished send.
func (sh *shard) record(d *Delivery) {
	lat, late := d.Latency(), d.Lateness()
	sh.mu.Lock()
	sh.answered++
	if d.Measured {
		st := sh.types[d.Type]
		if st == nil {
			st = NewStats()
			sh.types[d.Type] = st
		}
		if d.Aborted {
			st.Counts.Aborted++
		} else {
			st.Counts.Completed++
			st.Tally.Add(d.Class, d.RetryAfter())
			st.RateLimits.Add(d.Class, d.RateLimit)
			st.Observe(d.Class, lat, d.Service(), late)
			if !d.Class.Answered() {
				st.Unanswered.Add(cmp.Or(d.NoAnswer, d.Class.String()), 1)
			}
			RecordDuration(sh.dispatch, d.Picked-d.Intended)
			sh.lastPicked = max(sh.lastPicked, d.Picked)
			sh.lastDone = max(sh.lastDone, d.Done)
		}
	}
	if !d.Aborted {
		iv := sh.iv
		iv.completed++
		if d.Class.OK() {
			iv.ok++
		} else {
			iv.errs++
		}
		if d.Class == Class429 {
			iv.r4++
		}
		if d.Class.Answered() {
			RecordDuration(iv.lat, lat)
		}
		RecordDuration(iv.late, late)
	}
	sh.mu.Unlock()
}
