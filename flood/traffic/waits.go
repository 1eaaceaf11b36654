package traffic

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/signing"
)

// waitSigning is a Pipeline's signing in the dispatcher's waits
// (flood.WaitFiller), which it takes up beside a dispatcher under the
// normal policy that has one CPU, where a signature is short
// (waitCostMax; see Dispatching), and its signers then pause for. There
// a signer could only sign in the CPU time the dispatcher left it, by
// turns the kernel switches: the dispatcher woke for each send ahead of
// the signer (nice 19) and the signer went on after, two context
// switches a send. On one core of the bench's (libcrypto, the null sink
// on the other) the flood sustained 0.46-0.63 × signing alone on that
// core that way, and 0.72-0.78 signing in the waits.
//
// In a wait the dispatcher signs requests into the buffer, as many as fit
// before the send is due (the last signatures' time, less waitLateMax),
// or, once the buffer has run short of full by more than a 64th, whether
// they fit or not: a send is then late by up to one signature. The
// buffer so stays within a 64th of full, and a trial's signed rate still
// says whether the signing kept up. Next signs one itself when the
// buffer is empty; the engine then leaves the answers the dispatcher
// awaits to workers (NextReady is false), as it does before any Next
// that may take a while.
type waitSigning struct {
	signer *signing.Signer
	knock  *Knocker

	active atomic.Bool
	// cost is the time a signature took lately, in ns (an average that
	// weighs the last one an eighth): the signers' until the dispatcher
	// signs, then the dispatcher's own.
	cost atomic.Int64
	// waiting counts the signers paused in awaitResume: a test's way to
	// know that none is signing.
	waiting atomic.Int32

	mu     sync.Mutex
	resume chan struct{} // closed when the waits are given up

	own *Stream // the dispatcher's draws (and Fill's, between schedules): one goroutine's at a time
}

// waitLateMax is how late a signature in a wait may leave the send after
// it, where the last signatures' time is right: about the dispatcher's
// own wake-up jitter under the normal policy. The waits then fit a
// signature up to the rate where one and a send fill the gap between two
// sends.
const waitLateMax = 50 * time.Microsecond

// waitCostMax is the longest a signature may take, on average, for the
// dispatcher to sign in its waits: a send one holds up is then late by
// half the 1 ms p99 lateness the bench holds a pipeline to, at most. On
// one core of the bench's, libcrypto's (about 0.3 ms) left a p99
// lateness of 0.37-0.64 ms at 1 900-2 740/s, and the Go backend's (about
// 0.85 ms) 1.03-1.21 ms at 900-1 100/s, where its signers in the
// background left 0.06-0.07 ms at 900/s (and fell behind at 1 100/s).
const waitCostMax = 500 * time.Microsecond

// short reports whether the signatures made so far took waitCostMax or
// less, on average; false before the first.
func (w *waitSigning) short() bool {
	c := time.Duration(w.cost.Load())
	return c > 0 && c <= waitCostMax
}

func (w *waitSigning) init(signer *signing.Signer, k *Knocker) {
	w.signer, w.knock = signer, k
	w.resume = make(chan struct{})
}

// set takes signing in the waits up (on) or gives it up; giving it up
// lets the paused signers go on.
func (w *waitSigning) set(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active.Load() && !on {
		close(w.resume)
		w.resume = make(chan struct{})
	}
	w.active.Store(on)
}

// on reports whether the dispatcher signs in its waits.
func (w *waitSigning) on() bool { return w.active.Load() }

// awaitResume waits, for a signer, while the dispatcher signs in its
// waits; false when ctx ends first.
func (w *waitSigning) awaitResume(ctx context.Context) bool {
	for w.active.Load() {
		w.mu.Lock()
		resume := w.resume
		active := w.active.Load()
		w.mu.Unlock()
		if !active {
			break
		}
		w.waiting.Add(1)
		select {
		case <-resume:
		case <-ctx.Done():
		}
		w.waiting.Add(-1)
		if ctx.Err() != nil {
			return false
		}
	}
	return ctx.Err() == nil
}

// timed counts a signature that took d into cost, as 1.25 × the cost at
// most: the dispatcher's first (which makes its signing context, 3.9 ms
// once) or one the kernel held up would otherwise keep the waits from
// fitting another, and its tail (p99 twice the median) would lift the
// average far above what most take. A load and a store: two signers at
// once may lose one's, which only weighs the other's more.
func (w *waitSigning) timed(d time.Duration) {
	c := w.cost.Load()
	if c == 0 {
		w.cost.Store(int64(d))
		return
	}
	w.cost.Store(c + (min(int64(d), c+c/4)-c)/8)
}

// fits reports whether a signature is worth making in a wait with left
// before the send, into a buffer holding ready of room.
func (w *waitSigning) fits(left time.Duration, ready, room int) bool {
	if ready >= room {
		return false
	}
	if ready < room-room/64 {
		return true
	}
	c := time.Duration(w.cost.Load())
	return left >= c-waitLateMax
}

// FillAhead signs one request into the buffer in the dispatcher's wait
// (flood.WaitFiller), beside a dispatcher under the normal policy with
// one CPU, when the signature fits in left or the buffer runs short (see
// waitSigning); false at once otherwise, and when the buffer is full.
func (p *Pipeline) FillAhead(left time.Duration) bool {
	if !p.waits.on() || p.ctx.Err() != nil || !p.waits.fits(left, len(p.ch), cap(p.ch)) {
		return false
	}
	prep, err := p.signOnDispatcher()
	if err != nil {
		return false
	}
	select {
	case p.ch <- prep:
		p.signed.Add(1)
		return true
	default:
		// A signer that was signing as the waits were taken up filled
		// the last slot meanwhile.
		p.gen.discard(prep)
		return false
	}
}

// signOnDispatcher signs one request on the caller, the dispatcher: in
// its wait or in Next, which count it. A signing error stops the
// pipeline, as a signer's does.
func (p *Pipeline) signOnDispatcher() (*flood.Prepared, error) {
	w := &p.waits
	if w.own == nil {
		w.own = p.gen.Stream()
	}
	t0 := time.Now()
	d, err := w.own.Next()
	var prep *flood.Prepared
	if err == nil {
		prep, err = p.gen.prepareAhead(w.signer, w.knock, d)
	}
	if err != nil {
		p.fail(err)
		return nil, err
	}
	w.timed(time.Since(t0))
	return prep, nil
}
