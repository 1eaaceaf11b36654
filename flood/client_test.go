package flood

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
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

// TestEachSendGoesAsPrepared: one worker (MaxInflight 1) sends requests
// that differ in method, Host, headers and body, in turn, over a real
// listener; each arrives as it was prepared. With the fast client the
// worker reuses one request and one body reader for all its sends, so a
// field or a body left over from the send before would show here.
func TestEachSendGoesAsPrepared(t *testing.T) {
	forClients(t, func(t *testing.T, client Client) {
		type seen struct {
			method, host, seq, body string
			length                  int64
		}
		var mu sync.Mutex
		var got []seen
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = append(got, seen{r.Method, r.Host, r.Header.Get("X-Seq"), string(b), r.ContentLength})
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		}))
		defer srv.Close()
		u, err := url.Parse(srv.URL + "/inbox")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]seen{}
		var preps []*Prepared
		for i, p := range []struct {
			method, host, body string
		}{
			{http.MethodPost, "", strings.Repeat("a long body ", 40)}, // the URL's host
			{http.MethodPost, "flood7.test", "short"},                 // another Host, a shorter body
			{http.MethodGet, "", ""},                                  // no body at all
			{http.MethodPost, "", ""},                                 // a POST with an empty body
			{http.MethodPost, "flood2.test", `{"type":"Like"}`},       // and a body again
		} {
			seq := strconv.Itoa(i)
			preps = append(preps, &Prepared{Type: "Create", Method: p.method, URL: u, Host: p.host,
				Header: http.Header{"X-Seq": {seq}}, Body: []byte(p.body)})
			want[seq] = seen{p.method, cmp.Or(p.host, u.Host), seq, p.body, int64(len(p.body))}
		}
		n := 0
		src := SourceFunc(func(context.Context) (*Prepared, error) {
			p := preps[n%len(preps)]
			n++
			return p, nil
		})
		tr := NewClientTransport(TransportOptions{Client: client, MaxInflight: 1})
		defer tr.CloseIdleConnections()
		res := mustRun(t, context.Background(), Plan{Limits: Limits{MaxSends: 25, MaxInflight: 1},
			Pacer: mustConstant(t, 50), Source: src, Transport: tr})
		mu.Lock()
		defer mu.Unlock()
		// Every send that left was answered 202 (a request the client
		// refused would be a connection error), and arrived.
		for cl, n := range res.Overall.Tally.Classes {
			if c := record.Class(cl); c != record.Class202 && n > 0 {
				t.Errorf("%d sends ended as %s", n, c)
			}
		}
		if sent := res.Overall.Tally.Classes[record.Class202]; int(sent) != len(got) {
			t.Fatalf("%d answered 202, %d arrived", sent, len(got))
		}
		arrived := map[string]bool{}
		for i, g := range got {
			arrived[g.seq] = true
			if w := want[g.seq]; g != w {
				t.Errorf("request %d arrived as %+v, want %+v", i, g, w)
			}
		}
		// Each kind came after another: an open-loop pacer may drop a
		// send that found the worker busy, but not a whole kind.
		if len(arrived) != len(want) {
			t.Errorf("of the %d prepared requests, %d arrived: %v", len(want), len(arrived), arrived)
		}
	})
}
