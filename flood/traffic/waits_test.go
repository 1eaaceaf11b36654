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
}

// TestPipelineSignsInTheWaitsOnOneCPU: beside a dispatcher with one CPU
// the signers pause and the dispatcher signs, in its waits and in Next;
// beside one with more the signers sign again.
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
	pl.Dispatching(record.Dispatcher{Policy: "other", CPUs: 1})
	// Each signer may hold one request it signed before the waits were
	// taken up, for the first slot that frees: the buffer is emptied
	// until none comes; then the signers sign no more.
	var taken []*flood.Prepared
	for quiet := 0; quiet < 3; {
		if pl.Ready() == 0 {
			quiet++
			time.Sleep(50 * time.Millisecond)
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
	// Beside a dispatcher with two CPUs the signers fill the buffer again.
	pl.Dispatching(record.Dispatcher{Policy: "other", CPUs: 2})
	if pl.FillAhead(time.Second) {
		t.Error("beside two CPUs FillAhead signed")
	}
	if err := pl.Fill(ctx); err != nil || pl.Ready() != pl.Cap() {
		t.Fatalf("the signers after the waits were given up: %d ready, %v", pl.Ready(), err)
	}
	// Close ends paused signers too.
	pl.Dispatching(record.Dispatcher{Policy: "other", CPUs: 1})
	pl.Close()
	if _, err := pl.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("after Close: %v, want io.EOF", err)
	}
	if pl.FillAhead(time.Second) {
		t.Error("after Close FillAhead signed")
	}
}
