package flood

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/report"

	"github.com/crowdfed/crowd/flood/record"
)

// memListener is a net.Listener whose connections are in-memory pipes: a
// real http.Server and the flood's own transport speak HTTP/1.1 through
// it, and under testing/synctest the clock is fake (a goroutine waiting on
// a pipe is durably blocked), so a ladder of several seconds runs in
// milliseconds and no figure depends on the machine's load.
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *memListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

// dial is the transport's DialContext: the client end of a new pipe whose
// server end Accept hands out.
func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, errors.New("connection refused")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// limitSink accepts up to rate requests a second (a token bucket holding
// at most burst) with 202 and answers the rest with over.
func limitSink(rate, burst float64, over func(http.ResponseWriter)) http.Handler {
	var mu sync.Mutex
	tokens, last := burst, time.Now()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		tokens = min(burst, tokens+now.Sub(last).Seconds()*rate)
		last = now
		ok := tokens >= 1
		if ok {
			tokens--
		}
		mu.Unlock()
		if ok {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		over(w)
	})
}

// TestLadderCapacityVerdict runs a ladder (50 … 800/s, 2 s rungs) against
// a real HTTP server that accepts 200 requests a second. Past that rate
// one sheds the excess with 429 and Retry-After: the verdict is "sustained
// 200/s, graceful", its ceiling about 200 2xx/s. The other answers 500:
// the same capacity, "not graceful". The verdict prints its rule.
func TestLadderCapacityVerdict(t *testing.T) {
	const capacity = 200.0
	for _, tc := range []struct {
		name     string
		over     func(http.ResponseWriter)
		graceful bool
		says     string
	}{
		// Load shed as a server should: 429 with a retry hint.
		{"429 with Retry-After", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}, true, "past it: graceful"},
		// Load shed as Mastodon and GoToSocial do: 429 with X-RateLimit-* and no
		// Retry-After; the reset says when to come back, and the limit is named.
		{"429 with X-RateLimit-*", func(w http.ResponseWriter) {
			w.Header().Set("X-RateLimit-Limit", "200")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano))
			w.WriteHeader(http.StatusTooManyRequests)
		}, true, "past it: graceful (shed with 429/503 saying when to retry, accepted latency within budget); the SUT advertises a limit of 200 per window"},
		// Overload as a crash: 500 for everything past the limit.
		{"500", func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) }, false, "past it: not graceful"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := newMemListener()
				srv := &http.Server{Handler: limitSink(capacity, 10, tc.over)}
				go srv.Serve(ln)
				defer srv.Close()
				tr := NewTransport(256, 0, nil)
				tr.DialContext = ln.dial
				defer tr.CloseIdleConnections()

				l := &Ladder{Rates: []float64{50, 100, 200, 400, 800}, Step: 2 * time.Second}
				res, err := l.Run(context.Background(), func(ctx context.Context, rate float64, d time.Duration) (*record.Record, error) {
					plan := l.RungPlan(Plan{Limits: Limits{MaxInflight: 256}, Sleep: time.Sleep, Source: newCycleSource(t, "http://sut.test/inbox"), Transport: tr}, mustConstant(t, rate))
					res, err := recorded(ctx, plan)
					if err != nil {
						return nil, err
					}
					return res.Record(record.Settings{Label: "capacity"})
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				c := res.Capacity
				var table strings.Builder
				if err := report.WriteLadder(&table, res); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s", table.String())
				if c.Sustained < 0.9*capacity || c.Sustained > capacity {
					t.Errorf("sustained %g/s, want about %g/s", c.Sustained, capacity)
				}
				if c.Ceiling < 0.9*capacity || c.Ceiling > 1.2*capacity {
					t.Errorf("ceiling %.1f 2xx/s, want about %g", c.Ceiling, capacity)
				}
				if c.Graceful != tc.graceful || c.Past != 2 || !strings.Contains(c.Verdict, tc.says) {
					t.Errorf("graceful %v past %d, verdict %q; want graceful %v saying %q", c.Graceful, c.Past, c.Verdict, tc.graceful, tc.says)
				}
				last := res.Rows[len(res.Rows)-1].Record
				if last.Capacity == nil || last.Capacity.Verdict != c.Verdict {
					t.Errorf("the last rung's record does not carry the ladder's verdict: %+v", last.Capacity)
				}
				for _, want := range []string{"capacity: sustained 200/s", "rule: sustained: 2xx ≥ 95% of offered"} {
					if !strings.Contains(table.String(), want) {
						t.Errorf("the table does not say %q", want)
					}
				}
			})
		})
	}
}
