package flood

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood/record"
)

// ErrInvalidPlan is wrapped by every error about a Plan (or pacer, ladder)
// that cannot run; a CLI maps it to exit status 2.
var ErrInvalidPlan = errors.New("flood: invalid plan")

// Prepared is one request ready to go on the wire: already signed, so the
// engine only sends it. The engine reads it and never modifies it; URL and
// Header may be shared between many Prepared values (a Source typically
// parses each inbox URL once).
type Prepared struct {
	Type   record.ActivityKind // activity type, the per-type breakdown key
	Method string              // usually POST
	URL    *url.URL            // target inbox; shared, read-only
	Host   string              // Host header if it differs from URL.Host (signed as "host"); "" = URL.Host
	Header http.Header         // complete headers incl. Date, Digest, Signature; read-only
	Body   []byte              // the exact signed body; read-only (the transport may read it after the answer)

	// Follow is set on a Follow: what registering it with the crowd's
	// follow graph takes, once it was sent (Generator.Settled).
	Follow *FollowRegistration
	// Diverted marks a Create sent in place of a drawn Follow (Draft.Diverted).
	Diverted bool
	// Outbox is set on a Create: the sender's outbox lists its note once
	// it was sent (OutboxFeed).
	Outbox *actors.SentNote
	// Knock is set when a Knocker signed the request (--signature): its
	// scheme and signer, so that the sender can knock twice (see Knocker).
	Knock *Knock

	// Vocab is what the run keeps of it once answered 2xx, for later
	// Undos, Updates and Deletes, and the change it made (Generator.Settled).
	Vocab *VocabSent
	// Forgery is set on a forged request (tamper.go): its kind and
	// activity, for the record's security section (Forgeries).
	Forgery *ForgeryMark
}

// Delivery is what became of one request the engine took from its Source
// (Plan.Settled).
type Delivery struct {
	// Sent: handed to the transport. False for a send dropped (no free
	// slot) and for one the run ended before it was due.
	Sent bool
	// Aborted: sent, but the run was interrupted before the answer; the
	// target may or may not have it.
	Aborted bool
	// Class is the answer's status class (or ClassTimeout, ClassConnError)
	// of a send neither unsent nor aborted.
	Class record.Class
	// Status is the answer's status code; 0 without an answer.
	Status int
}

// Source produces the prepared requests of a run. Next is called from a
// single goroutine (the dispatcher), ahead of each send's intended time; if it
// returns after that time, the send is late and counted as starved (the
// generator's bottleneck, not the SUT's). Next returns io.EOF when it has no
// more requests (the run ends, marked partial) and ctx's error when ctx is
// done.
type Source interface {
	Next(ctx context.Context) (*Prepared, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context) (*Prepared, error)

// Next calls f.
func (f SourceFunc) Next(ctx context.Context) (*Prepared, error) { return f(ctx) }

// Plan describes one open-loop run. The run always ends by itself: at the
// end of Duration, after MaxSends sends, or when its context is cancelled
// (then the result is partial); sends in flight at the end are bounded by
// Timeout.
type Plan struct {
	// Pacer is the absolute schedule (required).
	Pacer Pacer
	// Duration is the schedule length, warm-up included: a send whose
	// intended offset is >= Duration is not made. 0 = bounded by MaxSends only.
	Duration time.Duration
	// MaxSends bounds the number of sends offered, warm-up included.
	// 0 = bounded by Duration only. At least one of the two must be set.
	MaxSends int64
	// MaxInflight is the number of worker slots: a send due while all are
	// busy is dropped and counted, never delayed. 0 = DefaultMaxInflight.
	MaxInflight int
	// Source produces the signed requests (required).
	Source Source
	// Transport sends them (required). Use one with a keep-alive pool sized to
	// MaxInflight, such as NewTransport. It is used through RoundTrip, so no
	// redirect is followed and no cookie is kept, as a federating server does.
	Transport http.RoundTripper
	// Timeout bounds each send, answer body included. 0 = DefaultTimeout.
	Timeout time.Duration
	// Warmup is the start of the schedule whose sends are made but not
	// measured (they appear in the timeline only). Must be < Duration when
	// Duration is set.
	Warmup time.Duration
	// Progress, when set, is called once a second (and once at the end) from
	// the engine's ticker goroutine; it must return quickly.
	Progress func(record.Progress)
	// Sleep sleeps the last stretch (under 2 ms) before a send. nil = a
	// precise sleep (nanosleep on Linux, which wakes ~0.1 ms late where a
	// runtime timer wakes up to 1 ms late). Tests under testing/synctest must
	// set time.Sleep: the fake clock does not advance in a system call.
	Sleep func(time.Duration)
	// Recorders is the number of histogram shards. 0 = min(MaxInflight,
	// 2*GOMAXPROCS, 32). Workers use shard (worker index mod Recorders): with
	// at least as many shards as workers each worker has its own; more shards
	// cost ~0.6 MB per activity type each.
	Recorders int
	// Checkpoint, when set, is called from the ticker goroutine every
	// CheckpointEvery with a consistent snapshot of the run so far: what Run
	// would return had the run been interrupted then, less the sends still
	// in flight, marked Partial with Reason ReasonCheckpoint. The Result is
	// the callee's to keep. It is not called for the end of the run (Run
	// returns that). While it runs the once-a-second tick waits (never a
	// send), so it should return within a second or so. Written with
	// RecordFile, it leaves a readable record of a generator killed with
	// SIGKILL.
	Checkpoint func(*record.Result)
	// Settled, when set, is told what became of every request taken from
	// Source, exactly once and before Run returns: answered (its class),
	// aborted, dropped, or left unsent when the run ended. It runs on a
	// worker or the dispatcher, so it must not block. It is how what a run
	// SENT, not what its source drafted, reaches the crowd's state (see
	// Generator.Settled).
	Settled func(*Prepared, Delivery)
	// CheckpointEvery is the checkpoint period: checkpoints are taken at
	// the first tick (whole second) at or after each multiple of it.
	// 0 = DefaultCheckpointEvery.
	CheckpointEvery time.Duration
	// Watch, when set, sees every send as it is offered and as it
	// completes (live metrics); it runs on the send path (see Watch).
	Watch Watch
}

// Defaults for a Plan's zero fields.
const (
	DefaultMaxInflight = 1024
	DefaultTimeout     = 10 * time.Second
	// DefaultCheckpointEvery is how often Plan.Checkpoint is called: a
	// SIGKILLed generator loses at most this much of its record.
	DefaultCheckpointEvery = 5 * time.Second
)

// starveSlack is how long a Source may keep the dispatcher past a send's
// intended time before that send counts as starved. A ready pipeline answers
// in well under a microsecond; this leaves room for scheduling noise.
const starveSlack = 100 * time.Microsecond

// maxTypes bounds the per-type breakdown; further types are folded into
// "Other" so a buggy Source cannot exhaust memory with histograms.
const maxTypes = 32

// Run executes the plan: a dispatcher waits for each intended time and hands
// the send to a free worker slot (or drops it), workers send and record, a
// ticker reports each second. It returns an error only for an invalid plan
// (wrapping ErrInvalidPlan); everything that happens during the run, an
// interruption included, is in the Result.
func Run(ctx context.Context, p Plan) (*record.Result, error) {
	if err := p.normalize(); err != nil {
		return nil, err
	}
	e := newEngine(ctx, p)
	e.run()
	return e.result(), nil
}

func (p *Plan) normalize() error {
	switch {
	case p.Pacer == nil:
		return fmt.Errorf("%w: no pacer", ErrInvalidPlan)
	case p.Source == nil:
		return fmt.Errorf("%w: no source", ErrInvalidPlan)
	case p.Transport == nil:
		return fmt.Errorf("%w: no transport", ErrInvalidPlan)
	case p.Duration < 0 || p.MaxSends < 0 || p.MaxInflight < 0 || p.Timeout < 0 || p.Warmup < 0 || p.Recorders < 0 || p.CheckpointEvery < 0:
		return fmt.Errorf("%w: negative duration, count or size", ErrInvalidPlan)
	case p.Duration == 0 && p.MaxSends == 0:
		return fmt.Errorf("%w: unbounded: set a duration or a maximum number of sends", ErrInvalidPlan)
	case p.Duration > 0 && p.Warmup >= p.Duration:
		return fmt.Errorf("%w: warm-up %v is not shorter than the duration %v", ErrInvalidPlan, p.Warmup, p.Duration)
	}
	if p.MaxInflight == 0 {
		p.MaxInflight = DefaultMaxInflight
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.Recorders == 0 {
		p.Recorders = min(p.MaxInflight, 2*runtime.GOMAXPROCS(0), 32)
	}
	if p.CheckpointEvery == 0 {
		p.CheckpointEvery = DefaultCheckpointEvery
	}
	p.Recorders = min(p.Recorders, p.MaxInflight)
	return nil
}

// job is one send handed from the dispatcher to a worker.
type job struct {
	prep     *Prepared
	typ      string
	intended time.Duration
	measured bool
}

type engine struct {
	p     Plan
	ctx   context.Context
	sleep func(time.Duration)
	start time.Time
	total time.Duration // schedule length for progress/ETA

	jobs     chan job
	inflight atomic.Int64
	wg       sync.WaitGroup
	recs     []*recorder

	// Dispatcher-owned; read by others only after the dispatcher returned.
	nworkers  int
	windowEnd time.Duration
	partial   bool
	reason    record.StopReason
	err       error

	// The dispatcher's counters: it alone writes them, under mu, so the
	// ticker reads a consistent set (Offered = Sent + Dropped in every
	// type) by taking mu once; the dispatcher reads them without it.
	mu    sync.Mutex
	types map[string]*record.Counts
	warm  record.Counts
	tot   record.Counts // all types, warm-up included: the ticker's totals

	lastDue time.Duration // intended time of the latest measured send offered; under mu

	// Ticker-owned.
	timeline               []record.Tick
	spare                  []*interval
	agg                    *interval
	last                   record.Progress
	prevOffered, prevSent  int64
	prevDropped, prevStarv int64
	end                    time.Time
	final                  bool // the run has ended: the next snapshot is the last
}

func newEngine(ctx context.Context, p Plan) *engine {
	e := &engine{
		p:     p,
		ctx:   ctx,
		jobs:  make(chan job, p.MaxInflight),
		types: make(map[string]*record.Counts),
		agg:   newInterval(),
		sleep: p.Sleep,
	}
	if e.sleep == nil {
		e.sleep = preciseSleep
	}
	e.recs = make([]*recorder, p.Recorders)
	e.spare = make([]*interval, p.Recorders)
	for i := range e.recs {
		e.recs[i] = newRecorder()
		e.spare[i] = newInterval()
	}
	e.total = p.Duration
	if p.MaxSends > 0 {
		// Estimated for a Poisson pacer, exact for a constant one; the pacer
		// itself is the dispatcher's alone.
		bySends := time.Duration(float64(p.MaxSends) / p.Pacer.Rate() * 1e9)
		if e.total == 0 || bySends < e.total {
			e.total = bySends
		}
	}
	return e
}

func (e *engine) run() {
	// The first request is taken before the clock starts: the schedule
	// begins when its first send is ready, so no Source (a jit one signing
	// in Next) is blamed for the send due at the very start.
	first, firstErr := e.p.Source.Next(e.ctx)
	e.start = time.Now()
	stop := make(chan struct{})
	tickDone := make(chan struct{})
	go func() {
		defer close(tickDone)
		e.ticker(stop)
	}()
	e.dispatch(first, firstErr)
	close(e.jobs)
	e.wg.Wait()
	e.end = time.Now()
	close(stop)
	<-tickDone
}

// dispatch runs the schedule, starting with the first request (or error)
// taken before the clock started. It is the only goroutine that starts sends,
// so checking inflight and then incrementing it cannot overshoot MaxInflight.
func (e *engine) dispatch(first *Prepared, firstErr error) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	done := e.ctx.Done()
	maxIn := int64(e.p.MaxInflight)
	ahead, aheadErr := first, firstErr
	defer func() {
		if ahead != nil { // taken but the schedule ended before it was due
			e.settle(ahead, Delivery{})
		}
	}()
	for n := int64(0); ; n++ {
		if e.p.MaxSends > 0 && n >= e.p.MaxSends {
			e.windowEnd = e.p.Pacer.Offset(n)
			if e.p.Duration > 0 {
				e.windowEnd = min(e.windowEnd, e.p.Duration)
			}
			return
		}
		off := e.p.Pacer.Offset(n)
		if e.p.Duration > 0 && off >= e.p.Duration {
			e.windowEnd = e.p.Duration
			return
		}
		select {
		case <-done:
			e.stop(record.ReasonInterrupted, nil)
			return
		default:
		}
		// Fetch ahead of the intended time, so the wait below absorbs the
		// Source's work; only what runs past the intended time is starvation.
		t0 := time.Since(e.start)
		var prep *Prepared
		var err error
		if n == 0 {
			prep, err, ahead, aheadErr = ahead, aheadErr, nil, nil
		} else {
			prep, err = e.p.Source.Next(e.ctx)
		}
		if err != nil {
			switch {
			case e.ctx.Err() != nil:
				e.stop(record.ReasonInterrupted, nil)
			case errors.Is(err, io.EOF):
				e.stop(record.ReasonExhausted, nil)
			default:
				e.stop(record.ReasonError("source error", err), err)
			}
			return
		}
		now := time.Since(e.start)
		starved := n > 0 && now > off && now-max(t0, off) > starveSlack
		if now < off && !e.waitUntil(timer, off, done) {
			e.settle(prep, Delivery{})
			e.stop(record.ReasonInterrupted, nil)
			return
		}
		measured := off >= e.p.Warmup
		drop := e.inflight.Load() >= maxIn
		// One lock per send, uncontended but for the ticker's reads once a
		// second, makes the counters one consistent set for progress and
		// checkpoints; it costs what the atomic adds of the totals did.
		e.mu.Lock()
		typ, c := e.counts(string(prep.Type))
		if !measured {
			c = &e.warm
		}
		c.Offered++
		e.tot.Offered++
		if measured {
			e.lastDue = off
		}
		if starved {
			c.Starved++
			e.tot.Starved++
		}
		if drop {
			c.Dropped++
			e.tot.Dropped++
		} else {
			c.Sent++
			e.tot.Sent++
		}
		e.mu.Unlock()
		if e.p.Watch != nil {
			e.p.Watch.Offered(Offer{Type: typ, Measured: measured, Starved: starved, Dropped: drop})
		}
		if drop {
			e.settle(prep, Delivery{})
			continue
		}
		in := e.inflight.Add(1)
		if in > int64(e.nworkers) {
			// Workers grow to the peak concurrency, so the job queue never
			// holds a send while a slot is counted free.
			e.startWorker()
		}
		e.jobs <- job{prep: prep, typ: typ, intended: off, measured: measured}
	}
}

// coarseMargin is how early the dispatcher's timer is set: runtime timers
// wake up to ~1 ms late when the process is otherwise idle (the netpoller
// sleeps in whole milliseconds), so the last stretch before a send is slept
// with Plan.Sleep (nanosleep on Linux: ~0.1 ms late, and no CPU spent).
const coarseMargin = 2 * time.Millisecond

// waitUntil returns at offset off, or false as soon as done is closed
// (within coarseMargin in the last stretch).
func (e *engine) waitUntil(timer *time.Timer, off time.Duration, done <-chan struct{}) bool {
	for {
		d := off - time.Since(e.start)
		if d <= 0 {
			return true
		}
		if d > coarseMargin {
			timer.Reset(d - coarseMargin)
			select {
			case <-timer.C:
			case <-done:
				timer.Stop()
				return false
			}
			continue
		}
		select {
		case <-done:
			return false
		default:
		}
		e.sleep(d)
	}
}

// counts returns the breakdown key for activity type t and its counters,
// creating them; beyond maxTypes distinct types, new ones are folded into
// "Other". The dispatcher calls it holding e.mu.
func (e *engine) counts(t string) (string, *record.Counts) {
	if t == "" {
		t = "Unknown"
	}
	if c, ok := e.types[t]; ok {
		return t, c
	}
	if len(e.types) >= maxTypes {
		t = "Other"
		if c, ok := e.types[t]; ok {
			return t, c
		}
	}
	c := &record.Counts{}
	e.types[t] = c
	return t, c
}

// settle tells Plan.Settled what became of prep.
func (e *engine) settle(prep *Prepared, d Delivery) {
	if e.p.Settled != nil {
		e.p.Settled(prep, d)
	}
}

func (e *engine) stop(reason record.StopReason, err error) {
	e.partial = true
	e.reason = reason
	e.err = err
	e.windowEnd = time.Since(e.start)
}

// ticker snapshots the interval measurements once a second, aligned to the
// start, until stop is closed; then it records the last (partial) second.
func (e *engine) ticker(stop <-chan struct{}) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	nextCheckpoint := e.p.CheckpointEvery
	for k := 1; ; k++ {
		select {
		case <-t.C:
			e.snapshot(k, time.Second, time.Duration(k)*time.Second)
			if e.p.Checkpoint != nil && time.Duration(k)*time.Second >= nextCheckpoint {
				e.p.Checkpoint(e.checkpoint(time.Now()))
				for nextCheckpoint <= time.Duration(k)*time.Second {
					nextCheckpoint += e.p.CheckpointEvery
				}
			}
			t.Reset(time.Until(e.start.Add(time.Duration(k+1) * time.Second)))
		case <-stop:
			span := e.end.Sub(e.start) - time.Duration(k-1)*time.Second
			e.final = true
			if span > 0 {
				e.snapshot(k, span, e.end.Sub(e.start))
			}
			return
		}
	}
}

func (e *engine) snapshot(k int, span, elapsed time.Duration) {
	for i, r := range e.recs {
		r.mu.Lock()
		r.iv, e.spare[i] = e.spare[i], r.iv
		r.mu.Unlock()
	}
	agg := e.agg
	agg.reset()
	for _, iv := range e.spare {
		agg.merge(iv)
		iv.reset()
	}
	e.mu.Lock()
	tot := e.tot
	e.mu.Unlock()
	offered, sent, dropped, starved := tot.Offered, tot.Sent, tot.Dropped, tot.Starved
	tk := record.Tick{
		T:           k,
		Span:        span.Seconds(),
		Warmup:      time.Duration(k)*time.Second <= e.p.Warmup,
		Offered:     offered - e.prevOffered,
		Sent:        sent - e.prevSent,
		Dropped:     dropped - e.prevDropped,
		Starved:     starved - e.prevStarv,
		Completed:   agg.completed,
		OK:          agg.ok,
		Errors:      agg.errs,
		Status429:   agg.r4,
		Inflight:    e.inflight.Load(),
		LatencyP50:  agg.lat.ValueAtQuantile(50),
		LatencyP99:  agg.lat.ValueAtQuantile(99),
		LatencyMax:  agg.lat.Max(),
		LatenessP99: agg.late.ValueAtQuantile(99),
		LatenessP50: agg.late.ValueAtQuantile(50),
	}
	if agg.lat.TotalCount() == 0 {
		tk.LatencyMax = 0
	}
	e.prevOffered, e.prevSent, e.prevDropped, e.prevStarv = offered, sent, dropped, starved
	e.timeline = append(e.timeline, tk)

	pr := &e.last
	pr.Elapsed, pr.Total, pr.Warmup, pr.Tick, pr.Final = elapsed, e.total, elapsed < e.p.Warmup, tk, e.final
	pr.Offered, pr.Sent, pr.Dropped, pr.Starved = offered, sent, dropped, starved
	pr.Completed += tk.Completed
	pr.OK += tk.OK
	pr.Errors += tk.Errors
	pr.Status429 += tk.Status429
	pr.Inflight = tk.Inflight
	if e.p.Progress != nil {
		e.p.Progress(*pr)
	}
}

// result is the run's final Result; called after every goroutine has
// finished.
func (e *engine) result() *record.Result {
	r := e.collect(e.end, e.windowEnd)
	r.Partial, r.Reason, r.Err = e.partial, e.reason, e.err
	r.Timeline = e.timeline
	return r
}
