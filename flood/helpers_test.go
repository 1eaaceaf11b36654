package flood

import (
	"context"
	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"testing"
	"time"
)

// rtFunc adapts a function to http.RoundTripper.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answer returns a response with status code and an empty body.
func answer(req *http.Request, code int, hdr http.Header) *http.Response {
	if hdr == nil {
		hdr = http.Header{}
	}
	return &http.Response{StatusCode: code, Header: hdr, Body: http.NoBody, Request: req}
}

// gotConn reports the connection to the request's trace, as http.Transport
// does once a pooled or new connection is ready.
func gotConn(req *http.Request) {
	if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.GotConn != nil {
		tr.GotConn(httptrace.GotConnInfo{})
	}
}

// cycleSource hands out prepared POSTs whose types cycle through types.
type cycleSource struct {
	mu    sync.Mutex
	preps []*Prepared
	n     int
}

func newCycleSource(t testing.TB, target string, types ...string) *cycleSource {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	if len(types) == 0 {
		types = []string{"Create"}
	}
	s := &cycleSource{}
	for _, typ := range types {
		s.preps = append(s.preps, &Prepared{
			Type:   typ,
			Method: http.MethodPost,
			URL:    u,
			Header: http.Header{"Content-Type": {"application/activity+json"}},
			Body:   []byte(`{"type":"` + typ + `"}`),
		})
	}
	return s
}

func (s *cycleSource) Next(context.Context) (*Prepared, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.preps[s.n%len(s.preps)]
	s.n++
	return p, nil
}

func mustConstant(t testing.TB, rate float64) *ConstantPacer {
	t.Helper()
	p, err := NewConstantPacer(rate)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRun(t testing.TB, ctx context.Context, p Plan) *Result {
	t.Helper()
	res, err := Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

// fakeStats records n completed sends (as a recorder files them): latency lat(i), service half of it,
// lateness lat(i)/10, status class cls(i) (Retry-After on 429s).
func fakeStats(n int, lat func(i int) time.Duration, cls func(i int) Class) *Stats {
	st := NewStats()
	for i := range n {
		l := lat(i)
		c := cls(i)
		st.record(c, l, l/2, l/10)
		st.Tally.add(c, c == Class429)
	}
	st.Counts = Counts{Offered: int64(n), Sent: int64(n), Completed: int64(n)}
	return st
}

// fakeResult is a finished run with the given per-type stats.
func fakeResult(start time.Time, measured time.Duration, types map[string]*Stats) *Result {
	r := &Result{
		Start: start, End: start.Add(measured + 50*time.Millisecond), Elapsed: measured, Measured: measured,
		Overall: NewStats(), Types: types, Dispatch: newHist(),
		Rate: 100, Duration: measured, MaxInflight: 100, Timeout: 10 * time.Second,
	}
	for _, st := range types {
		r.Overall.Merge(st)
		for range st.Counts.Sent {
			recordDur(r.Dispatch, 50*time.Microsecond)
		}
	}
	for s := 1; s <= int(measured/time.Second); s++ {
		r.Timeline = append(r.Timeline, Tick{T: s, Span: 1, Offered: 100, Sent: 100, Completed: 100, OK: 99, Errors: 1,
			LatencyP50: 2000, LatencyP99: 9000, LatencyMax: 12000, LatenessP99: 300})
	}
	return r
}

func always(c Class) func(int) Class { return func(int) Class { return c } }

// every returns class c for every k-th send and 202 otherwise.
func every(k int, c Class) func(int) Class {
	return func(i int) Class {
		if i%k == k-1 {
			return c
		}
		return Class202
	}
}

// hdrNew builds a histogram of any geometry (to test refusals).
func hdrNew(lo, hi int64, sig int) *hdr.Histogram { return hdr.New(lo, hi, sig) }

// pipeListener is an in-memory network for a real http.Server and a real
// http.Transport: each dial is one net.Pipe whose other end Accept returns.
// It lets tests of the whole HTTP stack run under testing/synctest, whose
// fake clock stands still while a goroutine waits on a real socket.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// DialContext connects to the listener, whatever the address; it has the
// signature of http.Transport.DialContext.
func (l *pipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// servePipe serves h on a new pipeListener until the test ends, and returns
// the listener to dial. Under synctest, call it inside the bubble.
func servePipe(t *testing.T, h http.Handler) *pipeListener {
	l := newPipeListener()
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})
	return l
}
