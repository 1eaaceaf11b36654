package traffic

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// The engine's test helpers (flood/helpers_test.go) that the traffic's
// tests of a whole flood need: a SUT in a function, a pacer, a recorded
// run and an in-memory network for synctest.

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

func mustConstant(t testing.TB, rate float64) *flood.ConstantPacer {
	t.Helper()
	p, err := flood.NewConstantPacer(rate)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRun(t testing.TB, ctx context.Context, p flood.Plan, also ...flood.Collector) *record.Result {
	t.Helper()
	res, err := recorded(ctx, p, also...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// recorded runs p into a fresh record.Recorder, with also beside it, and
// returns the Recorder's Result.
func recorded(ctx context.Context, p flood.Plan, also ...flood.Collector) (*record.Result, error) {
	rec := record.NewRecorder(record.RecorderOptions{})
	if err := flood.Run(ctx, p, flood.Collectors(append([]flood.Collector{rec}, also...)...)); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

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
