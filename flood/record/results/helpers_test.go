package results_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/results"
)

// sut is a real HTTP server on loopback that answers as a loaded inbox
// does, by the request's number: mostly 202, some 429 with Retry-After and
// X-RateLimit-*, some 500, some slowly (so that a small flood drops sends).
func sut(t *testing.T) *url.URL {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		if i%50 == 25 {
			// No answer: the connection reset.
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return
		}
		switch i % 10 {
		case 3:
			w.Header().Set("Retry-After", "1")
			w.Header().Set("X-RateLimit-Limit", "300")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", time.Now().Add(30*time.Second).UTC().Format(time.RFC3339))
			w.WriteHeader(http.StatusTooManyRequests)
		case 7:
			w.WriteHeader(http.StatusInternalServerError)
		case 9:
			time.Sleep(300 * time.Millisecond)
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, "accepted")
		}
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL + "/inbox")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// token is a test source's bookkeeping: who sent the request.
type token struct{ actor, origin string }

// describe is what a crowd's Describe says of a token.
func describe(tok any) results.Sender {
	t, ok := tok.(*token)
	if !ok {
		return results.Sender{}
	}
	return results.Sender{Actor: t.actor, Origin: t.origin, Signature: "cavage"}
}

// source draws Creates and Likes (two in three Creates) from three
// origins, to u.
func source(u *url.URL) flood.Source {
	var n int
	return flood.SourceFunc(func(ctx context.Context) (*flood.Prepared, error) {
		n++
		typ := record.TypeCreate
		if n%3 == 0 {
			typ = record.TypeLike
		}
		origin := "flood" + strconv.Itoa(n%3+1) + ".test"
		return &flood.Prepared{Type: typ, Method: http.MethodPost, URL: u, Header: http.Header{"Content-Type": {"application/activity+json"}},
			Body: []byte(`{"type":"` + string(typ) + `"}`), Token: &token{actor: "https://" + origin + "/users/u" + strconv.Itoa(n), origin: origin}}, nil
	})
}

// flooding runs a real flood of u at rate for d (the first 200 ms
// warm-up) with the collectors, and returns the Recorder's record.
func flooding(t *testing.T, ctx context.Context, u *url.URL, rate float64, d time.Duration, cs ...flood.Collector) *record.Record {
	t.Helper()
	return floodingWith(t, ctx, u, rate, d, flood.NewTransport(4, 5*time.Second, nil), cs...)
}

// floodingWith is flooding with the transport tr.
func floodingWith(t *testing.T, ctx context.Context, u *url.URL, rate float64, d time.Duration, tr http.RoundTripper, cs ...flood.Collector) *record.Record {
	t.Helper()
	pacer, err := flood.NewPacer(flood.ArrivalsConstant, rate, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewRecorder(record.RecorderOptions{})
	plan := flood.Plan{Pacer: pacer, Source: source(u), Transport: tr,
		Limits: flood.Limits{Duration: d, Warmup: 200 * time.Millisecond, MaxInflight: 4, Timeout: 5 * time.Second}}
	if err := flood.Run(ctx, plan, flood.Collectors(append([]flood.Collector{rec}, cs...)...)); err != nil {
		t.Fatal(err)
	}
	r, err := rec.Result().Record(settings())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// settings label the test's runs.
func settings() record.Settings {
	return record.Settings{Label: "results-test", Mix: "create=2,like=1", Signing: "pipeline"}
}
