package h1

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeRead writes a POST of body to url with Write and, when it was
// written, reads its answer with Read: the request is changed between the
// two, as the flood's dispatcher reuses it at once, so only what Write
// kept may count.
func writeRead(t *testing.T, tr *Transport, url, method, body string) (ok bool, status int, got string, err error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	w, ok, err := tr.Write(req, 0, time.Now().Add(10*time.Second))
	if !ok || err != nil {
		return ok, 0, "", err
	}
	*req = http.Request{Method: http.MethodGet} // reused for something else
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.Read(ctx, w)
	if err != nil {
		return true, 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return true, resp.StatusCode, string(b), err
}

// TestWriteRead: Write takes only a connection resting in the pool, and
// the answer Read reads is framed as RoundTrip frames it, from what the
// request asked when it was written.
func TestWriteRead(t *testing.T) {
	for _, c := range []struct {
		name   string
		first  answer // to the RoundTrip that leaves a connection resting
		pause  time.Duration
		method string
		second answer // to the written request
		ok     bool   // written: a connection rested, open
		status int
		body   string
		dials  int64 // connections the server accepted in all
		again  bool  // the connection rests again after the second answer
	}{
		// A resting connection carries the written request; its answer
		// read to the end, the connection rests again.
		{"resting", answer{raw: ok2}, 0, http.MethodPost, answer{raw: ok2}, true, 200, "ok", 1, true},
		// A chunked answer is read to its last chunk.
		{"chunked", answer{raw: ok2}, 0, http.MethodPost, answer{raw: "HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n"}, true, 202, "ab", 1, true},
		// The request was a HEAD when written: its answer has no body,
		// whatever Content-Length says, though the request was reused as
		// a GET before Read.
		{"head as written", answer{raw: ok2}, 0, http.MethodHead, answer{raw: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"}, true, 200, "", 1, true},
		// Connection: close in the answer: the connection does not rest.
		{"answer closes", answer{raw: ok2}, 0, http.MethodPost, answer{raw: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", closeNow: true}, true, 200, "ok", 1, false},
		// The server closed the resting connection: nothing is written,
		// and the caller dials (not Write).
		{"closed while resting", answer{raw: ok2, closeIdle: 50 * time.Millisecond}, 300 * time.Millisecond, http.MethodPost, answer{raw: ok2}, false, 0, "", 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startRaw(t, c.first, c.second)
			tr := NewTransport(Options{IdleTimeout: time.Minute})
			defer tr.CloseIdleConnections()
			if _, _, _, err := send(t, tr, s.url(), "{}", 10*time.Second); err != nil {
				t.Fatal(err)
			}
			time.Sleep(c.pause)
			ok, status, body, err := writeRead(t, tr, s.url(), c.method, "{}")
			if ok != c.ok || err != nil || status != c.status || body != c.body {
				t.Fatalf("written %v: %d %q %v, want written %v: %d %q", ok, status, body, err, c.ok, c.status, c.body)
			}
			if got := s.accepts.Load(); got != c.dials {
				t.Errorf("%d connections, want %d", got, c.dials)
			}
			rests := len(tr.idle[poolKey{"http", s.ln.Addr().String()}]) == 1
			if rests != c.again {
				t.Errorf("a connection rests after the answer: %v, want %v", rests, c.again)
			}
		})
	}
}

// TestWriteNothingResting: with no connection in the pool Write dials
// none and writes nothing; a request it cannot send is refused as
// RoundTrip refuses it.
func TestWriteNothingResting(t *testing.T) {
	s := startRaw(t, answer{raw: ok2})
	tr := NewTransport(Options{})
	defer tr.CloseIdleConnections()
	if ok, _, _, err := writeRead(t, tr, s.url(), http.MethodPost, "{}"); ok || err != nil {
		t.Errorf("written %v (%v) with no connection resting", ok, err)
	}
	if got := s.accepts.Load(); got != 0 {
		t.Errorf("Write dialled %d connections", got)
	}
	if ok, _, _, err := writeRead(t, tr, "ftp://"+s.ln.Addr().String()+"/", http.MethodPost, "{}"); !ok || err == nil {
		t.Errorf("an ftp URL: written %v, error %v; want a refusal", ok, err)
	}
}

// TestReadEndsWithItsAborter: the answer to a written request is bounded
// by the reader's Aborter, as RoundTrip's is: aborted, the read ends with
// context.Canceled and the connection is closed.
func TestReadEndsWithItsAborter(t *testing.T) {
	s := startRaw(t, answer{raw: ok2}, answer{hold: true})
	tr := NewTransport(Options{})
	defer tr.CloseIdleConnections()
	if _, _, _, err := send(t, tr, s.url(), "{}", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.url(), strings.NewReader("{}"))
	w, ok, err := tr.Write(req, 0, time.Now().Add(time.Minute))
	if !ok || err != nil {
		t.Fatalf("written %v: %v", ok, err)
	}
	a := &Aborter{}
	ctx, cancel := context.WithDeadline(WithAborter(context.Background(), a), time.Now().Add(time.Minute))
	defer cancel()
	time.AfterFunc(100*time.Millisecond, a.Abort)
	start := time.Now()
	if _, err := tr.Read(ctx, w); err != context.Canceled {
		t.Errorf("Read: %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the abort took %v", took)
	}
	if n := len(tr.idle[poolKey{"http", s.ln.Addr().String()}]); n != 0 {
		t.Errorf("%d connections rest after the abort, want 0", n)
	}
}

// TestTakeIdleKeepsToLanes: the pool's take that Write makes for a lane
// takes, of the connections resting, the most recent of its lane among
// the few rested last, else the most recent, which is its lane's from
// then on; RoundTrip's (anyLane) takes the most recent. The pool is
// listed oldest first, by lane.
func TestTakeIdleKeepsToLanes(t *testing.T) {
	for _, c := range []struct {
		name     string
		resting  []int // each resting connection's lane, oldest first
		lane     int   // the lane that takes
		took     int   // the index of the connection taken
		tookLane int   // its lane after
	}{
		// Its own on top: that one.
		{"its own on top", []int{1, 0, 1}, 1, 2, 1},
		// Another's on top, its own under it: its own.
		{"its own under another's", []int{0, 1, 0}, 1, 1, 1},
		// Two of its own: the more recent.
		{"the more recent of its own", []int{1, 1, 0}, 1, 1, 1},
		// None of its own: the most recent, now its own.
		{"none of its own", []int{0, 0, 0}, 1, 2, 1},
		// Its own only below the look: the most recent, now its own.
		{"its own out of sight", append([]int{1}, make([]int, laneLook)...), 1, laneLook, 1},
		// Its own at the edge of the look: its own.
		{"its own at the look's edge", append([]int{1}, make([]int, laneLook-1)...), 1, 0, 1},
		// A connection no Write has taken yet is no lane's.
		{"a new connection", []int{1, anyLane}, 0, 1, 0},
		// A RoundTrip keeps to no lane: the most recent, lane unchanged.
		{"any lane", []int{1, 0}, anyLane, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTransport(Options{})
			key := poolKey{"http", "sink.test:80"}
			var cs []*conn
			for _, lane := range c.resting {
				cs = append(cs, &conn{lane: lane, idleSince: time.Now()})
			}
			tr.idle[key] = slices.Clone(cs)
			got, _ := tr.takeIdle(key, c.lane)
			if got != cs[c.took] {
				t.Fatalf("took connection %d, want %d", slices.Index(cs, got), c.took)
			}
			if got.lane != c.tookLane {
				t.Errorf("the connection taken is lane %d's, want %d's", got.lane, c.tookLane)
			}
			left := slices.Delete(slices.Clone(cs), c.took, c.took+1)
			if !slices.Equal(tr.idle[key], left) {
				t.Errorf("the pool holds %d connections in another order than the rest's", len(tr.idle[key]))
			}
		})
	}
}
