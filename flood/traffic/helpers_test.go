package traffic

import (
	"context"
	"net/http"
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
