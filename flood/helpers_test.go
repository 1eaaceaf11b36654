package flood

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
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

// answersAfter is a SUT that answers 202 after d, or gives up when the
// send is cancelled (the run interrupted).
func answersAfter(d time.Duration) rtFunc {
	return func(req *http.Request) (*http.Response, error) {
		select {
		case <-time.After(d):
			return answer(req, 202, nil), nil
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
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
			Type:   record.ActivityKind(typ),
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

func mustRun(t testing.TB, ctx context.Context, p Plan, also ...Collector) *record.Result {
	t.Helper()
	res, err := recorded(ctx, p, also...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// recorded runs p into a fresh record.Recorder, with also beside it, and
// returns the Recorder's Result.
func recorded(ctx context.Context, p Plan, also ...Collector) (*record.Result, error) {
	return recordedWith(ctx, p, record.RecorderOptions{}, also...)
}

// recordedWith is recorded with the Recorder's options o.
func recordedWith(ctx context.Context, p Plan, o record.RecorderOptions, also ...Collector) (*record.Result, error) {
	rec := record.NewRecorder(o)
	if err := Run(ctx, p, Collectors(append([]Collector{rec}, also...)...)); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// settledFunc is a Collector that hears only the settlements.
type settledFunc func(token any, o record.Outcome)

func (f settledFunc) Begin(record.Schedule)               {}
func (f settledFunc) Offered(record.Offer)                {}
func (f settledFunc) Answered(int, *record.Delivery)      {}
func (f settledFunc) Settled(token any, o record.Outcome) { f(token, o) }
func (f settledFunc) End(record.Stop)                     {}

// outcomeLog is a Collector keeping every settlement's Outcome, its
// Delivery copied (the worker's is valid only during the call).
type outcomeLog struct {
	mu       sync.Mutex
	outcomes []record.Outcome
}

func (l *outcomeLog) collector() Collector {
	return settledFunc(func(_ any, o record.Outcome) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if o.Delivery != nil {
			o.Delivery = new(*o.Delivery)
		}
		l.outcomes = append(l.outcomes, o)
	})
}

// sourceKind is what a test's Source says of its Next (NextReady).
type sourceKind int

const (
	alwaysReady sourceKind = iota // ready every time
	neverReady                    // ready never
	silent                        // no NextReady at all
)

// of is src saying k.
func (k sourceKind) of(src Source) Source {
	if k == silent {
		return src
	}
	return readySource{src, k == alwaysReady}
}

// readySource is a Source whose NextReady says ready.
type readySource struct {
	Source
	ready bool
}

func (r readySource) NextReady() bool { return r.ready }

// clients are the flood's HTTP clients: the tests of what the sender
// measures over real connections run with each.
var clients = []Client{ClientNetHTTP, ClientFast}

// forClients runs f as a subtest per client.
func forClients(t *testing.T, f func(t *testing.T, client Client)) {
	for _, c := range clients {
		t.Run(string(c), func(t *testing.T) { f(t, c) })
	}
}
