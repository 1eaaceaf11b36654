package traffic

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/signing"
)

// worldVerifier verifies signatures by the world's actors, as the crowd's
// own inboxes (and a SUT that fetched the keys) do.
func worldVerifier(w *actors.World) *signing.Verifier {
	return &signing.Verifier{Keys: signing.KeyResolverFunc(func(_ context.Context, keyID string, _ bool) (signing.PublicKey, error) {
		a, ok := w.ActorByKeyID(keyID)
		if !ok {
			return signing.PublicKey{}, fmt.Errorf("unknown key %s", keyID)
		}
		return signing.PublicKey{Key: a.Key.Public(), Owner: a.ID, ID: a.KeyID}, nil
	})}
}

// requestOf is the request the engine sends for p.
func requestOf(p *flood.Prepared) *http.Request {
	host := p.Host
	if host == "" {
		host = p.URL.Host
	}
	return &http.Request{Method: p.Method, URL: p.URL, Header: p.Header, Host: host,
		Body: io.NopCloser(bytes.NewReader(p.Body)), ContentLength: int64(len(p.Body))}
}

// signedGenerator is a generator of signable activities from w's actors to

// TestPipelineRuntime: a pipeline flood runs with PipelineProcs Ps and the
// GC percent PipelineGCPercent, unless GOGC in the environment says
// otherwise, and restore puts the process back as it was.
func TestPipelineRuntime(t *testing.T) {
	gcPercent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	procs0, gc0 := runtime.GOMAXPROCS(0), gcPercent()
	for _, tc := range []struct {
		name     string
		gogc     string // "": unset
		procs    int
		wantGC   int
		wantProc int
	}{
		{"the defaults", "", 0, PipelineGCPercent, PipelineProcs()},
		{"one core's flood", "", 3, PipelineGCPercent, 3},
		{"GOGC set by the user wins", "50", 0, gc0, PipelineProcs()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gogc != "" {
				t.Setenv("GOGC", tc.gogc)
			} else if _, set := os.LookupEnv("GOGC"); set {
				t.Setenv("GOGC", "")
				os.Unsetenv("GOGC")
			}
			restore := PipelineRuntime(tc.procs)
			procs, gc := runtime.GOMAXPROCS(0), gcPercent()
			restore()
			if procs != tc.wantProc || gc != tc.wantGC {
				t.Errorf("during: GOMAXPROCS %d, GC percent %d; want %d, %d", procs, gc, tc.wantProc, tc.wantGC)
			}
			if p, g := runtime.GOMAXPROCS(0), gcPercent(); p != procs0 || g != gc0 {
				t.Errorf("after: GOMAXPROCS %d, GC percent %d; want %d, %d as before", p, g, procs0, gc0)
			}
		})
	}
}

// two personas on sut.test.
func signedGenerator(t testing.TB, w *actors.World, onFollow func(FollowRegistration)) *Generator {
	t.Helper()
	return mustGenerator(t, GeneratorConfig{Senders: w.Actors(), Personas: fakePersonas(2), Mix: record.Mix{Create: 1, Like: 1, Follow: 1}, OnFollowSent: onFollow})
}

func testSigner() *signing.Signer {
	return signing.NewSigner(signing.SignerOptions{UserAgent: "crowd/test (+https://github.com/crowdfed/crowd)"})
}

func checkPrepared(t testing.TB, v *signing.Verifier, p *flood.Prepared) {
	t.Helper()
	if p.Method != http.MethodPost || p.URL.String() != "https://sut.test/inbox" {
		t.Fatalf("%s %s", p.Method, p.URL)
	}
	for _, h := range []string{"Content-Type", "Date", "Digest", "Signature", "User-Agent", "Host"} {
		if p.Header.Get(h) == "" {
			t.Fatalf("no %s header in %v", h, p.Header)
		}
	}
	if d, err := http.ParseTime(p.Header.Get("Date")); err != nil || time.Since(d) > time.Minute {
		t.Fatalf("Date %q is not fresh", p.Header.Get("Date"))
	}
	if _, err := v.Verify(context.Background(), requestOf(p), p.Body); err != nil {
		t.Fatalf("%s does not verify: %v", p.Type, err)
	}
}

func TestPrepareSignsWhatAVerifierAccepts(t *testing.T) {
	w := testWorld(t, 1, 2)
	v := worldVerifier(w)
	s := signedGenerator(t, w, nil).Stream()
	seen := map[record.ActivityKind]bool{}
	for range 12 {
		d := mustDraft(t, s)
		p, err := Prepare(testSigner(), d)
		if err != nil {
			t.Fatal(err)
		}
		checkPrepared(t, v, p)
		seen[p.Type] = true
		if p.URL != d.URL {
			t.Error("the Prepared does not share the persona's parsed URL")
		}
		// A Create names its sender and note for the outbox, which the
		// world takes as a note its actor sent; nothing else does.
		if (TicketOf(p).Outbox != nil) != (p.Type == record.TypeCreate) {
			t.Errorf("%s: outbox item %+v", p.Type, TicketOf(p).Outbox)
		} else if TicketOf(p).Outbox != nil {
			if err := WorldOutbox(w)(context.Background(), []actors.SentNote{*TicketOf(p).Outbox}); err != nil || *TicketOf(p).Outbox != (actors.SentNote{Actor: d.Sender.ID, Note: d.Object}) {
				t.Errorf("outbox item %+v of %s: %v", TicketOf(p).Outbox, d.ID, err)
			}
		}
		// A tampered body no longer verifies: the Digest covers it.
		bad := *p
		bad.Body = append(bytes.Clone(p.Body[:len(p.Body)-1]), ' ')
		if _, err := v.Verify(context.Background(), requestOf(&bad), bad.Body); !errors.Is(err, signing.ErrDigestMismatch) {
			t.Errorf("tampered body: %v", err)
		}
	}
	if len(seen) != 3 {
		t.Errorf("types seen %v", seen)
	}
}

func TestPipelineKeepsItsBufferFull(t *testing.T) {
	w := testWorld(t, 1, 2)
	v := worldVerifier(w)
	pl := NewPipeline(signedGenerator(t, w, nil), testSigner(), PipelineOptions{Workers: 2, Buffer: 16})
	defer pl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pl.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	if pl.Ready() != pl.Cap() || pl.Cap() != 16 {
		t.Fatalf("after Fill: %d of %d ready", pl.Ready(), pl.Cap())
	}
	ids := map[string]bool{}
	for range 10 {
		p, err := pl.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkPrepared(t, v, p)
		ids[p.Header.Get("Signature")] = true
	}
	// The workers refill what was taken.
	if err := pl.Fill(ctx); err != nil || pl.Ready() != 16 {
		t.Fatalf("refill: %d ready, %v", pl.Ready(), err)
	}
	if signed := pl.Signed(); signed < 26 {
		t.Errorf("%d signed, want at least 16 + 10", signed)
	}
	if len(ids) != 10 {
		t.Errorf("%d distinct signatures of 10", len(ids))
	}
	// Close discards the buffer (those drafts never left); Next says io.EOF.
	pl.Close()
	if p, err := pl.Next(ctx); !errors.Is(err, io.EOF) || pl.Ready() != 0 {
		t.Errorf("after Close: %v, %v, %d ready; want io.EOF and an empty buffer", p, err, pl.Ready())
	}
	// A cancelled context ends a wait.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	pl2 := NewPipeline(signedGenerator(t, w, nil), testSigner(), PipelineOptions{Workers: 1, Buffer: 1})
	defer pl2.Close()
	for i := 0; ; i++ {
		_, err := pl2.Next(cctx)
		if errors.Is(err, context.Canceled) {
			break
		}
		if i > 100 {
			t.Fatal("Next keeps answering with a cancelled context")
		}
	}
}

func TestPipelineBuffer(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int
	}{
		{0, 256},       // no rate: the floor
		{10, 256},      // low rates: the floor keeps a margin
		{1000, 1000},   // one second
		{1e6, 16384},   // capped
		{-1, 256},      // nonsense: the floor
		{1000.5, 1001}, // rounded up
	} {
		if got := PipelineBuffer(c.rate); got != c.want {
			t.Errorf("PipelineBuffer(%g) = %d, want %d", c.rate, got, c.want)
		}
	}
}

func TestPipelineStarvationIsTheGenerators(t *testing.T) {
	// 1000 sends due within 5 ms: no signer on any machine keeps up (RSA
	// signing costs ~0.1 ms on the fastest core), so sends wait for the
	// source, and the record blames the generator.
	w := testWorld(t, 1, 2)
	pl := NewPipeline(signedGenerator(t, w, nil), testSigner(), PipelineOptions{Buffer: 8})
	defer pl.Close()
	sink := rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, http.StatusAccepted, nil), nil })
	res, err := recorded(context.Background(), flood.Plan{Limits: flood.Limits{MaxSends: 1000}, Pacer: mustConstant(t, 200000), Source: pl, Transport: sink,
		Sleep: time.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := res.Record(record.Settings{Signing: string(SigningPipeline)})
	if err != nil {
		t.Fatal(err)
	}
	if c := rec.Overall.Counts; c.Starved == 0 || !rec.Bottleneck.Generator {
		t.Errorf("starved %d of %d, generator-bound %v (%v): want starvation blamed on the generator",
			c.Starved, c.Offered, rec.Bottleneck.Generator, rec.Bottleneck.Reasons)
	}
}

func TestPresign(t *testing.T) {
	w := testWorld(t, 1, 2)
	v := worldVerifier(w)
	var follows atomic.Int64
	g := signedGenerator(t, w, func(FollowRegistration) { follows.Add(1) })
	ps, err := Presign(context.Background(), g, testSigner(), 50, PresignOptions{Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if ps.Len() != 50 || ps.Took <= 0 || ps.Bytes <= 0 {
		t.Fatalf("Len %d, Took %v, Bytes %d", ps.Len(), ps.Took, ps.Bytes)
	}
	sigs := map[string]bool{}
	nFollow := int64(0)
	for i := range 50 {
		p, err := ps.Next(context.Background())
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		checkPrepared(t, v, p)
		sigs[p.Header.Get("Signature")] = true
		if p.Type == record.TypeFollow {
			nFollow++
		}
	}
	if _, err := ps.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Errorf("after 50: %v, want io.EOF", err)
	}
	// Presigning drafts Follows; none is registered until it is sent.
	if len(sigs) != 50 || nFollow == 0 || follows.Load() != 0 {
		t.Errorf("%d distinct of 50; %d follows registered for %d drafted", len(sigs), follows.Load(), nFollow)
	}
}

func TestPresignRefusesBeforeSigning(t *testing.T) {
	w := testWorld(t, 1, 1)
	for _, c := range []struct {
		name string
		n    int64
		o    PresignOptions
		say  string
	}{
		{"a window the Dates would not survive", 10, PresignOptions{Window: 58 * time.Minute}, "1h0m0s old"},
		{"absurd memory", 1 << 40, PresignOptions{Window: time.Minute}, "GiB"},
		{"over an explicit limit", 1000, PresignOptions{Window: time.Minute, MaxBytes: 1 << 20}, "GiB"},
		{"nothing to sign", 0, PresignOptions{Window: time.Minute}, "nothing"},
	} {
		var follows atomic.Int64
		g := signedGenerator(t, w, func(FollowRegistration) { follows.Add(1) })
		_, err := Presign(context.Background(), g, testSigner(), c.n, c.o)
		if !errors.Is(err, flood.ErrInvalidPlan) || !strings.Contains(err.Error(), c.say) {
			t.Errorf("%s: %v, want ErrInvalidPlan saying %q", c.name, err, c.say)
		}
		if g.seq.Load() != 0 || follows.Load() != 0 {
			t.Errorf("%s: %d drafted before refusing", c.name, g.seq.Load())
		}
	}
	// Interrupted: the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Presign(ctx, signedGenerator(t, w, nil), testSigner(), 100, PresignOptions{Window: time.Minute}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestPresignCount(t *testing.T) {
	for _, c := range []struct {
		arrivals flood.Arrivals
		rate     float64
		d        time.Duration
		max      int64
		want     int64
	}{
		{"constant", 100, 10 * time.Second, 0, 1000},      // rate × seconds
		{"constant", 3, 1500 * time.Millisecond, 0, 5},    // ceil(4.5)
		{"constant", 100, 10 * time.Second, 50, 50},       // max-sends is smaller
		{"constant", 100, 10 * time.Second, 5000, 1000},   // the schedule is smaller
		{"constant", 100, 0, 70, 70},                      // bounded by sends only
		{"poisson", 100, 10 * time.Second, 0, 1000 + 168}, // + 5 σ + 10: ceil(1000 + 158.1 + 10)
	} {
		if got := PresignCount(c.arrivals, c.rate, c.d, c.max); got != c.want {
			t.Errorf("PresignCount(%s, %g, %v, %d) = %d, want %d", c.arrivals, c.rate, c.d, c.max, got, c.want)
		}
	}
}

func TestJIT(t *testing.T) {
	w := testWorld(t, 1, 2)
	v := worldVerifier(w)
	j := NewJIT(signedGenerator(t, w, nil), testSigner(), nil)
	for range 5 {
		p, err := j.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		checkPrepared(t, v, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := j.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestEverySigningModeIsAccepted floods a TLS sink that verifies every
// signature as an inbox does, once per signing mode: every send must be
// answered 202.
func TestEverySigningModeIsAccepted(t *testing.T) {
	w := testWorld(t, 1, 3)
	v := worldVerifier(w)
	var bad atomic.Int64
	sink := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if _, err := v.Verify(r.Context(), r, body); err != nil || r.Host != "sut.test" || r.URL.Path != "/inbox" {
			bad.Add(1)
			http.Error(rw, fmt.Sprint(err), http.StatusUnauthorized)
			return
		}
		rw.WriteHeader(http.StatusAccepted)
	}))
	defer sink.Close()
	tr := flood.NewTransport(64, 0, &tls.Config{InsecureSkipVerify: true}) // the sink's test certificate names example.com
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, sink.Listener.Addr().String())
	}
	defer tr.CloseIdleConnections()
	const n = 40
	for _, mode := range []SigningMode{SigningPipeline, SigningPresign, SigningJIT} {
		t.Run(string(mode), func(t *testing.T) {
			g := signedGenerator(t, w, nil)
			var src flood.Source
			switch mode {
			case SigningPipeline:
				pl := NewPipeline(g, testSigner(), PipelineOptions{Buffer: 8})
				defer pl.Close()
				src = pl
			case SigningPresign:
				ps, err := Presign(context.Background(), g, testSigner(), n, PresignOptions{Window: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				src = ps
			case SigningJIT:
				src = NewJIT(g, testSigner(), nil)
			}
			res, err := recorded(context.Background(), flood.Plan{Limits: flood.Limits{MaxSends: n, MaxInflight: 64}, Pacer: mustConstant(t, 200), Source: src, Transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			o := res.Overall
			// Drops may happen on a loaded machine (TLS handshakes under
			// -race); every request sent must be accepted.
			if o.Counts.Offered != n || o.Counts.Sent == 0 || o.Tally.Classes[record.Class202] != o.Counts.Sent || bad.Load() != 0 {
				t.Errorf("sent %d, 202 %d, tally %+v (sink refused %d; counts %+v, partial %q): want all %d offered, every one sent accepted", o.Counts.Sent, o.Tally.Classes[record.Class202], o.Tally, bad.Load(), o.Counts, res.Reason, n)
			}
		})
	}
}

// TestSignerNiceBeside: auto signs at 0 beside a dispatcher the kernel
// runs the moment it wakes (a real-time policy), at 19 beside any other.
func TestSignerNiceBeside(t *testing.T) {
	for _, c := range []struct {
		policy string
		want   int
	}{
		{"deadline", 0}, // real-time: takes the core when a send is due
		{"fifo", 0},     // real-time, where deadline was refused
		{"rr", 0},       // real-time, the crowd started under chrt -r
		{"other", 19},   // the normal policy: waits behind a signer's time slice
		{"batch", 19},   // the crowd started under chrt -b
		{"", 19},        // no thread of its own: above 10 000/s, or off Linux
	} {
		if got := SignerNiceBeside(record.Dispatcher{Policy: c.policy}); got != c.want {
			t.Errorf("beside a dispatcher under %q: %d, want %d", c.policy, got, c.want)
		}
	}
}

// TestParseSignerNice: --signer-nice takes auto or 0 to 19, and says so.
func TestParseSignerNice(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"auto", NiceAuto, true},  // the default
		{"AUTO ", NiceAuto, true}, // any case, spaces around
		{"0", 0, true},            // the crowd's own priority
		{"19", 19, true},          // the lowest
		{" 7", 7, true},           // between
		{"20", 0, false},          // beyond the lowest
		{"-1", 0, false},          // a raise: not the signers' to take
		{"low", 0, false},         // a word
		{"", 0, false},            // nothing
	} {
		got, err := ParseSignerNice(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseSignerNice(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--signer-nice") {
			t.Errorf("ParseSignerNice(%q): %q does not name the flag", c.in, err)
		}
		if err == nil {
			if back, _ := ParseSignerNice(FormatSignerNice(got)); back != got {
				t.Errorf("FormatSignerNice(%d) = %q reads back as %d", got, FormatSignerNice(got), back)
			}
		}
	}
}

// TestSignerYields: a signer yields after each signature unless its
// goroutine is pinned to a thread the kernel takes the CPU from anyway
// (under SCHED_IDLE, or beside a real-time dispatcher), and always after
// readying a dispatcher that waited on an empty buffer.
func TestSignerYields(t *testing.T) {
	for _, c := range []struct {
		name                                    string
		pinned, idle, realTime, dispatcherWaits bool
		want                                    bool
	}{
		// The runtime's goroutine: its P serves others between signatures.
		{"unpinned", false, false, true, false, true},
		// At 19 under SCHED_IDLE: any thread that wakes takes the CPU.
		{"idle", true, true, false, false, false},
		// At 0 beside a real-time dispatcher: it takes the CPU as it wakes.
		{"beside a real-time dispatcher", true, false, true, false, false},
		// A nice value beside a normal dispatcher: the yield hands the CPU over.
		{"pinned, neither", true, false, false, false, true},
		// The dispatcher readied on this P: it must not wait behind a signature.
		{"idle, dispatcher waits", true, true, false, true, true},
		{"real-time, dispatcher waits", true, false, true, true, true},
	} {
		if got := signerYields(c.pinned, c.idle, c.realTime, c.dispatcherWaits); got != c.want {
			t.Errorf("%s: signerYields = %v, want %v", c.name, got, c.want)
		}
	}
}
