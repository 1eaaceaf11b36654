package flood

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
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
	// other answer. Above 5 000/s (10 000/s with PriorityRealtime, which
	// keeps a thread of its own to raise up to there), with a Source that
	// never waits (AlwaysReady), one dispatcher a core shares the schedule,
	// each on a thread of its own with the connections it wrote on
	// (h1's lanes) and its own epoll, as the bench's open-loop reference
	// does; the collector's Schedule says how many (Dispatcher.Threads).
	Transport http.RoundTripper
	// Limits bound the run.
	Limits
	// Priority is the dispatcher's thread's OS priority while it runs the
	// schedule; "" is DefaultPriority. It applies up to 10 000/s with the
	// precise Sleep (nil), where the dispatcher has a thread of its own
	// (not where dispatchers share the schedule: see Transport); the
	// collector's Schedule says what the thread ran with.
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
	// A slot is busy until its answer is read; a quiet dispatcher (on
	// Linux, where the kernel stamps arrivals) reads an answer after its
	// next send, so where several share the schedule one may find a slot
	// still held by an answer come to another's.
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
// what c heard, ending with End. Where dispatchers share the schedule
// (above 5 000/s, a Source that never waits, plain HTTP: see Plan's
// Transport), the run adds a P to the process's GOMAXPROCS for each and
// takes them away when they end (see spareProcs), unless the setting was
// changed meanwhile: runs of one process should not overlap.
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

// engine is one run: the dispatchers' shared schedule beside the crew of
// workers they hand sends to.
type engine struct {
	crew
	p     Plan
	sleep func(time.Duration)
	feed  feed

	realtime bool // the dispatcher's thread runs under a real-time policy
}

// feed is the schedule as the dispatchers take it, one send at a time
// (take): the next send's index, the Source's requests, the breakdown's
// kinds, and how the schedule stopped. Its fields are mu's; after the
// dispatchers returned, Run's.
type feed struct {
	mu         sync.Mutex
	n          int64     // the next send to take
	first      *Prepared // the first request, taken before the clock started, until a dispatcher takes it
	firstErr   error
	firstTaken bool          // first and firstErr are the Source's (sharedDispatchers took them)
	lastDue    time.Duration // the intended offset of the last send taken
	ended      bool          // no send is taken any more
	kinds      kinds
	stopped    record.Stop
	// nextDue is send n's intended offset, which a dispatcher reads
	// without mu to know whether it is behind (see dispatch).
	nextDue atomic.Int64
}

func newEngine(ctx context.Context, p Plan, c Collector) *engine {
	e := &engine{p: p, sleep: p.Sleep, feed: feed{kinds: kinds{}}, crew: crew{
		ctx: ctx, c: c, transport: p.Transport, timeout: p.Timeout, jobs: make(chan job, p.MaxInflight),
	}}
	if newDirectWriter(p.Transport, 0) != nil {
		e.written = p.Transport.(directTransport)
	}
	e.crew.halt = func(err error) { e.stop(record.ReasonError("send", err), err) }
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
		// Realtime asked for outright keeps the thread of its own it raises.
		if rate > sharedRateMin && e.p.Priority != PriorityRealtime && e.scheduledShared(sharedRateMin) {
			break
		}
		e.scheduleOnOwnThread(e.p.Priority.realtimeAt(rate))
	default:
		if e.scheduledShared(preciseRateMax) {
			break
		}
		thread := record.Dispatcher{Priority: string(e.p.Priority)}
		if e.p.Priority != PriorityNormal { // realtime or auto: no thread of its own to raise here
			thread.Refused = fmt.Sprintf("above %d/s the dispatcher shares its thread", preciseRateMax)
		}
		e.schedule(thread)
	}
	close(e.jobs)
	e.wg.Wait()
	if f := e.feed.first; f != nil { // taken but the schedule ended before it was due
		e.c.Settled(f.Token, record.Outcome{})
	}
	e.feed.stopped.End = time.Now()
	e.c.End(e.feed.stopped)
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
	ended := make(chan ending, 1)
	go func() {
		end := ending{}
		defer end.send(ended)
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
	(<-ended).raise()
}

// ending is how a dispatcher's goroutine ended: returned, or panicked
// with what, or neither (runtime.Goexit).
type ending struct {
	returned bool
	panicked any
}

// send sends end, with the panic under way if any, on ended; deferred.
func (end *ending) send(ended chan<- ending) {
	end.panicked = recover()
	ended <- *end
}

// raise ends the caller's goroutine as end ended a dispatcher's: panic
// again, Goexit, or nothing.
func (end ending) raise() {
	switch {
	case end.panicked != nil:
		panic(end.panicked)
	case !end.returned:
		runtime.Goexit()
	}
}

// schedule starts the clock and dispatches the whole schedule, the
// collector told that its dispatcher's thread ran as thread says.
func (e *engine) schedule(thread record.Dispatcher) {
	e.begin(thread)
	e.dispatchers = 1
	d := e.newDispatcher(0)
	if _, ok := e.p.Source.(NextReady); ok && (e.realtime || thread.CPUs == 1) && e.p.Sleep == nil {
		// Only where the dispatcher's thread is real-time (see
		// answerLoop), or has one CPU, where it takes the CPU from any
		// thread of the flood's as it wakes for its sends whatever its
		// policy: reading the answers after each send (quiet) then never
		// holds a send up, where a worker's read would take the CPU from
		// it. One core at 1 900/s (the bench's one-core flood, scratch,
		// alternated three times): a send cost 398-419 against 454-641
		// µs, its p99 lateness 0.06-0.07 against 0.08-1 906 ms. A test's
		// Sleep runs on a fake clock, which the loop's waits would not
		// keep.
		d.loop = newAnswerLoop(&e.crew, 0)
	}
	d.filler, _ = e.p.Source.(WaitFiller)
	d.dispatch()
}

// begin tells the Source how the dispatcher's thread runs, takes the
// first request, starts the clock and tells the collector.
func (e *engine) begin(thread record.Dispatcher) {
	if a, ok := e.p.Source.(DispatcherAware); ok {
		a.Dispatching(thread)
	}
	e.realtime = thread.RealTime()
	// The first request is taken before the clock starts: the schedule
	// begins when its first send is ready, so no Source (a jit one signing
	// in Next) is blamed for the send due at the very start.
	if !e.feed.firstTaken {
		e.feed.first, e.feed.firstErr = e.p.Source.Next(e.ctx)
	}
	e.start = time.Now()
	sched := e.p.schedule(e.start)
	sched.Dispatcher = thread
	e.c.Begin(sched)
}

// sharedDispatchers are the dispatchers that share the schedule above
// sharedRateMin (above preciseRateMax where the real-time policy is asked
// for outright), one a core, each reading the answers to what it wrote
// (answerLoop), where the Source never waits (AlwaysReady), the
// transport takes the dispatchers' writes and the kernel their loops'
// waits; otherwise none (one dispatcher, reading no answers). One thread
// that paced every send and read every answer fell behind its schedule
// (its p99 latency 6-111 ms against the bench's open-loop reference's
// 13-15 ms at 20 000/s), where two, each on a core beside the sink's
// threads, hold it as the reference's loops do. Their loops wake for
// each answer above quietRateMax (wakeForEach), and are quiet up to it.
//
// Only over plain HTTP, which the loops read (a TLS connection's bytes
// are not the answer's): the first request, taken here (AlwaysReady: a
// Source that makes nothing in Next), says where the schedule goes.
func (e *engine) sharedDispatchers() []*dispatcher {
	n := runtime.GOMAXPROCS(0)
	if ar, ok := e.p.Source.(AlwaysReady); !ok || !ar.AlwaysReady() || e.written == nil || n < 2 {
		return nil
	}
	f := &e.feed
	f.first, f.firstErr = e.p.Source.Next(e.ctx)
	f.firstTaken = true
	if f.firstErr != nil || f.first.URL == nil || f.first.URL.Scheme != "http" {
		return nil
	}
	var ds []*dispatcher
	for k := range n {
		d := e.newDispatcher(k)
		if d.loop = newAnswerLoop(&e.crew, k); d.loop == nil {
			break
		}
		ds = append(ds, d)
	}
	if len(ds) < 2 {
		for _, d := range ds {
			d.loop.close(&e.crew)
		}
		return nil
	}
	if e.p.Pacer.Rate() > quietRateMax {
		for _, d := range ds {
			d.loop.wakeForEach()
		}
	}
	e.dispatchers = len(ds)
	return ds
}

// scheduledShared runs the schedule on the dispatchers that may share it
// (sharedDispatchers) and reports whether they did: false, and nothing
// run, where none may. A priority other than normal is not set on their
// threads, and the record says so, naming the rate above which they share
// it (above).
func (e *engine) scheduledShared(above int) bool {
	ds := e.sharedDispatchers()
	if len(ds) < 2 {
		return false
	}
	thread := record.Dispatcher{Priority: string(e.p.Priority), Threads: len(ds)}
	if e.p.Priority != PriorityNormal {
		thread.Refused = fmt.Sprintf("above %d/s the %d dispatchers keep the policy the crowd runs under", above, len(ds))
	}
	e.scheduleShared(thread, ds)
	return true
}

// scheduleShared starts the clock and runs the schedule on ds, each
// dispatcher on a thread of its own (locked, under the policy the crowd
// runs under: the normal one unless it was started under another), and
// waits for them. A panic or Goexit of one (a Source's) ends the feed,
// so that the others stop at their next take, and is raised again on the
// caller's goroutine once they have.
func (e *engine) scheduleShared(thread record.Dispatcher, ds []*dispatcher) {
	defer spareProcs(len(ds))()
	e.begin(thread)
	ended := make(chan ending, len(ds))
	for _, d := range ds {
		go func() {
			end := ending{}
			defer end.send(ended)
			defer func() {
				if !end.returned {
					e.stop(record.ReasonInterrupted, nil)
				}
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			d.dispatch()
			end.returned = true
		}()
	}
	worst := ending{returned: true}
	for range ds {
		// A panic is raised before a Goexit, and either before a return.
		if end := <-ended; worst.returned && !end.returned || worst.panicked == nil && end.panicked != nil {
			worst = end
		}
	}
	worst.raise()
}

// spareProcs adds n to GOMAXPROCS and returns what takes them away again:
// a P for each dispatcher that shares the schedule, which holds its own
// while it waits in a system call (the sleep to its next send, its loop's
// wait). With none spare, the workers, the GC and a dial's goroutine
// waited for the runtime's monitor to take a P back from a dispatcher,
// and the network poller was asked only as often: at 15 000/s against
// the bench's null sink a dial took 40-90 ms (median) at the flood's
// start, and every send due meanwhile dialled one more connection (1 100
// to 1 480 of them, where the bench's open-loop reference opened 36-153).
// Scratch trials against that sink, 3 s each, without and with, taking
// turns four times: 44.8-48.6 against 40.5-44.5 µs of the flood's CPU a
// send at 15 000/s, 35.6-37.8 against 32.5-35.1 at 22 000/s; the storm of
// dials went in two trials of four at 15 000/s (94 and 401 connections).
// The setting comes back only if it is still the one this set: a caller
// that changed it meanwhile meant its own.
func spareProcs(n int) (restore func()) {
	prev := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(prev + n)
	return func() {
		if runtime.GOMAXPROCS(0) == prev+n {
			runtime.GOMAXPROCS(prev)
		}
	}
}

// dispatcher is one thread of the schedule: it takes sends from the feed,
// waits for each one's intended time and makes it (writes it itself, or
// hands it to a worker), and reads the answers to what it wrote when it
// has a loop. All of it is its own goroutine's.
type dispatcher struct {
	e      *engine
	direct *directWriter // its writes; nil when the transport cannot take them
	loop   *answerLoop   // its reading of their answers; nil when it reads none
	filler WaitFiller    // the Source's work in its waits; nil when none (shared dispatchers)
	timer  *time.Timer
}

// newDispatcher is dispatcher k of e (k picks its loop's collector
// shard), with no loop yet.
func (e *engine) newDispatcher(k int) *dispatcher {
	d := &dispatcher{e: e, direct: newDirectWriter(e.p.Transport, k), timer: time.NewTimer(time.Hour)}
	d.timer.Stop()
	return d
}

// taken is a send as a dispatcher took it from the feed: its index, its
// intended offset, its request and the request's breakdown key, and
// whether the Source kept the dispatcher past its intended time.
type taken struct {
	n       int64
	off     time.Duration
	prep    *Prepared
	typ     string
	starved bool
}

// take takes the feed's next send for d, or reports that the schedule
// has ended (then the feed has ended, and says why). It takes the Source's
// request ahead of the send's intended time, so that the dispatcher's
// wait absorbs the Source's work; only what runs past the intended time
// is starvation.
func (e *engine) take(d *dispatcher) (taken, bool) {
	f := &e.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return taken{}, false
	}
	n := f.n
	off, ok := e.due(n)
	if !ok {
		f.ended = true
		return taken{}, false
	}
	if closed(e.ctx.Done()) {
		e.stopLocked(record.ReasonInterrupted, nil)
		return taken{}, false
	}
	t0 := time.Since(e.start)
	prep, err := f.first, f.firstErr
	if n > 0 {
		if ready, _ := e.p.Source.(NextReady); d.loop.busy() && !ready.NextReady() {
			d.loop.leaveAll(&e.crew) // Next may wait (see NextReady)
		}
		// Ended while Next runs: should it panic or Goexit, the lock is
		// released with the feed ended, and no other dispatcher calls
		// Next again.
		f.ended = true
		prep, err = e.p.Source.Next(e.ctx)
		f.ended = false
	}
	f.first, f.firstErr = nil, nil
	if err != nil {
		e.sourceFailed(err)
		return taken{}, false
	}
	f.n++
	f.lastDue = off
	f.nextDue.Store(int64(e.p.Pacer.Offset(n + 1)))
	now := time.Since(e.start)
	starved := n > 0 && now > off && now-max(t0, off) > starveSlack
	return taken{n: n, off: off, prep: prep, typ: f.kinds.key(string(prep.Type)), starved: starved}, true
}

// dispatch runs d's share of the schedule: the sends it takes, until the
// feed ends.
func (d *dispatcher) dispatch() {
	e := d.e
	done := e.ctx.Done()
	maxIn := int64(e.p.MaxInflight)
	for {
		s, ok := e.take(d)
		if !ok {
			break
		}
		if time.Since(e.start) < s.off && !d.waitUntil(s.off, done) {
			e.c.Settled(s.prep.Token, record.Outcome{})
			e.stop(record.ReasonInterrupted, nil)
			break
		}
		measured := s.off >= e.p.Warmup
		drop := !e.claim(maxIn)
		if drop && d.loop.busy() {
			// Answers read now may free a slot: a quiet loop has read
			// none since the last send, and a loud one none while it
			// worked. Only this dispatcher's: another's that share the
			// schedule are read on their own threads (MaxInflight says
			// what a quiet one's may hold).
			d.loop.wait(&e.crew, 0)
			drop = !e.claim(maxIn)
		}
		offer := record.Offer{Type: s.typ, Due: s.off, Measured: measured, Starved: s.starved, Dropped: drop}
		if drop {
			e.c.Offered(offer)
			e.c.Settled(s.prep.Token, record.Outcome{Offer: offer})
			continue
		}
		j := job{prep: s.prep, typ: s.typ, intended: s.off, measured: measured, starved: s.starved}
		if d.direct != nil && leavesAsSigned(s.prep) {
			// First, so that nothing else the dispatcher does for the
			// send delays it.
			d.direct.write(&e.crew, &j)
			offer.Written = j.direct
		}
		e.c.Offered(offer)
		if !d.loop.take(&e.crew, &j) {
			e.handOff(j)
		}
		if d.loop.busy() && (d.loop.quiet() || time.Since(e.start) >= time.Duration(e.feed.nextDue.Load())) {
			// Quiet, the answers that came since the last send are read
			// now, not in the wait before the next; behind, there is no
			// wait to read them in. After the write, so that reading
			// never delays a due send more than one batch does.
			d.loop.wait(&e.crew, 0)
		}
	}
	d.loop.finish(&e.crew)
}

// claim counts one more send in flight, unless MaxInflight (maxIn) are:
// then the send is dropped.
func (e *crew) claim(maxIn int64) bool {
	for {
		n := e.inflight.Load()
		if n >= maxIn {
			return false
		}
		if e.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// handOff hands j, counted in flight, to a worker. Workers grow to the
// peak of the sends in flight that no dispatcher's loop awaits, so the
// job queue never holds a send while a slot is counted free.
func (e *crew) handOff(j job) {
	if e.unawaited() > e.nworkers.Load() {
		e.grow()
	}
	e.jobs <- j
}

// unawaited is the sends in flight that no loop awaits: the workers'.
// The awaited are read first: a send claimed and taken by a loop between
// the two reads then counts as the workers', which errs on the side of a
// worker too many, never of a send queued with no worker free.
func (e *crew) unawaited() int64 {
	awaited := e.awaited.Load()
	return e.inflight.Load() - awaited
}

// due is send n's intended offset, or false when the schedule ends before
// it (the window's end then set). Under the feed's lock.
func (e *engine) due(n int64) (time.Duration, bool) {
	st := &e.feed.stopped
	if e.p.MaxSends > 0 && n >= e.p.MaxSends {
		st.WindowEnd = e.p.Pacer.Offset(n)
		if e.p.Duration > 0 {
			st.WindowEnd = min(st.WindowEnd, e.p.Duration)
		}
		return 0, false
	}
	off := e.p.Pacer.Offset(n)
	if e.p.Duration > 0 && off >= e.p.Duration {
		st.WindowEnd = e.p.Duration
		return 0, false
	}
	return off, true
}

// sourceFailed ends the run for the Source's error. Under the feed's lock.
func (e *engine) sourceFailed(err error) {
	switch {
	case e.ctx.Err() != nil:
		e.stopLocked(record.ReasonInterrupted, nil)
		return
	case errors.Is(err, io.EOF):
		e.stopLocked(record.ReasonExhausted, nil)
	default:
		e.stopLocked(record.ReasonError("source error", err), err)
	}
	// The window ends no sooner than a send another dispatcher took and
	// still makes (one that was interrupted makes none).
	f := &e.feed
	f.stopped.WindowEnd = max(f.stopped.WindowEnd, f.lastDue)
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
// of its own with no timer slack (preciseThread), where it runs the
// schedule alone (above sharedRateMin, where dispatchers that may share it
// do, only with the real-time policy asked for). Above it sends are under
// 100 µs apart, and the kernel's slack, which lets one wake-up serve two
// sends, is worth more than the tens of µs of lateness it costs: at
// 20 000/s against an in-process sink the precise thread dropped 12-16 %
// of the sends where the shared one dropped 8-10 % (BenchmarkEngine, old
// and new alternated); at 10 000/s and below both dropped alike.
const preciseRateMax = 10_000

// sharedRateMin is the rate above which dispatchers share a schedule that
// they may (sharedDispatchers) unless the real-time policy is asked for
// outright: above it PriorityAuto keeps the normal policy anyway, and one
// dispatcher whose answers workers read cost the flood more than the
// shared ones that read their own. Against the bench's null sink, three
// trials each, at 6 000-10 000/s on a 2-core Zen 3: 53-70 µs of the
// flood's CPU a send and p99 latency 0.29-0.90 ms with one, 42-48 µs and
// 0.16-0.79 ms shared, p99 lateness 0.03-0.21 ms against 0.07-0.10; at
// 4 000/s one cost no more.
const sharedRateMin = realtimeAutoMax

// quietRateMax is the highest rate at which the dispatchers that share a
// schedule keep their loops quiet (see answerLoop.quiet) rather than
// waking for each answer: above it their sends are too close for a wait
// between them to save a wake-up (answerLoop.wakeForEach has the
// figures). It was measured with two dispatchers, each sending up to
// 5 000/s here. With more, each one's sends are further apart at the same
// rate, and quiet might hold above it too; that is not measured, so the
// line is the rate's.
const quietRateMax = 10_000

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
func (d *dispatcher) waitUntil(off time.Duration, done <-chan struct{}) bool {
	e := d.e
	for {
		left := off - time.Since(e.start)
		if left <= 0 {
			return true
		}
		// Answers are awaited, and each must be read as it comes (a
		// loud loop's), or a deadline is near, and an answer whole
		// before it must be read before it.
		eachAnswer := d.loop.busy() && (!d.loop.quiet() || d.loop.deadlineBy(&e.crew, time.Since(e.start)+2*loopWaitMax))
		if closed(done) {
			return false
		}
		if !eachAnswer && d.filler != nil && d.filler.FillAhead(left) {
			// Not while each answer must be read as it comes, which the
			// Source's work would delay (a signature is far shorter than
			// the 20 ms a deadline is near for). A send it holds past
			// its time is late, as the kernel's holding the thread would
			// make it: lateness, not starvation, which counts the sends
			// no request was ready for.
			continue
		}
		if eachAnswer {
			// The wait is the loop's, as precise as the sleep below,
			// and the run's end is seen within loopWaitMax.
			d.loop.wait(&e.crew, min(left, loopWaitMax))
			continue
		}
		if left > coarseMargin {
			// Quiet with answers awaited, no longer than loopWaitMax
			// without looking: at a slow rate an answer is then read
			// (timed at its arrival) within loopWaitMax of it, and a send
			// past its deadline left to a worker as soon as a loud loop's
			// waits would; a fast rate's sends are closer than that.
			nap := left - coarseMargin
			look := d.loop.busy() && nap > loopWaitMax
			if look {
				nap = loopWaitMax
			}
			d.timer.Reset(nap)
			select {
			case <-d.timer.C:
			case <-done:
				d.timer.Stop()
				return false
			}
			if look {
				d.loop.wait(&e.crew, 0)
			}
			continue
		}
		select {
		case <-done:
			return false
		default:
		}
		e.sleep(left)
	}
}

// kinds folds activity types into the breakdown keys: "Unknown" for none,
// and beyond maxTypes distinct types, "Other", so a buggy Source cannot
// make the collectors keep unbounded series. The feed's.
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

// stop ends the feed, the run partial for reason: no dispatcher takes
// another send. The first stop's reason stands.
func (e *engine) stop(reason record.StopReason, err error) {
	e.feed.mu.Lock()
	defer e.feed.mu.Unlock()
	e.stopLocked(reason, err)
}

// stopLocked is stop under the feed's lock.
func (e *engine) stopLocked(reason record.StopReason, err error) {
	f := &e.feed
	f.ended = true
	if f.stopped.Partial {
		return
	}
	f.stopped.Partial = true
	f.stopped.Reason = reason
	f.stopped.Err = err
	f.stopped.WindowEnd = time.Since(e.start)
}
