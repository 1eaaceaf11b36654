package flood

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// TestStalledSendsEndByTheirBounds: against a real sink that never
// answers, each client's sends end by the run's per-send timeout as
// timeouts, and, when the run is interrupted first, at once as aborted.
// With the fast client neither bound is a timer of the send's own
// context (sendContext): the connection's deadline and the worker's
// Aborter end them, so this is what holds that path to net/http's.
func TestStalledSendsEndByTheirBounds(t *testing.T) {
	forClients(t, func(t *testing.T, client Client) {
		release := make(chan struct{})
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer sink.Close()
		defer close(release)
		const sends = 5
		for _, c := range []struct {
			name      string
			timeout   time.Duration
			interrupt time.Duration // the run's context is cancelled then (0: never)
			want      func(record.Counts, *record.Tally) bool
		}{
			// Every send times out at 300 ms, and the run ends by itself.
			{"timeout", 300 * time.Millisecond, 0, func(c record.Counts, tally *record.Tally) bool {
				return tally.Classes[record.ClassTimeout] == sends && c.Aborted == 0
			}},
			// Interrupted at 1 s, long before the 30 s timeout: every
			// send in flight is aborted, none waits for its timeout.
			{"interrupted", 30 * time.Second, time.Second, func(c record.Counts, tally *record.Tally) bool {
				return c.Aborted == sends && tally.Classes[record.ClassTimeout] == 0
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				tr := NewClientTransport(TransportOptions{Client: client, MaxInflight: sends})
				defer tr.CloseIdleConnections()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if c.interrupt > 0 {
					time.AfterFunc(c.interrupt, cancel)
				}
				start := time.Now()
				res := mustRun(t, ctx, Plan{Limits: Limits{MaxSends: sends, MaxInflight: sends, Timeout: c.timeout},
					Pacer: mustConstant(t, 1000), Source: newCycleSource(t, sink.URL+"/users/alice/inbox"), Transport: tr})
				took := time.Since(start)
				o := res.Overall
				if !c.want(o.Counts, &o.Tally) {
					t.Errorf("counts %+v, tally %v", o.Counts, o.Tally)
				}
				if took > 10*time.Second {
					t.Errorf("the run took %v: a send outlived its bound", took)
				}
			})
		}
	})
}
