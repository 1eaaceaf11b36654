package flood

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/pipenet"
)

// TestStatusTally: one send per class, with Retry-After on the 429 and the
// 503; a send that outlives Timeout is a timeout, one whose transport fails
// a connection error.
func TestStatusTally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		behaviours := []func(*http.Request) (*http.Response, error){
			func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil },
			func(r *http.Request) (*http.Response, error) { return answer(r, 201, nil), nil },
			func(r *http.Request) (*http.Response, error) { return answer(r, 401, nil), nil },
			func(r *http.Request) (*http.Response, error) { return answer(r, 403, nil), nil },
			func(r *http.Request) (*http.Response, error) { return answer(r, 404, nil), nil },
			func(r *http.Request) (*http.Response, error) { return answer(r, 410, nil), nil },
			func(r *http.Request) (*http.Response, error) {
				return answer(r, 429, http.Header{"Retry-After": {"5"}}), nil
			},
			func(r *http.Request) (*http.Response, error) { return answer(r, 400, nil), nil },
			func(r *http.Request) (*http.Response, error) {
				return answer(r, 503, http.Header{"Retry-After": {"5"}}), nil
			},
			func(r *http.Request) (*http.Response, error) { return answer(r, 500, nil), nil },
			func(r *http.Request) (*http.Response, error) {
				<-r.Context().Done() // hangs past Timeout
				return nil, r.Context().Err()
			},
			func(r *http.Request) (*http.Response, error) { return nil, errors.New("connection reset by peer") },
			func(r *http.Request) (*http.Response, error) { return answer(r, 302, nil), nil },
		}
		var i atomic.Int64
		rt := rtFunc(func(r *http.Request) (*http.Response, error) {
			return behaviours[i.Add(1)-1](r)
		})
		res := mustRun(t, context.Background(), Plan{Limits: Limits{MaxSends: int64(len(behaviours)), MaxInflight: 20, Timeout: 200 * time.Millisecond},
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: mustConstant(t, 10),

			Source: newCycleSource(t, "http://sut.test/inbox"), Transport: rt,
		})
		tl := res.Overall.Tally
		for c := record.Class(0); c < record.NumClasses; c++ {
			if tl.Classes[c] != 1 {
				t.Errorf("class %s: %d, want 1", c, tl.Classes[c])
			}
		}
		if tl.RetryAfter != 2 {
			t.Errorf("Retry-After seen %d, want 2", tl.RetryAfter)
		}
		if tl.OK() != 2 || tl.Errors() != 11 {
			t.Errorf("ok %d errors %d, want 2 and 11", tl.OK(), tl.Errors())
		}
	})
}

func TestClassOfStatus(t *testing.T) {
	for _, tc := range []struct {
		code int
		want record.Class
	}{
		{202, record.Class202},      // the inbox's answer
		{200, record.ClassOther2xx}, // accepted synchronously
		{204, record.ClassOther2xx}, // no content
		{401, record.Class401},      // signature refused
		{403, record.Class403},      // blocked
		{404, record.Class404},      // no such inbox
		{410, record.Class410},      // gone
		{429, record.Class429},      // rate limited
		{413, record.ClassOther4xx}, // body too large
		{418, record.ClassOther4xx}, // GoToSocial's empty User-Agent answer
		{503, record.Class503},      // throttled
		{500, record.ClassOther5xx}, // crashed
		{599, record.ClassOther5xx}, // top of the range
		{301, record.ClassOther},    // redirects are not followed
		{100, record.ClassOther},    // informational
		{600, record.ClassOther},    // out of range
		{0, record.ClassOther},      // nonsense
	} {
		if got := record.ClassOfStatus(tc.code); got != tc.want {
			t.Errorf("ClassOfStatus(%d) = %s, want %s", tc.code, got, tc.want)
		}
	}
}

// TestRealTransportErrors: against real sockets, a refused connection is a
// connection error and a server that never answers is a timeout.
func TestRealTransportErrors(t *testing.T) { forClients(t, testRealTransportErrors) }

func testRealTransportErrors(t *testing.T, client Client) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/inbox"
	ln.Close()

	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-hang
	}))
	defer srv.Close()
	defer close(hang)

	for _, tc := range []struct {
		name, url string
		want      record.Class
	}{
		{"refused", closed, record.ClassConnError},
		{"hanging", srv.URL + "/inbox", record.ClassTimeout},
	} {
		tr := NewClientTransport(TransportOptions{Client: client, MaxInflight: 4})
		res := mustRun(t, context.Background(), Plan{Limits: Limits{MaxSends: 3, MaxInflight: 4, Timeout: 200 * time.Millisecond},
			Pacer:  mustConstant(t, 20),
			Source: newCycleSource(t, tc.url), Transport: tr,
		})
		tr.CloseIdleConnections()
		if got := res.Overall.Tally.Classes[tc.want]; got != 3 {
			t.Errorf("%s: %d of 3 sends were %s; tally %+v", tc.name, got, tc.want, res.Overall.Tally)
		}
	}
}

// TestSinkStallAnd429 floods a real http.Server through the flood's own
// http.Transport (over an in-memory network, on a fake clock): 200 sends/s for 5 s.
// Every 10th request is answered 429 with Retry-After, and request 201 (at
// about 1 s) stalls for 1 s. The transport may open a single connection
// (MaxConnsPerHost=1), as a SUT behind a one-connection proxy or a
// single-worker server would force: so during the stall the ~200 sends due
// in that second wait for the connection. MaxInflight (1000, every send of
// the run) is large enough that none of them is dropped, even on a loaded
// machine: they are in flight, waiting. When the stall
// ends they go out back to back, each served in well under a millisecond.
//
// So the stall is in one request's service time only (service p99 stays
// small, service max is ~1 s) but in ~20 % of the sends' latency from their
// intended time: the CO-corrected latency p99 is near 1 s, and so is
// lateness (time before the send got on the wire). A closed-loop tool, or
// latency measured from the actual send, would report the stall as one slow
// request out of 1000.
func TestSinkStallAnd429(t *testing.T) {
	// The whole HTTP stack (http.Transport, one connection, http.Server)
	// over an in-memory network, on synctest's fake clock: 5 s of schedule
	// and a 1 s stall take no real time, and every figure is exact.
	synctest.Test(t, func(t *testing.T) {
		var n, n429 atomic.Int64
		var bodies sync.Map
		sink := pipenet.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i := n.Add(1)
			b, _ := io.ReadAll(r.Body)
			bodies.Store(string(b)+" "+r.Host, true)
			if i == 201 {
				time.Sleep(time.Second)
			}
			if i%10 == 0 {
				n429.Add(1)
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.WriteHeader(http.StatusAccepted)
		}))

		tr := NewTransport(1000, 0, nil)
		tr.DialContext = sink.DialContext
		tr.MaxConnsPerHost = 1
		defer tr.CloseIdleConnections()
		src := newCycleSource(t, "http://sink.test/inbox", "Create", "Like", "Follow")
		for _, p := range src.preps {
			p.Host = "sut.test" // the signed Host, not the dialled address
		}
		res := mustRun(t, context.Background(), Plan{Limits: Limits{Duration: 5 * time.Second, MaxInflight: 1000, Timeout: 10 * time.Second},
			Sleep:  time.Sleep, // synctest: fake clock
			Pacer:  mustConstant(t, 200),
			Source: src, Transport: tr,
		})
		rec, err := res.Record(record.Settings{Label: "sink", Mix: "create=1,like=1,follow=1", Signing: "none"})
		if err != nil {
			t.Fatal(err)
		}
		o := rec.Overall
		t.Logf("latency p99 %s, service p99 %s max %s, lateness p99 %s, dispatch p99 %s; %+v",
			record.FormatMicros(o.Latency.P99), record.FormatMicros(o.Service.P99), record.FormatMicros(o.Service.Max), record.FormatMicros(o.Lateness.P99), record.FormatMicros(rec.Dispatch.P99), rec.Bottleneck)

		if o.Counts.Offered != 1000 || o.Counts.Completed != 1000 || o.Counts.Dropped != 0 {
			t.Fatalf("counts %+v, want 1000 offered and completed, none dropped", o.Counts)
		}
		if got := n.Load(); got != 1000 {
			t.Errorf("server saw %d requests, want 1000", got)
		}
		if got, want := o.Tally.Classes[record.Class429], n429.Load(); got != want || got != 100 {
			t.Errorf("429 tallied %d, server sent %d, want 100", got, want)
		}
		if o.Tally.RetryAfter != 100 || o.Tally.Classes[record.Class202] != 900 {
			t.Errorf("Retry-After %d, 202 %d; want 100 and 900", o.Tally.RetryAfter, o.Tally.Classes[record.Class202])
		}
		// Send 201 is due at 1.0 s and holds the one connection for 1 s: the
		// 199 sends due behind it (every 5 ms) wait up to 995 ms for it.
		if o.Latency.P99 < us(900*time.Millisecond) || o.Latency.P99 > us(time.Second) {
			t.Errorf("CO-corrected latency p99 %s, want 0.9-1 s: the stall is missing", record.FormatMicros(o.Latency.P99))
		}
		if o.Lateness.P99 < us(900*time.Millisecond) || o.Lateness.Max > us(time.Second) {
			t.Errorf("lateness p99 %s max %s: the wait for the connection (up to 1 s) is missing or too long",
				record.FormatMicros(o.Lateness.P99), record.FormatMicros(o.Lateness.Max))
		}
		// On the fake clock an answer takes no time: only the stalled request has a service time.
		if o.Service.P99 > us(time.Millisecond) {
			t.Errorf("service p99 %s: the stall leaked into service time", record.FormatMicros(o.Service.P99))
		}
		if o.Service.Max < us(time.Second) || o.Service.Max > us(time.Second+time.Millisecond) {
			t.Errorf("service max %s: the stalled request itself should take 1 s", record.FormatMicros(o.Service.Max))
		}
		if !strings.Contains(strings.Join(rec.Bottleneck.Notes, "\n"), "waited for a connection") {
			t.Errorf("no note on the connection wait: %+v", rec.Bottleneck)
		}
		if _, ok := bodies.Load(`{"type":"Like"} sut.test`); !ok {
			t.Error("the server did not get the prepared body with the prepared Host")
		}
		if len(rec.Types) != 3 {
			t.Errorf("types %v, want Create, Like and Follow", rec.TypeNames())
		}
	})
}

// TestTransportAgainstHTTP2Server: the flood's transport sends HTTP/1.1 to
// a TLS server that prefers h2 (as GoToSocial does), even when the
// tls.Config it was given already offers h2 because an HTTP/2 client
// shared it: every send is answered, none is a connection error, and the
// config passed in is left as it was.
func TestTransportAgainstHTTP2Server(t *testing.T) { forClients(t, testTransportAgainstHTTP2Server) }

func testTransportAgainstHTTP2Server(t *testing.T, client Client) {
	var protos sync.Map
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	// What crowd flood's discovery client does to a shared config.
	shared := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	h2 := &http.Transport{TLSClientConfig: shared, ForceAttemptHTTP2: true}
	resp, err := (&http.Client{Transport: h2}).Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h2.CloseIdleConnections()
	if resp.ProtoMajor != 2 || !slices.Contains(shared.NextProtos, "h2") {
		t.Fatalf("the HTTP/2 client did not negotiate h2 (%s, NextProtos %q): the test would prove nothing", resp.Proto, shared.NextProtos)
	}
	before := slices.Clone(shared.NextProtos)

	tr := NewClientTransport(TransportOptions{Client: client, MaxInflight: 4, TLS: shared})
	defer tr.CloseIdleConnections()
	res := mustRun(t, context.Background(), Plan{Limits: Limits{MaxSends: 5, MaxInflight: 4, Timeout: 5 * time.Second},
		Pacer:  mustConstant(t, 50),
		Source: newCycleSource(t, srv.URL+"/inbox"), Transport: tr,
	})
	if got := res.Overall.Tally.Classes[record.Class202]; got != 5 {
		t.Errorf("%d of 5 sends answered 202; tally %+v counts %+v", got, res.Overall.Tally, res.Overall.Counts)
	}
	if _, ok := protos.Load("HTTP/1.1"); !ok {
		t.Error("the server saw no HTTP/1.1 request from the flood's transport")
	}
	if !slices.Equal(shared.NextProtos, before) {
		t.Errorf("NewTransport changed the caller's config: NextProtos %q, was %q", shared.NextProtos, before)
	}
}
