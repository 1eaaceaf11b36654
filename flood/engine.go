package flood

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// Plan describes one open-loop run. The run always ends by itself: at the
// end of Duration, after MaxSends sends, or when its context is cancelled
// (then the result is partial); sends in flight at the end are bounded by
// Timeout.
type Plan struct {
	// Pacer is the absolute schedule (required).
	Pacer Pacer
	// Source produces the signed requests (required).
	Source Source
	// Transport sends them (required). Use one with a keep-alive pool sized to
	// MaxInflight, such as NewClientTransport's. It is used through RoundTrip,
	// so no redirect is followed and no cookie is kept, as a federating server
	// does; a send's service time starts at the GotConn it reports to the
	// request's httptrace.ClientTrace. h1's transport (the fast client)
	// also takes writes from the dispatcher: a send that finds a
	// connection resting and leaves as signed (AsSigned) is written by the
	// dispatcher at its intended time, its service time starting then. On
	// Linux, over plain HTTP, the dispatcher reads its answer too, once the
	// whole of it has arrived and is plainly framed; a worker reads every
	// other answer.
	Transport http.RoundTripper
	// Limits bound the run.
	Limits
	// Priority is the dispatcher's thread's OS priority while it runs the
	// schedule; "" is DefaultPriority. It applies up to 10 000/s with the
	// precise Sleep (nil), where the dispatcher has a thread of its own;
	// the collector's Schedule says what the thread ran with.
	Priority Priority
	// Sleep sleeps the last stretch (under 2 ms) before a send. nil = a
	// precise sleep (nanosleep on Linux, which wakes ~0.1 ms late where a
	// runtime timer wakes up to 1 ms late). Tests under testing/synctest must
	// set time.Sleep: the fake clock does not advance in a system call.
	Sleep func(time.Duration)
}

// Limits bound a run in time, sends and concurrency.
type Limits struct {
	// Duration is the schedule length, warm-up included: a send whose
	// intended offset is >= Duration is not made. 0 = bounded by MaxSends only.
	Duration time.Duration
	// MaxSends bounds the number of sends offered, warm-up included.
	// 0 = bounded by Duration only. At least one of the two must be set.
	MaxSends int64
	// MaxInflight is the number of worker slots: a send due while all are
	// busy is dropped and counted, never delayed. 0 = DefaultMaxInflight.
	MaxInflight int
	// Timeout bounds each send, answer body included. 0 = DefaultTimeout.
	Timeout time.Duration
	// Warmup is the start of the schedule whose sends are made but not
	// measured (Offer.Measured false). Must be < Duration when Duration is
	// set.
	Warmup time.Duration
}

// starveSlack is how long a Source may keep the dispatcher past a send's
// intended time before that send counts as starved. A ready pipeline answers
// in well under a microsecond; this leaves room for scheduling noise.
const starveSlack = 100 * time.Microsecond

// maxTypes bounds the per-type breakdown; further types are folded into
// "Other" so a buggy Source cannot exhaust memory with histograms.
const maxTypes = 32

// Run executes the plan, feeding c: a dispatcher waits for each intended
// time and hands the send to a free worker slot (or drops it), workers send,
// and c hears of every offer, answer and settlement (see Collector). It
// returns an error only for an invalid plan (wrapping ErrInvalidPlan);
// everything that happens during the run, an interruption included, is
// what c heard, ending with End.
func Run(ctx context.Context, p Plan, c Collector) error {
	if c == nil {
		return fmt.Errorf("%w: no collector", ErrInvalidPlan)
	}
	if err := p.normalize(); err != nil {
		return err
	}
	e := newEngine(ctx, p, c)
	e.run()
	return nil
}

func (p *Plan) normalize() error {
	switch {
	case p.Pacer == nil:
		return fmt.Errorf("%w: no pacer", ErrInvalidPlan)
	case p.Source == nil:
		return fmt.Errorf("%w: no source", ErrInvalidPlan)
	case p.Transport == nil:
		return fmt.Errorf("%w: no transport", ErrInvalidPlan)
	case p.Duration < 0 || p.MaxSends < 0 || p.MaxInflight < 0 || p.Timeout < 0 || p.Warmup < 0:
		return fmt.Errorf("%w: negative duration, count or size", ErrInvalidPlan)
	case p.Duration == 0 && p.MaxSends == 0:
		return fmt.Errorf("%w: unbounded: set a duration or a maximum number of sends", ErrInvalidPlan)
	case p.Duration > 0 && p.Warmup >= p.Duration:
		return fmt.Errorf("%w: warm-up %v is not shorter than the duration %v", ErrInvalidPlan, p.Warmup, p.Duration)
	}
	prio, err := ParsePriority(string(p.Priority))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPlan, err)
	}
	p.Priority = prio
	if p.MaxInflight == 0 {
		p.MaxInflight = DefaultMaxInflight
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	return nil
}

// schedule is the plan as the collector is told it, starting at start.
func (p *Plan) schedule(start time.Time) record.Schedule {
	total := p.Duration
	if p.MaxSends > 0 {
		// Estimated for a Poisson pacer, exact for a constant one.
		bySends := time.Duration(float64(p.MaxSends) / p.Pacer.Rate() * 1e9)
		if total == 0 || bySends < total {
			total = bySends
		}
	}
	return record.Schedule{Start: start, Rate: p.Pacer.Rate(), Duration: p.Duration, Warmup: p.Warmup, MaxSends: p.MaxSends,
		MaxInflight: p.MaxInflight, Timeout: p.Timeout, Total: total}
}

// engine is one run: the dispatcher's state beside the crew of workers
// it hands sends to.
type engine struct {
	crew
	p     Plan
	sleep func(time.Duration)

	// Dispatcher-owned; read by others only after the dispatcher returned.
	kinds    kinds
	stopped  record.Stop
	realtime bool // the dispatcher's thread runs under a real-time policy
}

func newEngine(ctx context.Context, p Plan, c Collector) *engine {
	e := &engine{p: p, sleep: p.Sleep, kinds: kinds{}, crew: crew{
		ctx: ctx, c: c, transport: p.Transport, timeout: p.Timeout, jobs: make(chan job, p.MaxInflight),
		direct: newDirectWriter(p.Transport),
	}}
	if e.sleep == nil {
		e.sleep = preciseSleep
	}
	return e
}

func (e *engine) run() {
	rate := e.p.Pacer.Rate()
	switch {
	case e.p.Sleep != nil:
		// A test's Sleep runs on a fake clock that needs no thread.
		e.schedule(record.Dispatcher{})
	case rate <= preciseRateMax:
		e.scheduleOnOwnThread(e.p.Priority.realtimeAt(rate))
	default:
		thread := record.Dispatcher{Priority: string(e.p.Priority)}
		if e.p.Priority != PriorityNormal { // realtime or auto: no thread of its own to raise here
			thread.Refused = fmt.Sprintf("above %d/s the dispatcher shares its thread", preciseRateMax)
		}
		e.schedule(thread)
	}
	close(e.jobs)
	e.wg.Wait()
	e.stopped.End = time.Now()
	e.c.End(e.stopped)
}

// scheduleOnOwnThread runs the schedule on a goroutine of its own,
// locked to a thread that the kernel wakes on time (preciseThread),
// raised to a real-time policy when realtime, and waits for it. declined
// is why no real-time policy was asked for (PriorityAuto's), which the
// record gives where the thread then ran under the normal policy. Should
// the thread's settings not come back, that goroutine ends locked and the
// thread exits with it, never serving the caller's goroutine or another.
// A panic of the schedule (a Source's) is raised again on the caller's
// goroutine, after the thread is restored, and a runtime.Goexit (a test's
// t.Fatal in a Source) ends the caller's goroutine too, as it would have
// had the schedule run there.
func (e *engine) scheduleOnOwnThread(realtime bool, declined string) {
	type ending struct {
		returned bool
		panicked any
	}
	ended := make(chan ending, 1)
	go func() {
		var end ending
		defer func() {
			end.panicked = recover()
			ended <- end
		}()
		thread, restore := preciseThread(realtime)
		defer restore()
		thread.Priority = string(e.p.Priority)
		if thread.Refused == "" && thread.Policy == "other" {
			// A crowd started under another policy keeps it: auto's
			// reason would contradict the record's policy.
			thread.Refused = declined
		}
		e.schedule(thread)
		end.returned = true
	}()
	switch end := <-ended; {
	case end.panicked != nil:
		panic(end.panicked)
	case !end.returned:
		runtime.Goexit()
	}
}

// schedule starts the clock and dispatches the whole schedule, the
// collector told that its dispatcher's thread ran as thread says.
func (e *engine) schedule(thread record.Dispatcher) {
	if a, ok := e.p.Source.(DispatcherAware); ok {
		a.Dispatching(thread)
	}
	e.realtime = thread.RealTime()
	// The first request is taken before the clock starts: the schedule
	// begins when its first send is ready, so no Source (a jit one signing
	// in Next) is blamed for the send due at the very start.
	first, firstErr := e.p.Source.Next(e.ctx)
	e.start = time.Now()
	sched := e.p.schedule(e.start)
	sched.Dispatcher = thread
	e.c.Begin(sched)
	e.dispatch(first, firstErr)
}

// dispatch runs the schedule, starting with the first request (or error)
// taken before the clock started. It is the only goroutine that starts sends,
// so checking inflight and then incrementing it cannot overshoot MaxInflight.
func (e *engine) dispatch(first *Prepared, firstErr error) {
	ready, _ := e.p.Source.(NextReady)
	if ready != nil && e.realtime && e.p.Sleep == nil {
		// Only where the dispatcher's thread is real-time (see
		// answerLoop); and a test's Sleep runs on a fake clock, which the
		// loop's waits would not keep.
		e.loop = newAnswerLoop(&e.crew)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	done := e.ctx.Done()
	maxIn := int64(e.p.MaxInflight)
	for n := int64(0); ; n++ {
		off, ok := e.due(n)
		if !ok {
			break
		}
		if closed(done) {
			e.stop(record.ReasonInterrupted, nil)
			break
		}
		// Fetch ahead of the intended time, so the wait below absorbs the
		// Source's work; only what runs past the intended time is starvation.
		t0 := time.Since(e.start)
		prep, err := first, firstErr
		if n > 0 {
			if e.loop.busy() && !ready.NextReady() {
				e.loop.leaveAll(&e.crew) // Next may wait (see NextReady)
			}
			prep, err = e.p.Source.Next(e.ctx)
		}
		first = nil
		if err != nil {
			e.sourceFailed(err)
			break
		}
		now := time.Since(e.start)
		starved := n > 0 && now > off && now-max(t0, off) > starveSlack
		if now < off && !e.waitUntil(timer, off, done) {
			e.c.Settled(prep.Token, record.Outcome{})
			e.stop(record.ReasonInterrupted, nil)
			break
		}
		measured := off >= e.p.Warmup
		drop := e.inflight.Load() >= maxIn
		typ := e.kinds.key(string(prep.Type))
		offer := record.Offer{Type: typ, Due: off, Measured: measured, Starved: starved, Dropped: drop}
		if drop {
			e.c.Offered(offer)
			e.c.Settled(prep.Token, record.Outcome{Offer: offer})
			continue
		}
		j := job{prep: prep, typ: typ, intended: off, measured: measured, starved: starved}
		if e.direct != nil && leavesAsSigned(prep) {
			// First, so that nothing else the dispatcher does for the
			// send delays it.
			e.direct.write(&e.crew, &j)
			offer.Written = j.direct
		}
		e.c.Offered(offer)
		e.inflight.Add(1)
		if !e.loop.take(&e.crew, &j) {
			e.handOff(j)
		}
		if e.loop.busy() && time.Since(e.start) >= e.p.Pacer.Offset(n+1) {
			// Behind: no wait before the next send to read answers in.
			// After the write, so that reading never delays a due send
			// more than one batch does.
			e.loop.wait(&e.crew, 0)
		}
	}
	e.loop.finish(&e.crew)
	if first != nil { // taken but the schedule ended before it was due
		e.c.Settled(first.Token, record.Outcome{})
	}
}

// handOff hands j, counted in flight, to a worker. Workers grow to the
// peak of the sends in flight that the dispatcher's loop does not await,
// so the job queue never holds a send while a slot is counted free.
func (e *crew) handOff(j job) {
	if e.inflight.Load()-int64(e.loop.awaiting()) > int64(e.nworkers) {
		e.startWorker()
	}
	e.jobs <- j
}

// due is send n's intended offset, or false when the schedule ends before
// it (the window's end then set).
func (e *engine) due(n int64) (time.Duration, bool) {
	if e.p.MaxSends > 0 && n >= e.p.MaxSends {
		e.stopped.WindowEnd = e.p.Pacer.Offset(n)
		if e.p.Duration > 0 {
			e.stopped.WindowEnd = min(e.stopped.WindowEnd, e.p.Duration)
		}
		return 0, false
	}
	off := e.p.Pacer.Offset(n)
	if e.p.Duration > 0 && off >= e.p.Duration {
		e.stopped.WindowEnd = e.p.Duration
		return 0, false
	}
	return off, true
}

// sourceFailed ends the run for the Source's error.
func (e *engine) sourceFailed(err error) {
	switch {
	case e.ctx.Err() != nil:
		e.stop(record.ReasonInterrupted, nil)
	case errors.Is(err, io.EOF):
		e.stop(record.ReasonExhausted, nil)
	default:
		e.stop(record.ReasonError("source error", err), err)
	}
}

// closed reports whether done is closed, without waiting.
func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// preciseRateMax is the highest rate whose dispatcher sleeps on a thread
// of its own with no timer slack (preciseThread). Above it sends are under
// 100 µs apart, and the kernel's slack, which lets one wake-up serve two
// sends, is worth more than the tens of µs of lateness it costs: at
// 20 000/s against an in-process sink the precise thread dropped 12-16 %
// of the sends where the shared one dropped 8-10 % (BenchmarkEngine, old
// and new alternated); at 10 000/s and below both dropped alike.
const preciseRateMax = 10_000

// coarseMargin is how early the dispatcher's timer is set: runtime timers
// wake up to ~1 ms late when the process is otherwise idle (the netpoller
// sleeps in whole milliseconds), so the last stretch before a send is slept
// with Plan.Sleep (nanosleep on Linux: ~0.1 ms late, and no CPU spent).
const coarseMargin = 2 * time.Millisecond

// loopWaitMax bounds a wait of the dispatcher's answer loop, so that it
// sees the run's end within it.
const loopWaitMax = 10 * time.Millisecond

// waitUntil returns at offset off, or false as soon as done is closed
// (within coarseMargin in the last stretch).
func (e *engine) waitUntil(timer *time.Timer, off time.Duration, done <-chan struct{}) bool {
	for {
		d := off - time.Since(e.start)
		if d <= 0 {
			return true
		}
		if e.loop.busy() {
			// Answers are awaited: the wait is the loop's, as precise as
			// the sleep below, and the run's end is seen within loopWaitMax.
			if closed(done) {
				return false
			}
			e.loop.wait(&e.crew, min(d, loopWaitMax))
			continue
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

// kinds folds activity types into the breakdown keys: "Unknown" for none,
// and beyond maxTypes distinct types, "Other", so a buggy Source cannot
// make the collectors keep unbounded series. The dispatcher's alone.
type kinds map[string]struct{}

func (k kinds) key(t string) string {
	if t == "" {
		t = "Unknown"
	}
	if _, ok := k[t]; ok {
		return t
	}
	if len(k) >= maxTypes {
		t = "Other"
	}
	k[t] = struct{}{}
	return t
}

func (e *engine) stop(reason record.StopReason, err error) {
	e.stopped.Partial = true
	e.stopped.Reason = reason
	e.stopped.Err = err
	e.stopped.WindowEnd = time.Since(e.start)
}
