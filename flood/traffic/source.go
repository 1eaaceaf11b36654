package traffic

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"

	"github.com/crowdfed/crowd/signing"
)

// PipelineOptions configures a Pipeline.
type PipelineOptions struct {
	// Workers is the number of signing goroutines; default one per CPU
	// (runtime.NumCPU).
	Workers int
	// Buffer is how many signed requests are kept ready; default 1024. Size
	// it to cover a fraction of a second at the run's rate: each request's
	// Date ages while it waits (see PipelineBuffer).
	Buffer int
	// Nice, 1…19, lowers the signers' OS priority (Linux; 0 leaves it);
	// 19 also gives their threads the SCHED_IDLE policy. At any of
	// 0…19 each signer is bound to a CPU of its own while it signs.
	// On a machine the crowd has to itself whose dispatcher is not
	// real-time it keeps sends on time while the signers fill every core
	// (a real-time dispatcher takes the core when a send is due whatever
	// the signers' nice value, and there 0 did no worse); beside a SUT it
	// hands the SUT every cycle it wants first, so the crowd, not the
	// SUT, becomes the bottleneck (the report then says so). NiceAuto
	// (the CLI's default) follows each schedule's dispatcher: see
	// SignerNiceBeside.
	Nice int
	// Knocker, when set, signs with its scheme (--signature) instead of
	// Prepare's draft-cavage.
	Knocker *Knocker
}

// NiceAuto is the PipelineOptions.Nice that follows the dispatcher: the
// signers sign at SignerNiceBeside of the thread each schedule's
// dispatcher runs on (the pipeline is a flood.DispatcherAware), and at 0
// before the first (while Fill fills the buffer).
const NiceAuto = -1

// SignerNiceBeside is the nice value signers keep sends on time at,
// beside a dispatcher whose thread runs as thread says: 0 beside one under
// a real-time policy, which the kernel runs the moment a send is due
// whatever the signers' nice value (there 19 only cost the signers
// speed), 19 beside any other, which would wait behind a signer's time
// slice (one core at 1 500/s: p99 lateness 1-6.5 ms at 0, under 1 ms at
// 19).
func SignerNiceBeside(thread record.Dispatcher) int {
	if thread.RealTime() {
		return 0
	}
	return 19
}

// ParseSignerNice reads --signer-nice: auto (NiceAuto) or 0 to 19.
func ParseSignerNice(s string) (int, error) {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return NiceAuto, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > 19 {
		return 0, fmt.Errorf("--signer-nice %q: want auto, or 0 (unchanged) to 19", s)
	}
	return n, nil
}

// FormatSignerNice is a PipelineOptions.Nice as --signer-nice takes it.
func FormatSignerNice(n int) string {
	if n == NiceAuto {
		return "auto"
	}
	return strconv.Itoa(n)
}

// PipelineBuffer is a buffer size for rate sends per second: one second's
// worth, between 256 and 16384. A second absorbs a signer's hiccups (a GC,
// a core taken by another process) while the Dates stay far fresher than
// the hour servers allow.
func PipelineBuffer(rate float64) int {
	if math.IsNaN(rate) || rate <= 0 {
		return 256
	}
	return int(min(16384, max(256, math.Ceil(rate))))
}

// Pipeline is the default flood.Source: its workers draw activities, sign them
// and keep a bounded buffer of ready requests full. Next takes the oldest
// ready one, waiting when none is (the engine counts that wait, past the
// send's intended time, as starvation). Beside a dispatcher under the
// normal policy with one CPU the workers pause and the dispatcher signs
// instead, in its waits (FillAhead) and in Next (see waitSigning). Close
// it when done.
type Pipeline struct {
	gen    *Generator
	ch     chan *flood.Prepared
	ctx    context.Context // done when the workers stop (Close or a signing error)
	cancel context.CancelFunc
	wg     sync.WaitGroup
	signed atomic.Int64
	// nice is the value the signers sign at: PipelineOptions.Nice, or
	// under NiceAuto what Dispatching last set. Each signer moves its
	// thread to it between two signatures.
	nice atomic.Int32
	auto bool // o.Nice was NiceAuto: Dispatching sets nice
	// realTime: the last schedule's dispatcher runs under a real-time
	// policy (Dispatching), which takes a signer's CPU the moment it wakes.
	realTime atomic.Bool

	waits waitSigning // its signing in the dispatcher's waits, on one CPU

	mu  sync.Mutex
	err error
}

// PipelineProcs is the GOMAXPROCS a pipeline-signing flood should run
// with: a P for each core's signer plus two, so that while the signers
// fill every core the dispatcher has a P even as it sleeps the last
// stretch before a send in a system call, and the sender it wakes has
// another (with one spare P, the bench measured a p99 lateness of 4-7 ms
// at any rate; with two, about 1 ms). PipelineRuntime sets it.
func PipelineProcs() int { return runtime.NumCPU() + 2 }

// PipelineGCPercent is the GC percent (GOGC) a pipeline-signing flood runs
// with. Each collection stops the world twice, and on a machine the
// signers fill, a stop waits for threads the kernel has not run yet: the
// bench traced stops of 0.3-1.7 ms, each one making late every send due
// during it. A pipeline allocates about as much per send as it signs, and
// at the default 100 it collected two to three times a second at 1 500/s;
// at 400 a quarter as often, for a heap up to five times the live one.
const PipelineGCPercent = 400

// PipelineRuntime sets the process up for a pipeline-signing flood:
// GOMAXPROCS procs (0: PipelineProcs()) and, unless the environment sets
// GOGC, PipelineGCPercent. Call it before NewPipeline; restore puts both
// back as they were.
func PipelineRuntime(procs int) (restore func()) {
	if procs <= 0 {
		procs = PipelineProcs()
	}
	prevProcs := runtime.GOMAXPROCS(procs)
	if _, set := os.LookupEnv("GOGC"); set {
		return func() { runtime.GOMAXPROCS(prevProcs) }
	}
	prevGC := debug.SetGCPercent(PipelineGCPercent)
	return func() {
		debug.SetGCPercent(prevGC)
		runtime.GOMAXPROCS(prevProcs)
	}
}

// NewPipeline starts o.Workers signers (default: one per core), each with its own Stream of gen
// and the shared (goroutine-safe) signer; they run until Close.
func NewPipeline(gen *Generator, signer *signing.Signer, o PipelineOptions) *Pipeline {
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.Buffer <= 0 {
		o.Buffer = 1024
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pipeline{gen: gen, ch: make(chan *flood.Prepared, o.Buffer), ctx: ctx, cancel: cancel, auto: o.Nice == NiceAuto}
	p.waits.init(signer, o.Knocker)
	if !p.auto {
		p.nice.Store(int32(o.Nice))
	}
	for i := range o.Workers {
		st := gen.Stream()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			// applied is the nice value the thread was set to; -1: none yet.
			applied, restore, pinned, idle := -1, func() bool { return true }, false, false
			defer func() { restore() }()
			for ctx.Err() == nil {
				if !p.waits.awaitResume(ctx) {
					return
				}
				if n := int(p.nice.Load()); n != applied {
					// Back to the thread as it was, then to n: signer i
					// bound to the i-th CPU. A thread that cannot be raised
					// again (no CAP_SYS_NICE) stays as it is, pinned,
					// bound and low, for the pipeline's life.
					if restore() {
						restore, pinned, idle = backgroundThread(n, i)
					}
					applied = n
				}
				t0 := time.Now()
				d, err := st.Next()
				var prep *flood.Prepared
				if err == nil {
					prep, err = gen.prepareAhead(signer, o.Knocker, d)
				}
				if !p.waits.on() {
					p.waits.timed(time.Since(t0))
				}
				if err != nil {
					p.fail(err)
					return
				}
				// An empty buffer may have the dispatcher waiting in Next:
				// this send then readies it on this goroutine's P.
				dispatcherWaits := len(p.ch) == 0
				select {
				case p.ch <- prep:
					p.signed.Add(1)
				case <-ctx.Done():
					gen.discard(prep)
					return
				}
				if signerYields(pinned, idle, p.realTime.Load(), dispatcherWaits) {
					runtime.Gosched()
				}
			}
		}()
	}
	return p
}

// signerYields reports whether a signer yields its goroutine after
// sending a request to the buffer. Yielding lets the thread and P that run
// it serve others between signatures: the Go backend's signature has no
// scheduling point in its ~0.8 ms, and libcrypto's gives its P up only
// inside the cgo call; and a pinned goroutine's yield puts its thread to
// sleep, which hands the CPU to the threads waiting for it.
//
// Not needed by a goroutine pinned to its thread (pinned) where the kernel
// hands the CPU over anyway, to any thread that wakes beside a signer
// under SCHED_IDLE (idle) and to a real-time dispatcher the moment it
// wakes whatever the signer's nice value (realTime), when the buffer held
// others: PipelineProcs leaves the dispatcher and the senders Ps of their
// own. There the yield only cost, as a pinned goroutine's yield hands it
// to another thread and back, two wake-ups a signature. Without them, at
// 19, trials of the bench's pipeline flood signed 10 % more above its
// maximum, and the flood's other threads took 11-18 % less CPU at
// 2 300/s; at 0 beside a real-time dispatcher, two bound signers
// sustained 3 750/s in four trials of four, with the yield in none of two
// (the kernel's share of the flood's CPU 8-10 % against 27-30 %).
//
// Still needed after a send to an empty buffer (dispatcherWaits): the
// dispatcher it readied may wait on this P's run queue, behind a
// Go-backend signature.
func signerYields(pinned, idle, realTime, dispatcherWaits bool) bool {
	return !pinned || !(idle || realTime) || dispatcherWaits
}

// Dispatching sets, under NiceAuto, the signers' nice value for the
// schedule whose dispatcher runs as thread says (SignerNiceBeside); with a
// value of its own the pipeline keeps it. Beside a dispatcher under the
// normal policy with one CPU (thread.CPUs 1), where the signatures made
// so far were short (waitCostMax), it pauses the signers, for the
// dispatcher to sign in its waits, until a later schedule's dispatcher is
// another or the pipeline closes. It implements
// flood.DispatcherAware: the engine calls it before each schedule.
func (p *Pipeline) Dispatching(thread record.Dispatcher) {
	if p.auto {
		p.nice.Store(int32(SignerNiceBeside(thread)))
	}
	p.realTime.Store(thread.RealTime())
	// A real-time dispatcher takes the CPU from the signers the moment a
	// send is due; and a deadline thread's budget (90 % of each
	// millisecond) would throttle it, signing.
	p.waits.set(thread.CPUs == 1 && !thread.RealTime() && p.waits.short())
}

// SignerNice is the nice value the signers are asked to sign at now.
func (p *Pipeline) SignerNice() int { return int(p.nice.Load()) }

func (p *Pipeline) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.cancel()
}

// Next returns a ready request, waiting for one if needed (or, while the
// signers are paused for the dispatcher, signing one); ctx's error when
// ctx ends first; once the workers stopped and the buffer is empty, the
// signing error that stopped them, or io.EOF after Close.
func (p *Pipeline) Next(ctx context.Context) (*flood.Prepared, error) {
	select {
	case r := <-p.ch:
		return r, nil
	default:
	}
	if p.waits.on() && p.ctx.Err() == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The signers are paused: the dispatcher signs its own.
		prep, err := p.signOnDispatcher()
		if err == nil {
			p.signed.Add(1)
		}
		return prep, err
	}
	select {
	case r := <-p.ch:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.ctx.Done():
		select {
		case r := <-p.ch:
			return r, nil
		default:
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.err != nil {
			return nil, p.err
		}
		return nil, io.EOF
	}
}

// NextReady reports whether Next would return at once: a signed request
// waits in the buffer, or the workers stopped (flood.NextReady).
func (p *Pipeline) NextReady() bool { return len(p.ch) > 0 || p.ctx.Err() != nil }

// Fill waits until the buffer is full, so that a run starts with a full
// buffer instead of racing its signers (while they are paused for the
// dispatcher, it signs what is missing itself); it returns early when ctx
// ends or the workers stopped. Call it between schedules, not while a
// dispatcher takes requests.
func (p *Pipeline) Fill(ctx context.Context) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for len(p.ch) < cap(p.ch) {
		if ctx.Err() == nil && p.FillAhead(math.MaxInt64) {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.ctx.Done():
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.err != nil {
				return p.err
			}
			return io.EOF
		case <-t.C:
		}
	}
	return nil
}

// Ready is how many signed requests wait in the buffer now.
func (p *Pipeline) Ready() int { return len(p.ch) }

// Cap is the buffer's size.
func (p *Pipeline) Cap() int { return cap(p.ch) }

// Signed is how many requests the pipeline has signed: buffered by its
// workers or in the dispatcher's waits, or signed in Next.
func (p *Pipeline) Signed() int64 { return p.signed.Load() }

// Close stops the workers and waits for them, then discards the requests
// still buffered (their Follows were never sent: see Generator.Settled);
// Next then returns io.EOF.
func (p *Pipeline) Close() {
	p.cancel()
	p.wg.Wait()
	for {
		select {
		case r := <-p.ch:
			p.gen.discard(r)
		default:
			return
		}
	}
}

// Presigned requests age: Mastodon rejects a Date more than PresignShelfLife
// old, so a presigned window (plus a margin for the signing itself and clock
// skew) must fit in it.
const (
	PresignShelfLife = time.Hour
	presignMargin    = 5 * time.Minute
)

// DefaultPresignMaxBytes is the memory presigning may take by default.
const DefaultPresignMaxBytes = 2 << 30

// PresignOptions configures Presign.
type PresignOptions struct {
	// Window is the timed window the requests will be sent in (warm-up
	// included). A window that, with a 5 min margin, exceeds
	// PresignShelfLife is refused.
	Window time.Duration
	// MaxBytes bounds the estimated memory of the presigned requests;
	// default DefaultPresignMaxBytes.
	MaxBytes int64
	// Workers is the number of signing goroutines; default one per CPU
	// (runtime.NumCPU).
	Workers int
	// Knocker, when set, signs with its scheme (--signature) instead of
	// Prepare's draft-cavage.
	Knocker *Knocker
}

// prepareWith signs d with k's scheme, or with Prepare's when k is nil.
func prepareWith(signer *signing.Signer, k *Knocker, d Draft) (*flood.Prepared, error) {
	if k != nil {
		return k.Prepare(d)
	}
	return Prepare(signer, d)
}

// prepare signs d as prepareWith does; a draft it cannot sign never
// leaves, so what drafting it claimed (a Follow's or reaction's pair, a
// Delete's deletion) is given back, as for a send that was dropped.
func (g *Generator) prepare(signer *signing.Signer, k *Knocker, d Draft) (*flood.Prepared, error) {
	p, err := prepareWith(signer, k, d)
	if err != nil {
		t := &Ticket{Vocab: d.Vocab}
		unsent := t.Attach(&flood.Prepared{Type: d.Type, URL: d.URL})
		if d.Type == record.TypeFollow && d.Forgery == nil {
			t.Follow = &FollowRegistration{Local: d.Sender.ID, Remote: d.Persona.ID, FollowID: d.ID}
		}
		g.discard(unsent)
	}
	return p, err
}

// prepareAhead is prepare for a request made before its send, on a
// goroutine of its own (a signer, a presigner): its head is made there too
// (RenderHead), so that the dispatcher that writes it only copies it;
// not for a request whose double knock may sign it again before it
// leaves, which the dispatcher never writes.
func (g *Generator) prepareAhead(signer *signing.Signer, k *Knocker, d Draft) (*flood.Prepared, error) {
	p, err := g.prepare(signer, k, d)
	if err == nil {
		if t := TicketOf(p); t == nil || t.Knock == nil || t.Knock.firstAsSigned() {
			p.RenderHead()
		}
	}
	return p, err
}

// PresignCount is how many requests a presigned run needs: maxSends when
// set (and the schedule is not shorter), else every send a constant pacer
// offers in d at rate (ceil(rate × d)), plus five standard deviations for
// Poisson arrivals.
func PresignCount(arrivals flood.Arrivals, rate float64, d time.Duration, maxSends int64) int64 {
	n := math.Ceil(rate * d.Seconds())
	if arrivals == flood.ArrivalsPoisson {
		n += 5*math.Sqrt(n) + 10
	}
	if maxSends > 0 && (d <= 0 || float64(maxSends) < n) {
		return maxSends
	}
	return int64(n)
}

// EstimatePresignBytes estimates the memory of n presigned requests of gen:
// the largest body (a Create with its note) plus the signed headers and the
// structures that hold them.
func EstimatePresignBytes(gen *Generator, n int64) int64 {
	const overhead = 3072 // headers (the Signature alone is ~450 B), maps, Prepared, and its head made for the wire (~1 KiB)
	per := int64(gen.cfg.NoteBytes) + 1024 + overhead
	if n > math.MaxInt64/per {
		return math.MaxInt64
	}
	return n * per
}

// Presigned is a flood.Source of requests all signed before the run (see
// Presign). Its Next is for one goroutine, the engine's dispatcher; it
// returns io.EOF when every request is used.
type Presigned struct {
	gen   *Generator
	reqs  []*flood.Prepared
	next  int
	Took  time.Duration // how long signing took
	Bytes int64         // the estimated memory
}

// Presign draws and signs n requests with o.Workers goroutines, before the
// run. It refuses (wrapping flood.ErrInvalidPlan) a window the Dates would not
// survive and an estimated memory above o.MaxBytes, before signing
// anything; and a window that, added to the time signing took, exceeds
// PresignShelfLife. ctx interrupts it.
func Presign(ctx context.Context, gen *Generator, signer *signing.Signer, n int64, o PresignOptions) (*Presigned, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: nothing to presign", flood.ErrInvalidPlan)
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultPresignMaxBytes
	}
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.Window+presignMargin > PresignShelfLife {
		return nil, fmt.Errorf("%w: presigned requests would be sent up to %v after signing, and Mastodon rejects a Date more than %v old (with a %v margin): use --signing=pipeline or a shorter run",
			flood.ErrInvalidPlan, o.Window, PresignShelfLife, presignMargin)
	}
	est := EstimatePresignBytes(gen, n)
	if est > o.MaxBytes {
		return nil, fmt.Errorf("%w: presigning %d requests would take about %.1f GiB (limit %.1f GiB): lower --rate × --seconds, or use --signing=pipeline",
			flood.ErrInvalidPlan, n, float64(est)/(1<<30), float64(o.MaxBytes)/(1<<30))
	}
	start := time.Now()
	p := &Presigned{gen: gen, reqs: make([]*flood.Prepared, n), Bytes: est}
	var idx atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range min(int64(o.Workers), n) {
		st := gen.Stream()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := idx.Add(1) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				d, err := st.Next()
				var prep *flood.Prepared
				if err == nil {
					prep, err = gen.prepareAhead(signer, o.Knocker, d)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					idx.Store(n) // stop the others
					return
				}
				p.reqs[i] = prep
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		p.Close()
		return nil, err
	}
	if firstErr != nil {
		p.Close()
		return nil, firstErr
	}
	p.Took = time.Since(start)
	if p.Took+o.Window > PresignShelfLife {
		p.Close()
		return nil, fmt.Errorf("%w: presigning took %v; with the %v window the last requests would carry a Date older than %v: use --signing=pipeline",
			flood.ErrInvalidPlan, p.Took.Round(time.Second), o.Window, PresignShelfLife)
	}
	return p, nil
}

// Len is the number of presigned requests.
func (p *Presigned) Len() int { return len(p.reqs) }

// Next returns the next presigned request (and drops the source's reference
// to it), io.EOF when none is left, or ctx's error.
func (p *Presigned) Next(ctx context.Context) (*flood.Prepared, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.next >= len(p.reqs) {
		return nil, io.EOF
	}
	r := p.reqs[p.next]
	p.reqs[p.next] = nil
	p.next++
	return r, nil
}

// NextReady is true: Next never waits (flood.NextReady).
func (p *Presigned) NextReady() bool { return true }

// AlwaysReady is true: every request was signed before the run, so the
// engine may share the schedule among dispatchers (flood.AlwaysReady).
func (p *Presigned) AlwaysReady() bool { return true }

// Close discards the requests not handed out (their Follows were never
// sent: see Generator.Settled); Next then returns io.EOF.
func (p *Presigned) Close() {
	p.gen.discard(p.reqs[p.next:]...)
	p.next = len(p.reqs)
}

// JIT is a flood.Source that draws and signs each request in Next, that is in the
// engine's single dispatcher goroutine: signing cost is hidden while it fits
// in the gap between sends, and once it exceeds the gap it shows as lateness
// of every send, counted as starvation (see SigningJIT).
type JIT struct {
	st     *Stream
	signer *signing.Signer
	knock  *Knocker
}

// NewJIT returns a JIT source drawing from one Stream of gen, signing
// with k's scheme (--signature), or with signer's draft-cavage when k is
// nil, as a Pipeline or Presign does.
func NewJIT(gen *Generator, signer *signing.Signer, k *Knocker) *JIT {
	return &JIT{st: gen.Stream(), signer: signer, knock: k}
}

// Next draws and signs one request, or returns ctx's error.
func (j *JIT) Next(ctx context.Context) (*flood.Prepared, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := j.st.Next()
	if err != nil {
		return nil, err
	}
	return j.st.g.prepare(j.signer, j.knock, d)
}
