package traffic

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// TestWaitSigningFits specifies when the dispatcher signs in a wait: a
// 256-request buffer, whose 64th is 4, and signatures of 300 µs lately.
func TestWaitSigningFits(t *testing.T) {
	var w waitSigning
	w.cost.Store(int64(300 * time.Microsecond))
	const room = 256
	for _, c := range []struct {
		name  string
		left  time.Duration
		ready int
		want  bool
	}{
		// A full buffer wants nothing, however long the wait.
		{"full", time.Second, room, false},
		// Within a 64th of full: only what fits, less waitLateMax.
		{"near full, fits", 400 * time.Microsecond, room - 1, true},
		{"near full, fits with the lateness allowed", 250 * time.Microsecond, room - 4, true},
		{"near full, does not fit", 249 * time.Microsecond, room - 4, false},
		{"near full, no time left", 0, room - 1, false},
		// Short by more than a 64th: it signs whatever is left, a send
		// late by up to one signature rather than a buffer run dry.
		{"short", 0, room - 5, true},
		{"empty", 10 * time.Microsecond, 0, true},
	} {
		if got := w.fits(c.left, c.ready, room); got != c.want {
			t.Errorf("%s: fits(%v, %d of %d) = %v, want %v", c.name, c.left, c.ready, room, got, c.want)
		}
	}
	// A buffer of one is short as soon as it is not full.
	if !w.fits(0, 0, 1) || w.fits(time.Second, 1, 1) {
		t.Error("a buffer of one: want a signature when empty, none when full")
	}
}

// TestWaitSigningCost: the cost follows the signatures, an eighth of the
// way each, but one slow signature moves it by a 32nd at most.
func TestWaitSigningCost(t *testing.T) {
	var w waitSigning
	w.timed(400 * time.Microsecond)
	if got := time.Duration(w.cost.Load()); got != 400*time.Microsecond {
		t.Fatalf("the first signature sets the cost: %v", got)
	}
	w.timed(200 * time.Microsecond)
	if got := time.Duration(w.cost.Load()); got != 375*time.Microsecond {
		t.Errorf("a faster one: cost %v, want 375µs", got)
	}
	w.cost.Store(int64(320 * time.Microsecond))
	w.timed(4 * time.Millisecond)
	if got := time.Duration(w.cost.Load()); got != 330*time.Microsecond {
		t.Errorf("one of 4 ms: cost %v, want 330µs (1.25 × 320 counted)", got)
	}
	// Short enough to sign in the waits: up to waitCostMax, once known.
	for _, c := range []struct {
		cost time.Duration
		want bool
	}{{0, false}, {300 * time.Microsecond, true}, {waitCostMax, true}, {waitCostMax + time.Microsecond, false}} {
		w.cost.Store(int64(c.cost))
		if got := w.short(); got != c.want {
			t.Errorf("a cost of %v: short %v, want %v", c.cost, got, c.want)
		}
	}
}

// TestPipelineSignsInTheWaitsOnOneCPU: beside a dispatcher under the
// normal policy with one CPU, signatures short, the signers pause and the
// dispatcher signs, in its waits and in Next (and Fill signs itself);
// beside one with more CPUs, or a real-time one, or with signatures
// longer than waitCostMax, the signers sign again.
func TestPipelineSignsInTheWaitsOnOneCPU(t *testing.T) {
	w := testWorld(t, 1, 2)
	v := worldVerifier(w)
	pl := NewPipeline(signedGenerator(t, w, nil), testSigner(), PipelineOptions{Workers: 2, Buffer: 8})
	defer pl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pl.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	if pl.FillAhead(time.Second) {
		t.Fatal("before any schedule the signers sign: FillAhead signed")
	}
	// The test's signatures (the Go backend's, under the race detector
	// too) are longer than waitCostMax: takeUp has the pipeline take
	// the dispatcher's one CPU as if they were short, once no signer is
	// timing one (each may finish one it began).
	oneCPU := record.Dispatcher{Policy: "other", CPUs: 1}
	takeUp := func() {
		t.Helper()
		for start := time.Now(); ; time.Sleep(time.Millisecond) {
			pl.waits.cost.Store(int64(300 * time.Microsecond))
			if pl.Dispatching(oneCPU); pl.waits.on() {
				return
			}
			if time.Since(start) > 10*time.Second {
				t.Fatal("beside one CPU, with short signatures, the dispatcher does not sign in its waits")
			}
		}
	}
	takeUp()
	// Each signer may hold one request it signed before the waits were
	// taken up, for the first slot that frees: the buffer is emptied
	// until both signers wait; then they sign no more.
	var taken []*flood.Prepared
	for pl.waits.waiting.Load() < 2 || pl.Ready() > 0 {
		if pl.Ready() == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		p, err := pl.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, p)
	}
	if len(taken) > pl.Cap()+2 {
		t.Fatalf("the signers went on while the dispatcher signs: %d taken from a buffer of %d (2 signers)", len(taken), pl.Cap())
	}
	// A later schedule beside the same kind of dispatcher keeps them so.
	takeUp()
	before := pl.Signed()
	// Next signs when the buffer is empty, FillAhead in a wait.
	p, err := pl.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	taken = append(taken, p)
	if !pl.FillAhead(0) || pl.Ready() != 1 {
		t.Fatalf("FillAhead into a buffer short of full: %d ready", pl.Ready())
	}
	for pl.FillAhead(time.Second) {
	}
	if pl.Ready() != pl.Cap() || pl.Signed()-before != 1+int64(pl.Cap()) {
		t.Errorf("FillAhead with time to spare: %d of %d ready, %d signed, want it full and %d signed", pl.Ready(), pl.Cap(), pl.Signed()-before, 1+pl.Cap())
	}
	// Fill signs what is missing itself.
	for range 3 {
		p, err := pl.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, p)
	}
	if err := pl.Fill(ctx); err != nil || pl.Ready() != pl.Cap() || pl.Signed()-before != 4+int64(pl.Cap()) {
		t.Fatalf("Fill while the signers wait: %d of %d ready, %d signed, %v", pl.Ready(), pl.Cap(), pl.Signed()-before, err)
	}
	for pl.Ready() > 0 {
		p, err := pl.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, p)
	}
	seen := map[string]bool{}
	for _, p := range taken {
		checkPrepared(t, v, p)
		seen[p.Header.Get("Signature")] = true
	}
	if len(seen) != len(taken) {
		t.Errorf("%d distinct signatures of %d", len(seen), len(taken))
	}
	// Beside a dispatcher with two CPUs, or a real-time one, or where
	// signatures are long, the signers fill the buffer again.
	for _, d := range []record.Dispatcher{{Policy: "other", CPUs: 2}, {Policy: "deadline", CPUs: 1}, oneCPU} {
		pl.waits.cost.Store(int64(waitCostMax + 100*time.Microsecond))
		pl.Dispatching(d)
		if pl.waits.on() {
			t.Errorf("beside %+v the dispatcher signs in its waits", d)
		}
		if _, err := pl.Next(ctx); err != nil {
			t.Fatal(err)
		}
		if pl.FillAhead(time.Second) {
			t.Errorf("beside %+v FillAhead signed", d)
		}
		if err := pl.Fill(ctx); err != nil || pl.Ready() != pl.Cap() {
			t.Fatalf("the signers beside %+v: %d of %d ready, %v", d, pl.Ready(), pl.Cap(), err)
		}
		takeUp()
	}
	// Close ends paused signers too.
	for pl.waits.waiting.Load() < 2 {
		if _, err := pl.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan struct{})
	go func() {
		pl.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits on the paused signers")
	}
	if _, err := pl.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("after Close: %v, want io.EOF", err)
	}
	if pl.FillAhead(time.Second) {
		t.Error("after Close FillAhead signed")
	}
}
