package flood

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/h1"
)

// sharedRate is a rate above preciseRateMax, where dispatchers may share
// the schedule.
const sharedRate = 2 * preciseRateMax

// presignedSource is a Source whose requests are all made before the run
// (AlwaysReady, unless notAlways), numbered from 1 in their tokens. It
// notes whether Next was ever called while another call was under way,
// and ends as end says at call endAt (0: never).
type presignedSource struct {
	u         *url.URL
	notAlways bool // NextReady alone, not AlwaysReady
	endAt     int
	end       func() (*Prepared, error)

	in      atomic.Bool // a Next is under way
	overlap atomic.Bool // a Next began while another was under way
	n       int         // the calls made (the Source's own: Next's callers take turns)
}

func newPresignedSource(t *testing.T, target string) *presignedSource {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	return &presignedSource{u: u}
}

func (s *presignedSource) Next(context.Context) (*Prepared, error) {
	if s.in.Swap(true) {
		s.overlap.Store(true)
	}
	defer s.in.Store(false)
	s.n++
	if s.n == s.endAt {
		return s.end()
	}
	return &Prepared{Type: "Create", Method: http.MethodPost, URL: s.u, Token: s.n,
		Header: http.Header{"Content-Type": {"application/activity+json"}},
		Body:   []byte(`{"type":"Create"}`)}, nil
}

func (s *presignedSource) NextReady() bool   { return true }
func (s *presignedSource) AlwaysReady() bool { return !s.notAlways }

// withProcs runs the test with GOMAXPROCS n, as many dispatchers as
// share a schedule.
func withProcs(t *testing.T, n int) {
	was := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
}

// settledTokens is a collector keeping each settlement's token and
// Outcome (its Delivery copied), and the shards the answers came on.
type settledTokens struct {
	mu       sync.Mutex
	tokens   []any
	outcomes []record.Outcome
	shards   map[int]int // answers filed by shard, of the sends a dispatcher wrote
}

func (s *settledTokens) Begin(record.Schedule) {}
func (s *settledTokens) Offered(record.Offer)  {}
func (s *settledTokens) End(record.Stop)       {}
func (s *settledTokens) Answered(shard int, d *record.Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shards == nil {
		s.shards = map[int]int{}
	}
	if d.Written {
		s.shards[shard]++
	}
}
func (s *settledTokens) Settled(token any, o record.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.Delivery != nil {
		o.Delivery = new(*o.Delivery)
	}
	s.tokens = append(s.tokens, token)
	s.outcomes = append(s.outcomes, o)
}

// intended is when o's send was due: its Delivery's, or its Offer's
// when it was not sent.
func intended(o record.Outcome) time.Duration {
	if o.Delivery != nil {
		return o.Delivery.Intended
	}
	return o.Offer.Due
}

// wholeAnswers is a real listener answering every request with a whole
// 202.
func wholeAnswers(t *testing.T) string {
	return "http://" + partsServer(t, []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok"}, 0, false) + "/inbox"
}

// TestDispatchersShareTheSchedule: above 5 000/s, with a Source that
// never waits and the fast client over plain HTTP, one dispatcher a
// core shares the schedule: the record says how many; the Source's Next
// is never called by two at once; every send of the schedule is made
// once, at its own intended time, and settled once; and each dispatcher
// reads answers to what it wrote, on its own shard. Against a real
// listener on the loopback.
func TestDispatchersShareTheSchedule(t *testing.T) {
	needLoopWaits(t)
	for _, c := range []struct {
		name string
		rate float64
	}{
		// Their loops quiet, each reading after its own sends.
		{"quiet", quietRateMax * 4 / 5},
		// Their loops waking for each answer.
		{"waking for each answer", sharedRate},
	} {
		t.Run(c.name, func(t *testing.T) { shareTheSchedule(t, c.rate) })
	}
}

func shareTheSchedule(t *testing.T, rate float64) {
	withProcs(t, 2)
	src := newPresignedSource(t, wholeAnswers(t))
	tr := NewClientTransport(TransportOptions{Client: ClientFast})
	defer tr.CloseIdleConnections()
	const sends = 3000
	pacer := mustConstant(t, rate)
	log := &settledTokens{}
	res := mustRun(t, context.Background(), Plan{Pacer: pacer, Source: src, Transport: tr, Limits: Limits{MaxSends: sends, MaxInflight: 32}}, log)

	if res.Dispatcher.Threads != 2 {
		t.Errorf("the record says %d dispatchers shared the schedule, want 2: %+v", res.Dispatcher.Threads, res.Dispatcher)
	}
	if res.Partial {
		t.Errorf("the run ended partial: %v", res.Reason)
	}
	if src.overlap.Load() {
		t.Error("Next was called while another call was under way")
	}
	if src.n != sends {
		t.Errorf("Next was called %d times, want %d", src.n, sends)
	}
	// Every token settled once, and the sends' intended times are the
	// schedule's, each once.
	seen := map[any]bool{}
	var due []time.Duration
	for k, tok := range log.tokens {
		if seen[tok] {
			t.Fatalf("token %v settled twice", tok)
		}
		seen[tok] = true
		due = append(due, intended(log.outcomes[k]))
	}
	if len(seen) != sends {
		t.Fatalf("%d requests settled, want %d", len(seen), sends)
	}
	slices.Sort(due)
	for n, d := range due {
		if want := pacer.Offset(int64(n)); d != want {
			t.Fatalf("the %d-th send was due at %v, want %v", n, d, want)
		}
	}
	// Each answered 202, but those dropped while the first connections
	// were dialled (open loop: never delayed).
	for _, o := range log.outcomes {
		if !o.Offer.Dropped && (o.Delivery == nil || o.Class != record.Class202) {
			t.Fatalf("a send ended %+v, want answered 202 or dropped", o)
		}
	}
	// Each dispatcher read answers to what it wrote, on its own shard.
	if log.shards[0] == 0 || log.shards[1] == 0 {
		t.Errorf("the dispatchers read %d and %d answers to what they wrote (shards 0, 1), want each to read some: %v", log.shards[0], log.shards[1], log.shards)
	}
}

// TestWhoSharesTheSchedule: dispatchers share the schedule only above
// 5 000/s (above 10 000/s where the real-time policy is asked for
// outright, which one thread of its own takes up to there), with a Source
// that never waits, a transport they write on and more than one core;
// otherwise one dispatcher runs it, as before.
func TestWhoSharesTheSchedule(t *testing.T) {
	needLoopWaits(t)
	for _, c := range []struct {
		name      string
		rate      float64
		prio      Priority
		notAlways bool
		client    Client
		procs     int
		threads   int
		refused   string // in the record's Refused; "" for none; "?" unchecked (the kernel's say)
	}{
		// All of it: one dispatcher a core.
		{"presigned, fast client, two cores", sharedRate, "", false, ClientFast, 2, 2, "keep the policy the crowd runs under"},
		// As many as the cores.
		{"three cores", sharedRate, "", false, ClientFast, 3, 3, "keep the policy the crowd runs under"},
		// One core: one dispatcher.
		{"one core", sharedRate, "", false, ClientFast, 1, 0, "shares its thread"},
		// Above auto's real-time rates, up to 10 000/s too: one dispatcher a core.
		{"above auto's real-time rates", sharedRateMin + 1, "", false, ClientFast, 2, 2, "above 5000/s the 2 dispatchers keep the policy the crowd runs under"},
		// The normal policy asked for: the same.
		{"normal asked for", preciseRateMax, PriorityNormal, false, ClientFast, 2, 2, ""},
		// Real-time asked for outright: one dispatcher, on a thread of its own to raise.
		{"realtime asked for", preciseRateMax, PriorityRealtime, false, ClientFast, 2, 0, "?"},
		// Up to auto's real-time rates: one dispatcher, on a thread of its own.
		{"at auto's real-time rates", sharedRateMin, "", false, ClientFast, 2, 0, "?"},
		// A Source that may wait (a pipeline): one dispatcher.
		{"a Source that may wait", sharedRate, "", true, ClientFast, 2, 0, "shares its thread"},
		// net/http's client: no dispatcher writes, one dispatcher.
		{"net/http", sharedRate, "", false, ClientNetHTTP, 2, 0, "shares its thread"},
		// Over TLS, whose bytes no loop reads: one dispatcher.
		{"https", sharedRate, "", false, ClientFast, 2, 0, "shares its thread"},
	} {
		t.Run(c.name, func(t *testing.T) {
			withProcs(t, c.procs)
			target, tlsConfig := wholeAnswers(t), (*tls.Config)(nil)
			if c.name == "https" {
				srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }))
				t.Cleanup(srv.Close)
				target, tlsConfig = srv.URL+"/inbox", &tls.Config{RootCAs: x509.NewCertPool()}
				tlsConfig.RootCAs.AddCert(srv.Certificate())
			}
			src := newPresignedSource(t, target)
			src.notAlways = c.notAlways
			tr := NewClientTransport(TransportOptions{Client: c.client, TLS: tlsConfig})
			defer tr.CloseIdleConnections()
			log := &settledTokens{}
			res := mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, c.rate), Source: src, Transport: tr, Priority: c.prio, Limits: Limits{MaxSends: 200}}, log)
			if res.Dispatcher.Threads != c.threads {
				t.Errorf("%d dispatchers shared the schedule, want %d: %+v", res.Dispatcher.Threads, c.threads, res.Dispatcher)
			}
			switch refused := res.Dispatcher.Refused; {
			case c.refused == "?":
			case c.refused == "" && refused != "":
				t.Errorf("the record says %q was refused, want nothing refused", refused)
			case !strings.Contains(refused, c.refused):
				t.Errorf("the record says %q was refused, want it to name %q", refused, c.refused)
			}
			if want := string(cmp.Or(c.prio, DefaultPriority)); res.Dispatcher.Priority != want {
				t.Errorf("the record says priority %q was asked for, want %q", res.Dispatcher.Priority, want)
			}
			if len(log.tokens) != 200 {
				t.Errorf("%d requests settled, want 200", len(log.tokens))
			}
		})
	}
}

// TestSharedLoopsWakeForEachAnswerAboveTheQuietRate: the dispatchers that
// share a schedule up to quietRateMax sleep to their next sends and read
// the answers come since after each (quiet), where the kernel stamps
// them; above it, their sends too close for a wait to save a wake-up,
// they wake for each answer, however many share it.
func TestSharedLoopsWakeForEachAnswerAboveTheQuietRate(t *testing.T) {
	needLoopWaits(t)
	for _, c := range []struct {
		name  string
		rate  float64
		procs int // one dispatcher each
		quiet bool
	}{
		// Just above auto's real-time rates, where two first share it: quiet.
		{"above sharedRateMin", sharedRateMin + 1, 2, true},
		// Two at quietRateMax: quiet still.
		{"two at the quiet rate", quietRateMax, 2, true},
		// Just above it: each answer as it comes.
		{"two above it", quietRateMax + 1, 2, false},
		// Far above it: the same.
		{"two far above it", sharedRate, 2, false},
		// Three at it: quiet.
		{"three at it", quietRateMax, 3, true},
		// Three just above it, though each sends less than two did at
		// it: each answer as it comes, as measured only with two.
		{"three above it", quietRateMax + 1, 3, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			withProcs(t, c.procs)
			tr := NewClientTransport(TransportOptions{Client: ClientFast})
			defer tr.CloseIdleConnections()
			p := Plan{Pacer: mustConstant(t, c.rate), Source: newPresignedSource(t, wholeAnswers(t)), Transport: tr, Limits: Limits{MaxSends: 1}}
			if err := p.normalize(); err != nil {
				t.Fatal(err)
			}
			e := newEngine(t.Context(), p, &settledTokens{})
			ds := e.sharedDispatchers()
			for _, d := range ds {
				defer d.loop.close(&e.crew)
			}
			if len(ds) != c.procs {
				t.Fatalf("%d dispatchers may share the schedule, want %d", len(ds), c.procs)
			}
			for k, d := range ds {
				if got := d.loop.quiet(); got != c.quiet {
					t.Errorf("dispatcher %d's loop quiet: %v, want %v", k, got, c.quiet)
				}
			}
		})
	}
}

// procsSeen is a presignedSource noting the most GOMAXPROCS its Next saw
// (its callers are the dispatchers, so it runs while they hold their Ps).
type procsSeen struct {
	*presignedSource
	most int
}

func (s *procsSeen) Next(ctx context.Context) (*Prepared, error) {
	s.most = max(s.most, runtime.GOMAXPROCS(0))
	return s.presignedSource.Next(ctx)
}

// TestSharedDispatchersSpareProcs: while dispatchers share the schedule,
// each holding a P as it waits in a system call, the run adds a P for
// each, and gives them back when it ends; a run of one dispatcher adds
// none.
func TestSharedDispatchersSpareProcs(t *testing.T) {
	needLoopWaits(t)
	for _, c := range []struct {
		name      string
		rate      float64
		threads   int // dispatchers sharing the schedule
		wantProcs int // GOMAXPROCS during the run
	}{
		// Two dispatchers: two Ps more.
		{"shared", sharedRate, 2, 4},
		// One dispatcher on a thread of its own: none added.
		{"one dispatcher", sharedRateMin, 0, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			withProcs(t, 2)
			src := &procsSeen{presignedSource: newPresignedSource(t, wholeAnswers(t))}
			tr := NewClientTransport(TransportOptions{Client: ClientFast})
			defer tr.CloseIdleConnections()
			res := mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, c.rate), Source: src, Transport: tr, Limits: Limits{MaxSends: 300}})
			if res.Dispatcher.Threads != c.threads {
				t.Fatalf("%d dispatchers shared the schedule, want %d", res.Dispatcher.Threads, c.threads)
			}
			if src.most != c.wantProcs {
				t.Errorf("GOMAXPROCS during the run: %d, want %d", src.most, c.wantProcs)
			}
			if after := runtime.GOMAXPROCS(0); after != 2 {
				t.Errorf("GOMAXPROCS after the run: %d, want 2 again", after)
			}
		})
	}
}

// TestSharedScheduleEnds: a shared schedule ends for every dispatcher as
// it would for one: interrupted, or at the Source's end or error, the
// record saying why, every request taken from the Source settled once.
func TestSharedScheduleEnds(t *testing.T) {
	needLoopWaits(t)
	withProcs(t, 2)
	broke := errors.New("the pool broke")
	for _, c := range []struct {
		name   string
		endAt  int
		end    func() (*Prepared, error)
		cancel time.Duration // interrupt the run this long after its start (0: never)
		reason record.StopReason
	}{
		// Interrupted mid-run.
		{"interrupted", 0, nil, 100 * time.Millisecond, record.ReasonInterrupted},
		// The Source runs out.
		{"exhausted", 1500, func() (*Prepared, error) { return nil, io.EOF }, 0, record.ReasonExhausted},
		// The Source fails.
		{"source error", 1500, func() (*Prepared, error) { return nil, broke }, 0, record.ReasonError("source error", broke)},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newPresignedSource(t, wholeAnswers(t))
			src.endAt, src.end = c.endAt, c.end
			tr := NewClientTransport(TransportOptions{Client: ClientFast})
			defer tr.CloseIdleConnections()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel > 0 {
				time.AfterFunc(c.cancel, cancel)
			}
			log := &settledTokens{}
			began := time.Now()
			res := mustRun(t, ctx, Plan{Pacer: mustConstant(t, sharedRate), Source: src, Transport: tr, Limits: Limits{Duration: 5 * time.Second}}, log)
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("the run took %v to end, want it to end at once", took)
			}
			if res.Dispatcher.Threads != 2 {
				t.Fatalf("%d dispatchers shared the schedule, want 2", res.Dispatcher.Threads)
			}
			if !res.Partial || res.Reason != c.reason {
				t.Errorf("the run ended partial %v, %q; want partial, %q", res.Partial, res.Reason, c.reason)
			}
			taken := src.n
			if c.endAt > 0 {
				taken-- // the call that ended it gave no request
			}
			seen := map[any]bool{}
			for _, tok := range log.tokens {
				if seen[tok] {
					t.Fatalf("token %v settled twice", tok)
				}
				seen[tok] = true
			}
			if len(seen) != taken {
				t.Errorf("%d requests settled of the %d taken: none may be lost", len(seen), taken)
			}
		})
	}
}

// TestSharedScheduleEndsItsCallerAsItEnded: a panic or a Goexit of the
// Source on one of the dispatchers stops the others and ends Run's
// caller as it would have had the schedule run there.
func TestSharedScheduleEndsItsCallerAsItEnded(t *testing.T) {
	needLoopWaits(t)
	withProcs(t, 2)
	for _, c := range []struct {
		name       string
		end        func() (*Prepared, error)
		wantPanic  bool
		wantReturn bool
	}{
		// A panic reaches the caller.
		{"a panic", func() (*Prepared, error) { panic("the pool broke") }, true, false},
		// A Goexit (a test's t.Fatal) ends the caller.
		{"a Goexit", func() (*Prepared, error) { runtime.Goexit(); return nil, nil }, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newPresignedSource(t, wholeAnswers(t))
			// The call that ends the schedule takes a while first, so that
			// the other dispatcher waits for the feed meanwhile.
			src.endAt, src.end = 500, func() (*Prepared, error) {
				time.Sleep(20 * time.Millisecond)
				return c.end()
			}
			tr := NewClientTransport(TransportOptions{Client: ClientFast})
			defer tr.CloseIdleConnections()
			ended := make(chan ending, 1)
			began := time.Now()
			go func() {
				end := ending{}
				defer end.send(ended)
				_ = Run(context.Background(), Plan{Pacer: mustConstant(t, sharedRate), Source: src, Transport: tr, Limits: Limits{Duration: 5 * time.Second}}, Nop{})
				end.returned = true
			}()
			end := <-ended
			if (end.panicked != nil) != c.wantPanic || end.returned != c.wantReturn {
				t.Errorf("Run's caller ended with panic %v, returned %v; want a panic %v, returned %v", end.panicked, end.returned, c.wantPanic, c.wantReturn)
			}
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("the caller ended %v after the start, want the other dispatcher stopped at once", took)
			}
			if src.n != 500 {
				t.Errorf("Next was called %d times, want none after the call that ended the schedule (500)", src.n)
			}
		})
	}
}

// TestLoopsHandOverASocket: a socket one dispatcher's loop watched and
// another's now writes on leaves the first loop's epoll, so that its
// answers wake only the loop that awaits them. Over a real connection.
func TestLoopsHandOverASocket(t *testing.T) {
	needLoopWaits(t)
	target := wholeAnswers(t)
	tr := h1.NewTransport(h1.Options{})
	defer tr.CloseIdleConnections()
	e := &crew{written: tr, ctx: t.Context()}
	loops := []*answerLoop{newAnswerLoop(e, 0), newAnswerLoop(e, 1)}
	defer loops[1].close(e)
	u, _ := url.Parse(target)
	post := func() *http.Request {
		req, _ := http.NewRequest(http.MethodPost, target, nil)
		req.URL = u
		return req
	}
	// A first round trip leaves a connection resting.
	resp, err := tr.RoundTrip(post())
	if err != nil {
		t.Fatal(err)
	}
	drainBody(t, resp)
	for turn, k := range []int{0, 1, 1, 0} {
		w, ok, err := tr.Write(post(), k, time.Now().Add(5*time.Second))
		if !ok || err != nil {
			t.Fatalf("turn %d: no write on the resting connection: %v %v", turn, ok, err)
		}
		s, ok := w.Socket()
		if !ok {
			t.Fatalf("turn %d: no socket", turn)
		}
		if !e.sockets.watch(loops[k], s) {
			t.Fatalf("turn %d: loop %d does not watch the socket", turn, k)
		}
		if !heard(loops[k], s.FD, time.Second) {
			t.Errorf("turn %d: loop %d, which watches the socket, did not hear the answer", turn, k)
		}
		if other := loops[1-k]; heard(other, s.FD, 50*time.Millisecond) {
			t.Errorf("turn %d: loop %d heard the answer on a socket loop %d took", turn, 1-k, k)
		}
		resp, err := tr.Read(context.Background(), w)
		if err != nil {
			t.Fatal(err)
		}
		drainBody(t, resp)
	}
	// A closing loop forgets its sockets.
	loops[0].close(e)
	for fd, w := range e.sockets.by {
		if w.l != loops[1] {
			t.Errorf("descriptor %d is still the closed loop's", fd)
		}
	}
}

// heard reports whether l's epoll reports fd readable within d.
func heard(l *answerLoop, fd int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for left := d; left > 0; left = time.Until(deadline) {
		evs, _ := l.set.Wait(left)
		for _, ev := range evs {
			if int(ev.Fd) == fd {
				return true
			}
		}
	}
	return false
}

func drainBody(t *testing.T, resp *http.Response) {
	t.Helper()
	buf := make([]byte, 64)
	for {
		_, err := resp.Body.Read(buf)
		if err != nil {
			break
		}
	}
	resp.Body.Close()
}
