package flood

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/report"

	"github.com/crowdfed/crowd/flood/record"
)

// faultSink is a real HTTP server on one loopback port that misbehaves as
// it is told: per request (the X-Fault header: answer 202, reset the
// connection, stall past the sender's timeout), or as a whole (stop
// listening, so connections are refused, and listen again on the same
// port).
type faultSink struct {
	t       *testing.T
	addr    string // 127.0.0.1:port, kept across a stop and a restart
	done    chan struct{}
	mu      sync.Mutex
	ln      net.Listener   // nil while not listening
	servers []*http.Server // every server started, closed at cleanup
	stalled chan struct{}  // one value per stalling request that reached the handler
}

func newFaultSink(t *testing.T) *faultSink {
	s := &faultSink{t: t, addr: "127.0.0.1:0", done: make(chan struct{}), stalled: make(chan struct{}, 1000)}
	s.listen()
	t.Cleanup(func() {
		close(s.done) // stalled handlers return
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, srv := range s.servers {
			srv.Close()
		}
	})
	return s
}

// listen starts serving on s.addr (the port of the first listen).
func (s *faultSink) listen() {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Errorf("sink listen %s: %v", s.addr, err)
		return
	}
	s.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(s.serve)}
	s.mu.Lock()
	s.ln = ln
	s.servers = append(s.servers, srv)
	s.mu.Unlock()
	go srv.Serve(ln)
}

// stopListening closes the listening socket, and only it: new connections
// are refused at once, while requests already on a connection (stalled
// ones) go on and time out as they would have, like a server whose accept
// loop died. (http.Server.Close would reset those too.)
func (s *faultSink) stopListening() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ln.Close(); err != nil {
		s.t.Errorf("sink stop listening: %v", err)
	}
	s.ln = nil
}

func (s *faultSink) serve(w http.ResponseWriter, r *http.Request) {
	switch r.Header.Get("X-Fault") {
	case "reset":
		// RST instead of an answer: linger 0 discards the socket at once.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			s.t.Errorf("hijack: %v", err)
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
	case "stall":
		// Past the sender's timeout: it gives up and closes the connection.
		select {
		case s.stalled <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-s.done:
		case <-time.After(5 * time.Second):
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}
}

// phasePacer sends perPhase sends a phase at 200/s, a phase every
// phasePeriod: the rest of each period is a quiet gap in which the sink
// usually changes state. (The change waits for the events that make it safe,
// not for the gap: a late change delays sends, it never mixes phases.)
type phasePacer struct{ perPhase int64 }

const (
	faultGap    = 5 * time.Millisecond // between sends in a phase: 200/s
	phasePeriod = 250 * time.Millisecond
)

func (p phasePacer) Offset(n int64) time.Duration {
	return time.Duration(n/p.perPhase)*phasePeriod + time.Duration(n%p.perPhase)*faultGap
}

func (p phasePacer) Rate() float64 { return float64(p.perPhase) / phasePeriod.Seconds() }

// TestFaultsAreMeasuredNotFatal floods one real loopback sink through a
// run in which the sink answers 202, then resets every connection, then
// stalls past the timeout, then stops listening, then comes back. The run
// is not cut short by any of it: it ends by its schedule, every send is
// completed and tallied, and each phase's sends land in the class that
// phase causes. Each phase is its own activity type, so the per-type
// breakdown is the per-phase tally.
func TestFaultsAreMeasuredNotFatal(t *testing.T) { forClients(t, testFaultsAreMeasuredNotFatal) }

func testFaultsAreMeasuredNotFatal(t *testing.T, client Client) {
	const perPhase = 35 // 175 ms at 200/s, then a 75 ms gap
	phases := []struct {
		name   string
		fault  string       // X-Fault of its requests
		want   record.Class // what every send of the phase must be
		why    string       // why that class
		reason string       // why no answer, as the record counts it ("" = answered)
		before func() error // changes the sink before the phase (set below)
		prep   *Prepared    // its request (set below)
	}{
		// A healthy SUT: 202.
		{name: "answering", want: record.Class202, why: "the SUT accepts"},
		// The SUT resets each connection after reading the request: no HTTP answer.
		{name: "resetting", fault: "reset", want: record.ClassConnError, why: "RST instead of an answer", reason: "connection reset"},
		// The SUT holds each request past the 500 ms timeout.
		{name: "stalling", fault: "stall", want: record.ClassTimeout, why: "no answer within Plan.Timeout", reason: "timeout"},
		// The SUT stops listening: every dial is refused.
		{name: "refusing", want: record.ClassConnError, why: "connection refused", reason: "connection refused"},
		// It listens again on the same port: 202 again, no restart of the flood needed.
		{name: "back", want: record.Class202, why: "the SUT is back"},
	}
	sink := newFaultSink(t)
	// What each change waits for, so that no send of the phase before is
	// caught by it: every stalling request has reached the handler (its
	// connection is accepted, so closing the listener leaves it stalling),
	// and every refused send has come back (so none dials the new listener).
	refused := make(chan struct{}, perPhase)
	phases[3].before = func() error {
		if err := await(sink.stalled, perPhase, "stalling requests reached the sink"); err != nil {
			return err
		}
		sink.stopListening()
		return nil
	}
	phases[4].before = func() error {
		if err := await(refused, perPhase, "refused sends came back"); err != nil {
			return err
		}
		sink.listen()
		return nil
	}
	u, err := url.Parse("http://" + sink.addr + "/users/alice/inbox")
	if err != nil {
		t.Fatal(err)
	}
	for i := range phases {
		h := http.Header{"Content-Type": {"application/activity+json"}, "X-Phase": {phases[i].name}}
		if phases[i].fault != "" {
			h.Set("X-Fault", phases[i].fault)
		}
		phases[i].prep = &Prepared{Type: record.ActivityKind(phases[i].name), Method: http.MethodPost, URL: u, Header: h, Body: []byte(`{"type":"Create"}`)}
	}

	// The source hands out each phase's requests; the first request of a
	// phase changes the sink (once what the change waits for has happened)
	// and is then returned, usually still ahead of its intended time.
	var n int64
	src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
		ph := n / perPhase
		if ph >= int64(len(phases)) {
			return nil, errors.New("past the last phase")
		}
		if n%perPhase == 0 && phases[ph].before != nil {
			if err := phases[ph].before(); err != nil {
				return nil, err
			}
		}
		n++
		return phases[ph].prep, nil
	})
	tr := NewClientTransport(TransportOptions{Client: client, MaxInflight: 200})
	defer tr.CloseIdleConnections()
	counted := rtFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(r)
		if r.Header.Get("X-Phase") == "refusing" {
			refused <- struct{}{} // room for every send of the phase: never blocks
		}
		return resp, err
	})
	res := mustRun(t, context.Background(), Plan{Limits: Limits{MaxSends: perPhase * int64(len(phases)), MaxInflight: 200, Timeout: 500 * time.Millisecond},
		Pacer:  phasePacer{perPhase},
		Source: src, Transport: counted,
	})

	o := res.Overall
	t.Logf("overall %+v tally %v", o.Counts, o.Tally)
	if res.Partial || res.Err != nil {
		t.Fatalf("the run was cut short: %q %v", res.Reason, res.Err)
	}
	if o.Counts.Sent != o.Counts.Completed || o.Counts.Sent != perPhase*int64(len(phases)) || o.Counts.Dropped != 0 {
		t.Errorf("counts %+v: want every one of %d sends made and completed", o.Counts, perPhase*len(phases))
	}
	if o.Tally.Total() != o.Counts.Completed {
		t.Errorf("tallied %d of %d completed", o.Tally.Total(), o.Counts.Completed)
	}
	for _, ph := range phases {
		st := res.Types[ph.name]
		if st == nil {
			t.Errorf("%s: no sends", ph.name)
			continue
		}
		if got := st.Tally.Classes[ph.want]; got != perPhase || st.Counts.Completed != perPhase {
			t.Errorf("%s: %d of %d sends (%d completed) are %s (%s); tally %v", ph.name, got, perPhase,
				st.Counts.Completed, ph.want, ph.why, st.Tally)
		}
		// An answered send is in latency, one without an answer in failed:
		// every send is timed, and no error passes for a fast answer.
		wantLat, wantFailed := int64(perPhase), int64(0)
		if !ph.want.Answered() {
			wantLat, wantFailed = 0, perPhase
		}
		if st.Latency.TotalCount() != wantLat || st.Failed.TotalCount() != wantFailed {
			t.Errorf("%s: latency holds %d values, failed %d; want %d and %d", ph.name, st.Latency.TotalCount(), st.Failed.TotalCount(), wantLat, wantFailed)
		}
		// Each unanswered send says why, in the phase's words.
		if want := (record.Unanswered{}); ph.reason != "" {
			want.Add(ph.reason, perPhase)
			if !maps.Equal(st.Unanswered, want) {
				t.Errorf("%s: no answer because %v, want %v", ph.name, st.Unanswered, want)
			}
		} else if len(st.Unanswered) > 0 {
			t.Errorf("%s: answered, yet no answer because %v", ph.name, st.Unanswered)
		}
	}
	// Min is the lowest value of its HDR bucket (3 significant digits:
	// 256 µs wide at 500 ms), so allow the histogram its 0.1 % precision.
	if st := res.Types["stalling"]; st != nil && st.Failed.Min() < us(500*time.Millisecond)*999/1000 {
		t.Errorf("a timed-out send measured %dµs, under the 500 ms timeout", st.Failed.Min())
	}
	rec, err := res.Record(record.Settings{Label: "faults"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Partial || rec.Overall.Tally.Errors() != 3*perPhase {
		t.Errorf("record: partial %v, %d errors, want %d", rec.Partial, rec.Overall.Tally.Errors(), 3*perPhase)
	}
	// A SUT killed mid-flood (the refusing phase) does not look fast: the
	// latency rows hold the 70 answered sends, the 105 unanswered ones are
	// apart, and the table says which is which.
	if o := rec.Overall; o.Latency.Count != 2*perPhase || o.Failed.Count != 3*perPhase || o.Latency.Min < o.Service.Min {
		t.Errorf("record: latency over %d sends (min %dµs), failed %d; want %d and %d", o.Latency.Count, o.Latency.Min, o.Failed.Count, 2*perPhase, 3*perPhase)
	}
	var table strings.Builder
	if err := report.WriteTable(&table, rec); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("latency and service: over the %d answered sends", 2*perPhase),
		fmt.Sprintf("%d got no answer (connection refused %d, connection reset %d, timeout %d), kept apart", 3*perPhase, perPhase, perPhase, perPhase),
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, table.String())
		}
	}
}

// await takes n values from ch: n events a phase change waits for. The bound
// is no timing assumption: waiting that long means an event never came.
func await(ch <-chan struct{}, n int, what string) error {
	bound := time.NewTimer(10 * time.Second)
	defer bound.Stop()
	for i := range n {
		select {
		case <-ch:
		case <-bound.C:
			return fmt.Errorf("only %d of %d %s within 10 s", i, n, what)
		}
	}
	return nil
}
