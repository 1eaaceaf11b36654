package flood

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/report"

	"github.com/crowdfed/crowd/flood/record"
)

func TestRunRejectsInvalidPlans(t *testing.T) {
	ok := Plan{
		Pacer: mustConstant(t, 10), Duration: time.Second,
		Source:    newCycleSource(t, "http://sut.test/inbox"),
		Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
	}
	for _, tc := range []struct {
		name string
		edit func(*Plan)
	}{
		{"no pacer", func(p *Plan) { p.Pacer = nil }},
		{"no source", func(p *Plan) { p.Source = nil }},
		{"no transport", func(p *Plan) { p.Transport = nil }},
		{"unbounded: neither duration nor max sends", func(p *Plan) { p.Duration = 0 }},
		{"negative in-flight", func(p *Plan) { p.MaxInflight = -1 }},
		{"warm-up as long as the run", func(p *Plan) { p.Warmup = time.Second }},
	} {
		p := ok
		tc.edit(&p)
		if _, err := Run(context.Background(), p); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: err = %v, want ErrInvalidPlan", tc.name, err)
		}
	}
}

// TestDropsWhenCapReached: 100 sends/s into a SUT that takes 505 ms with 10
// slots. Whenever all 10 are busy at a send's intended time the send is
// dropped (never delayed): the counts must equal a direct simulation of that
// rule, and no more than 10 requests may ever be in flight. 505 ms keeps
// completions off the 10 ms grid, so no send ties with a slot freeing.
func TestDropsWhenCapReached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			slots = 10
			svc   = 505 * time.Millisecond
		)
		var cur, peak atomic.Int64
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(svc)
			cur.Add(-1)
			return answer(req, 202, nil), nil
		})
		pacer := mustConstant(t, 100)
		res := mustRun(t, context.Background(), Plan{
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: pacer, Duration: 3 * time.Second, MaxInflight: slots,
			Source: newCycleSource(t, "http://sut.test/inbox", "Create", "Like"), Transport: rt,
		})

		var busy []time.Duration // when each busy slot frees
		var wantSent, wantDropped int64
		for n := int64(0); pacer.Offset(n) < 3*time.Second; n++ {
			at := pacer.Offset(n)
			free := busy[:0]
			for _, f := range busy {
				if f > at {
					free = append(free, f)
				}
			}
			busy = free
			if len(busy) >= slots {
				wantDropped++
				continue
			}
			busy = append(busy, at+svc)
			wantSent++
		}
		c := res.Overall.Counts
		if c.Sent != wantSent || c.Dropped != wantDropped || c.Offered != wantSent+wantDropped {
			t.Fatalf("sent %d dropped %d offered %d, want sent %d dropped %d", c.Sent, c.Dropped, c.Offered, wantSent, wantDropped)
		}
		if c.Completed != c.Sent {
			t.Errorf("completed %d of %d sent", c.Completed, c.Sent)
		}
		if p := peak.Load(); p != slots {
			t.Errorf("peak in flight %d, want exactly %d", p, slots)
		}
		var perType int64
		for _, st := range res.Types {
			perType += st.Counts.Dropped
		}
		if perType != c.Dropped {
			t.Errorf("per-type drops add up to %d, want %d", perType, c.Dropped)
		}
		// Every sent request started on time: drops, not delays.
		if m := res.Overall.Lateness.Max(); m != 0 {
			t.Errorf("lateness max %dµs, want 0", m)
		}
		rec, err := res.Record(record.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		// 100/s × 505 ms needs ~50 slots: the SUT filled them, not the crowd.
		if rec.Bottleneck.Generator {
			t.Errorf("drops blamed on the generator: %v", rec.Bottleneck.Reasons)
		}
		if len(rec.Bottleneck.Notes) == 0 || !strings.Contains(rec.Bottleneck.Notes[0], "dropped") {
			t.Errorf("no note explaining the drops: %v", rec.Bottleneck.Notes)
		}
	})
}

// TestLatenessServiceSplit: a transport that waits 30 ms for a connection,
// then 20 ms for the answer. Lateness is the 30 ms (the send was not on the
// wire yet), service time the 20 ms, latency from the intended time 50 ms,
// and the generator's own dispatch delay zero.
func TestLatenessServiceSplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			time.Sleep(30 * time.Millisecond)
			gotConn(req)
			time.Sleep(20 * time.Millisecond)
			return answer(req, 202, nil), nil
		})
		res := mustRun(t, context.Background(), Plan{
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: mustConstant(t, 50), Duration: 2 * time.Second, MaxInflight: 100,
			Source: newCycleSource(t, "http://sut.test/inbox"), Transport: rt,
		})
		o := res.Overall
		for _, tc := range []struct {
			name string
			got  int64
			want time.Duration
		}{
			{"latency", o.Latency.ValueAtQuantile(50), 50 * time.Millisecond},
			{"latency max", o.Latency.Max(), 50 * time.Millisecond},
			{"service", o.Service.ValueAtQuantile(99), 20 * time.Millisecond},
			{"lateness", o.Lateness.ValueAtQuantile(99), 30 * time.Millisecond},
			{"dispatch", res.Dispatch.Max(), 0},
		} {
			if !o.Latency.ValuesAreEquivalent(tc.got, us(tc.want)) {
				t.Errorf("%s = %dµs, want %v", tc.name, tc.got, tc.want)
			}
		}
	})
}

// TestSourceStarved: a source that takes 25 ms on every tenth request at
// 100 sends/s delivers that send 15 ms after its intended time: 20 of 200
// sends are starved and the record blames the generator.
func TestSourceStarved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newCycleSource(t, "http://sut.test/inbox")
		calls := 0
		src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
			if calls%10 == 5 {
				time.Sleep(25 * time.Millisecond)
			}
			calls++
			return inner.Next(ctx)
		})
		res := mustRun(t, context.Background(), Plan{
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: mustConstant(t, 100), Duration: 2 * time.Second, MaxInflight: 10,
			Source: src, Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
		})
		if got := res.Overall.Counts.Starved; got != 20 {
			t.Errorf("starved %d, want 20", got)
		}
		rec, err := res.Record(record.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Bottleneck.Generator || !strings.Contains(strings.Join(rec.Bottleneck.Reasons, "\n"), "source starved") {
			t.Errorf("bottleneck %+v, want the generator (source starved)", rec.Bottleneck)
		}
	})
}

// TestCancelGivesPartialRecord: Ctrl-C (a cancelled context) 2.005 s into a
// 10 s run stops the schedule, aborts the 5 sends in flight (50 ms each)
// without waiting for them, and yields a record marked partial that is
// written and read back as such.
func TestCancelGivesPartialRecord(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			select {
			case <-time.After(50 * time.Millisecond):
				return answer(req, 202, nil), nil
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(2005*time.Millisecond, cancel)
		res := mustRun(t, ctx, Plan{
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: mustConstant(t, 100), Duration: 10 * time.Second, MaxInflight: 100,
			Source: newCycleSource(t, "http://sut.test/inbox"), Transport: rt,
		})
		if !res.Partial || res.Reason != "interrupted" {
			t.Fatalf("partial %v reason %q, want an interrupted partial result", res.Partial, res.Reason)
		}
		if res.Elapsed != 2005*time.Millisecond {
			t.Errorf("run took %v after the cancel at 2.005s", res.Elapsed)
		}
		c := res.Overall.Counts
		if c.Offered != 201 || c.Completed != 196 || c.Aborted != 5 {
			t.Errorf("counts %+v, want 201 offered, 196 completed, 5 aborted", c)
		}
		if res.Measured != 2005*time.Millisecond {
			t.Errorf("measured %v, want 2.005s", res.Measured)
		}
		rec, err := res.Record(record.Settings{Label: "cancel test"})
		if err != nil {
			t.Fatal(err)
		}
		path, err := record.NewRecordFile(dir).FinalWith(rec, rec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := record.LoadRecord(path)
		if err != nil {
			t.Fatal(err)
		}
		if !back.Partial || back.PartialReason != "interrupted" || back.Overall.Counts != c {
			t.Errorf("record read back: partial %v %q counts %+v", back.Partial, back.PartialReason, back.Overall.Counts)
		}
	})
}

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
		res := mustRun(t, context.Background(), Plan{
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: mustConstant(t, 10), MaxSends: int64(len(behaviours)), MaxInflight: 20,
			Timeout: 200 * time.Millisecond,
			Source:  newCycleSource(t, "http://sut.test/inbox"), Transport: rt,
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
func TestRealTransportErrors(t *testing.T) {
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
		tr := NewTransport(4, 0, nil)
		res := mustRun(t, context.Background(), Plan{
			Pacer: mustConstant(t, 20), MaxSends: 3, MaxInflight: 4, Timeout: 200 * time.Millisecond,
			Source: newCycleSource(t, tc.url), Transport: tr,
		})
		tr.CloseIdleConnections()
		if got := res.Overall.Tally.Classes[tc.want]; got != 3 {
			t.Errorf("%s: %d of 3 sends were %s; tally %+v", tc.name, got, tc.want, res.Overall.Tally)
		}
	}
}

// TestSourceEnds: a source that runs dry or fails ends the run early, marked
// partial, with what was sent measured.
func TestSourceEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			err    error
			reason record.StopReason
		}{
			{"exhausted", io.EOF, "source exhausted"},
			{"failed", errors.New("signer broke"), "source error: signer broke"},
		} {
			inner := newCycleSource(t, "http://sut.test/inbox")
			n := 0
			src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
				if n++; n > 50 {
					return nil, tc.err
				}
				return inner.Next(ctx)
			})
			res := mustRun(t, context.Background(), Plan{
				Sleep: time.Sleep, // synctest: fake clock
				Pacer: mustConstant(t, 100), Duration: 10 * time.Second,
				Source: src, Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
			})
			if !res.Partial || res.Reason != tc.reason || res.Overall.Counts.Completed != 50 {
				t.Errorf("%s: partial %v reason %q completed %d", tc.name, res.Partial, res.Reason, res.Overall.Counts.Completed)
			}
			if (res.Err != nil) != (tc.err != io.EOF) {
				t.Errorf("%s: Err = %v", tc.name, res.Err)
			}
		}
	})
}

// TestTimelineAndWarmup: 5 s at 100/s with 2 s of warm-up: one tick a second
// (the last one partial), the first two flagged warm-up, the ticks adding up
// to every offer; the measured counts hold only the last 3 s; Progress is
// called once per tick.
func TestTimelineAndWarmup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var progress []record.Progress
		res := mustRun(t, context.Background(), Plan{
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: mustConstant(t, 100), Duration: 5 * time.Second, Warmup: 2 * time.Second,
			Source:    newCycleSource(t, "http://sut.test/inbox"),
			Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
			Progress:  func(p record.Progress) { progress = append(progress, p) },
		})
		if len(res.Timeline) != 5 || len(progress) != 5 {
			t.Fatalf("%d ticks, %d progress calls, want 5", len(res.Timeline), len(progress))
		}
		var offered, completed int64
		for i, tk := range res.Timeline {
			offered += tk.Offered
			completed += tk.Completed
			if tk.Warmup != (i < 2) {
				t.Errorf("tick %d warm-up %v", tk.T, tk.Warmup)
			}
		}
		if offered != 500 || completed != 500 {
			t.Errorf("ticks add up to %d offered, %d completed, want 500", offered, completed)
		}
		if res.Overall.Counts.Offered != 300 || res.WarmupCounts.Offered != 200 {
			t.Errorf("measured %d, warm-up %d, want 300 and 200", res.Overall.Counts.Offered, res.WarmupCounts.Offered)
		}
		if res.Measured != 3*time.Second {
			t.Errorf("measured window %v, want 3s", res.Measured)
		}
		last := progress[len(progress)-1]
		if last.Sent != 500 || last.Completed != 500 || last.Total != 5*time.Second {
			t.Errorf("last progress %+v", last)
		}
	})
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
		sink := servePipe(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		res := mustRun(t, context.Background(), Plan{
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: mustConstant(t, 200), Duration: 5 * time.Second, MaxInflight: 1000, Timeout: 10 * time.Second,
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
func TestTransportAgainstHTTP2Server(t *testing.T) {
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

	tr := NewTransport(4, 0, shared)
	defer tr.CloseIdleConnections()
	res := mustRun(t, context.Background(), Plan{
		Pacer: mustConstant(t, 50), MaxSends: 5, MaxInflight: 4, Timeout: 5 * time.Second,
		Source: newCycleSource(t, srv.URL+"/inbox"), Transport: tr,
	})
	if got := res.Overall.Tally.Classes[record.Class202]; got != 5 {
		t.Errorf("%d of 5 sends answered 202; tally %+v", got, res.Overall.Tally)
	}
	if _, ok := protos.Load("HTTP/1.1"); !ok {
		t.Error("the server saw no HTTP/1.1 request from the flood's transport")
	}
	if !slices.Equal(shared.NextProtos, before) {
		t.Errorf("NewTransport changed the caller's config: NextProtos %q, was %q", shared.NextProtos, before)
	}
}

// TestDrainLineNotRepeated: a 2 s run at 10/s whose answers take 150 ms
// ends with a 50 ms drain after its schedule. The live line of that drain
// is the last report and says so (t=2.05s, end=1); in whole seconds it
// would have repeated t=2s. The measured window includes the drain: the
// rates divide by the 2.05 s the run took.
func TestDrainLineNotRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		live := report.NewLive(&out, false)
		res := mustRun(t, context.Background(), Plan{
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: mustConstant(t, 10), Duration: 2 * time.Second,
			Source: newCycleSource(t, "http://sut.test/inbox"),
			Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
				time.Sleep(150 * time.Millisecond)
				return answer(r, 202, nil), nil
			}),
			Progress: live.Update,
		})
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		seen := map[string]bool{}
		for _, l := range lines {
			at, _, _ := strings.Cut(l, " ")
			if seen[at] {
				t.Errorf("%s reported twice:\n%s", at, out.String())
			}
			seen[at] = true
		}
		if len(lines) != 3 || !strings.HasPrefix(lines[2], "t=2.05s ") || !strings.HasSuffix(lines[2], " end=1") {
			t.Errorf("want t=1s, t=2s and the drain t=2.05s … end=1:\n%s", out.String())
		}
		if res.Measured != 2050*time.Millisecond {
			t.Errorf("measured %v, want the 2.05s the run took", res.Measured)
		}
	})
}

// countingSource hands out a fresh Prepared for every Next, numbered in
// Body, so each can be told apart.
type countingSource struct {
	url   *url.URL
	taken []*Prepared
}

func (s *countingSource) Next(context.Context) (*Prepared, error) {
	p := &Prepared{Type: "Follow", Method: http.MethodPost, URL: s.url, Header: http.Header{},
		Body: []byte(strconv.Itoa(len(s.taken)))}
	s.taken = append(s.taken, p)
	return p, nil
}

// TestSettledHearsEveryTakenRequest: Plan.Settled hears exactly once, before
// Run returns, of every request the engine took from its source: answered
// (with its class), dropped for want of a slot, aborted in flight, or taken
// and left unsent when the run was interrupted while waiting for its time.
func TestSettledHearsEveryTakenRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := answersAfter(35 * time.Millisecond)
		u, _ := url.Parse("http://sut.test/inbox")
		src := &countingSource{url: u}
		var mu sync.Mutex
		heard := map[*Prepared][]Delivery{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(1005*time.Millisecond, cancel) // between two sends, with some in flight
		res := mustRun(t, ctx, Plan{
			Sleep: time.Sleep, Pacer: mustConstant(t, 100), Duration: 10 * time.Second, MaxInflight: 3,
			Source: src, Transport: rt,
			Settled: func(p *Prepared, d Delivery) { mu.Lock(); heard[p] = append(heard[p], d); mu.Unlock() },
		})
		var answered, unsent, aborted int64
		for i, p := range src.taken {
			ds := heard[p]
			if len(ds) != 1 {
				t.Fatalf("request %d taken from the source was settled %d times", i, len(ds))
			}
			switch d := ds[0]; {
			case !d.Sent:
				unsent++
			case d.Aborted:
				aborted++
			case d.Class == record.Class202:
				answered++
			default:
				t.Errorf("request %d: %+v", i, d)
			}
		}
		c := res.Overall.Counts
		// The last request taken waited for its time when the run ended.
		if answered != c.Completed || aborted != c.Aborted || unsent != c.Dropped+1 || c.Dropped == 0 || aborted == 0 {
			t.Errorf("settled %d answered, %d aborted, %d unsent; counts %+v (want drops, aborts, and one taken but never due)",
				answered, aborted, unsent, c)
		}
	})
}

// TestJITStarvedOnlyWhenSigningLate: a Source that signs each request in
// Next (as --signing jit does) is starved only for sends its signing made
// late; the first send, due at the schedule's start, is no exception.
func TestJITStarvedOnlyWhenSigningLate(t *testing.T) {
	cases := []struct {
		name    string
		sign    time.Duration // time each Next takes
		rate    float64
		seconds time.Duration
		want    int64
	}{
		// 1 ms of signing in a 200 ms gap: never late, the first send included.
		{"fits the gap", time.Millisecond, 5, 10 * time.Second, 0},
		// 300 ms of signing in a 200 ms gap: every send after the first is late
		// (the first is ready when the schedule starts).
		{"exceeds the gap", 300 * time.Millisecond, 5, 2 * time.Second, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := newCycleSource(t, "http://sut.test/inbox")
				src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
					time.Sleep(tc.sign)
					return inner.Next(ctx)
				})
				res := mustRun(t, context.Background(), Plan{
					Sleep: time.Sleep, // synctest: fake clock
					Pacer: mustConstant(t, tc.rate), Duration: tc.seconds, MaxInflight: 10,
					Source: src, Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
				})
				if got := res.Overall.Counts.Starved; got != tc.want {
					t.Errorf("starved %d of %d, want %d", got, res.Overall.Counts.Offered, tc.want)
				}
			})
		})
	}
}
