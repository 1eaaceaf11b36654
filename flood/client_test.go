package flood

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/pipenet"
)

// TestParseClient: the one reading of --client.
func TestParseClient(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Client
		err  bool
	}{
		{"", DefaultClient, false},        // unset: the default client
		{"nethttp", ClientNetHTTP, false}, // net/http's transport
		{" FAST ", ClientFast, false},     // any case, spaces trimmed
		{"fasthttp", "", true},            // not a client the flood has
		{"net/http", "", true},            // the flag's word is nethttp
	} {
		got, err := ParseClient(tc.in)
		var ue *record.UsageError
		if (err != nil) != tc.err || got != tc.want || err != nil && (!errors.As(err, &ue) || !strings.Contains(err.Error(), "--client")) {
			t.Errorf("ParseClient(%q) = %q, %v; want %q, a usage error naming --client: %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestClientServiceExcludesDial: with either client, a send's service
// time starts when it has its connection: a slow dial (1 s here, on the
// fake clock) is in its latency and lateness, not in its service time.
func TestClientServiceExcludesDial(t *testing.T) {
	forClients(t, func(t *testing.T, client Client) {
		synctest.Test(t, func(t *testing.T) {
			sink := pipenet.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(10 * time.Millisecond)
				w.WriteHeader(http.StatusAccepted)
			}))
			slowDial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				time.Sleep(time.Second)
				return sink.DialContext(ctx, network, addr)
			}
			tr := NewClientTransport(TransportOptions{Client: client, MaxInflight: 4, Dial: slowDial})
			defer tr.CloseIdleConnections()
			res := mustRun(t, context.Background(), Plan{Limits: Limits{MaxSends: 1, MaxInflight: 4},
				Sleep: time.Sleep, Pacer: mustConstant(t, 10), Source: newCycleSource(t, "http://sink.test/inbox"), Transport: tr})
			o := res.Overall
			if o.Tally.Classes[record.Class202] != 1 {
				t.Fatalf("tally %+v, want one 202", o.Tally)
			}
			// HDR buckets hold 3 significant digits: 10 ms reads as up to 10.01 ms.
			if svc := o.Service.Max(); svc < us(10*time.Millisecond) || svc > us(11*time.Millisecond) || o.Latency.Max() < us(time.Second) || o.Lateness.Max() < us(time.Second) {
				t.Errorf("service %dµs latency %dµs lateness %dµs: want 10 ms of service, the 1 s dial in latency and lateness",
					o.Service.Max(), o.Latency.Max(), o.Lateness.Max())
			}
		})
	})
}
