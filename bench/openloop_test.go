//go:build linux

package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestOpenLoopTrial drives the open-loop reference against real listeners:
// it counts what a trial's window offered, what was answered and how, and
// fails every send whose answer is not 2xx or not framed as it can read.
func TestOpenLoopTrial(t *testing.T) {
	cfg := defaultConfig()
	cfg.Trial, cfg.Warmup = 600*time.Millisecond, 100*time.Millisecond
	const rate = 400
	const window = 200 // sends due in the measured 500 ms at 400/s
	req := []byte("POST /inbox HTTP/1.1\r\nHost: sink.test\r\nContent-Length: 2\r\n\r\n{}")
	for _, tc := range []struct {
		name      string
		handler   http.HandlerFunc
		ok        bool   // every send answered 2xx
		firstErr  string // else a part of the first failure
		dialEvery bool   // a connection a send
	}{
		// The null sink's answer: every send answered, over kept-alive connections.
		{"202", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }, true, "", false},
		// A body is read to its end before the connection is used again.
		{"200 with a body", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("accepted")) }, true, "", false},
		// The server closes after each answer, and says so: each send dials.
		{"close", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusAccepted)
		}, true, "", true},
		// An error status fails the send and names the status.
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusInternalServerError) }, false, "500", false},
		// A chunked answer is refused, not misread.
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("a"))
			w.(http.Flusher).Flush()
		}, false, "Transfer-Encoding", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			o := openLoopTrial(t.Context(), [][]byte{req}, strings.TrimPrefix(srv.URL, "http://"), rate, cfg)
			if o.Why != "" {
				t.Fatal(o.Why)
			}
			// The schedule is exact: 200 sends due in the window.
			if o.Offered != window || o.Completed != window || o.Dropped != 0 {
				t.Fatalf("offered %d, completed %d, dropped %d; want %d, %d, 0", o.Offered, o.Completed, o.Dropped, window, window)
			}
			if tc.ok {
				if o.OK != window || o.Achieved != rate || o.LatencyP99MS <= 0 || o.LatencyP99MS > 500 || o.FirstError != "" {
					t.Errorf("ok %d, achieved %.0f/s, p99 %.2f ms, first error %q; want all %d ok at %d/s", o.OK, o.Achieved, o.LatencyP99MS, o.FirstError, window, rate)
				}
			} else if o.OK != 0 || !strings.Contains(o.FirstError, tc.firstErr) {
				t.Errorf("ok %d, first error %q; want none ok, the first error naming %q", o.OK, o.FirstError, tc.firstErr)
			}
			// Sends of the warm-up dial too, so every trial dials at least the window's count when each send dials.
			if tc.dialEvery && o.Conns < window || !tc.dialEvery && (o.Conns < 1 || o.Conns > 20) {
				t.Errorf("%d connections dialled (one a send: %v)", o.Conns, tc.dialEvery)
			}
			if o.CPUPerSend <= 0 {
				t.Errorf("CPU a send %.1f µs", o.CPUPerSend)
			}
		})
	}
}

// TestOpenLoopWaitsForTheWholeAnswer: an answer whose body comes 20 ms
// after its head is read in parts and timed to its end.
func TestOpenLoopWaitsForTheWholeAnswer(t *testing.T) {
	cfg := defaultConfig()
	cfg.Trial, cfg.Warmup = 600*time.Millisecond, 100*time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte("{"))
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("}"))
	}))
	defer srv.Close()
	req := []byte("POST /inbox HTTP/1.1\r\nHost: sink.test\r\nContent-Length: 2\r\n\r\n{}")
	o := openLoopTrial(t.Context(), [][]byte{req}, strings.TrimPrefix(srv.URL, "http://"), 100, cfg)
	if o.Why != "" || o.OK != 50 || o.Completed != 50 {
		t.Fatalf("why %q, %d ok of %d completed; want all 50 of the window", o.Why, o.OK, o.Completed)
	}
	if o.LatencyP99MS < 20 || o.LatencyP99MS > 500 {
		t.Errorf("p99 latency %.2f ms; want the 20 ms the body took, in milliseconds", o.LatencyP99MS)
	}
}

// TestOpenLoopLimits: sends beyond the in-flight bound are dropped, never
// delayed, and sends still unanswered after the drain fail.
func TestOpenLoopLimits(t *testing.T) {
	// Two loops: the warm-up's first sends take every slot of the "dropped" row.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	cfg := defaultConfig()
	cfg.Trial, cfg.Warmup = 600*time.Millisecond, 100*time.Millisecond
	const window = 200 // sends due in the measured 500 ms at 400/s
	req := []byte("POST /inbox HTTP/1.1\r\nHost: sink.test\r\nContent-Length: 2\r\n\r\n{}")
	for _, tc := range []struct {
		name               string
		inflight           int
		completed, dropped int64
		firstErr           string
	}{
		// Room for every send: each is written, waits out the drain, and fails.
		{"drained", 1024, window, 0, "no answer within the trial and its drain"},
		// Room for four: the warm-up's first sends hold it, every measured send is dropped.
		{"dropped", 4, 0, window, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A server that never answers (until the client hangs up, or the test ends).
			stop := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // so that net/http watches for the client's close
				select {
				case <-r.Context().Done():
				case <-stop:
				}
			}))
			defer srv.Close()
			defer close(stop)
			start := time.Now()
			o := openLoopTrialWithin(t.Context(), [][]byte{req}, strings.TrimPrefix(srv.URL, "http://"), 400, cfg,
				openLoopLimits{inflight: tc.inflight, drain: 200 * time.Millisecond})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the trial took %v: the drain did not bound it", took)
			}
			if o.Why != "" || o.Offered != window || o.OK != 0 || o.Completed != tc.completed || o.Dropped != tc.dropped ||
				!strings.Contains(o.FirstError, tc.firstErr) {
				t.Errorf("why %q, offered %d, ok %d, completed %d, dropped %d, first error %q; want %d offered, none ok, %d completed, %d dropped, %q",
					o.Why, o.Offered, o.OK, o.Completed, o.Dropped, o.FirstError, window, tc.completed, tc.dropped, tc.firstErr)
			}
		})
	}
}

// TestOpenLoopLeavesAConnectionClosedBehindItsAnswer: a server that
// closes each connection right after its answer, without saying so, costs
// a dial a send, never a send: the close is seen before the connection
// could carry another request.
func TestOpenLoopLeavesAConnectionClosedBehindItsAnswer(t *testing.T) {
	cfg := defaultConfig()
	cfg.Trial, cfg.Warmup = 600*time.Millisecond, 100*time.Millisecond
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	req := []byte("POST /inbox HTTP/1.1\r\nHost: sink.test\r\nContent-Length: 2\r\n\r\n{}")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				got := make([]byte, len(req))
				if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, req) {
					return
				}
				c.Write([]byte("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"))
			}()
		}
	}()
	o := openLoopTrial(t.Context(), [][]byte{req}, ln.Addr().String(), 100, cfg)
	if o.Why != "" || o.OK != 50 || o.Completed != 50 || o.FirstError != "" {
		t.Errorf("why %q, %d ok of %d completed, first error %q; want all 50 of the window", o.Why, o.OK, o.Completed, o.FirstError)
	}
	if o.Conns < 60 {
		t.Errorf("%d connections dialled for 60 sends", o.Conns)
	}
}

// TestOpenLoopRefusesAName: the reference dials IPv4 literals only, and
// resolves no name.
func TestOpenLoopRefusesAName(t *testing.T) {
	for _, addr := range []string{"localhost:80", "[::1]:80", "127.0.0.1"} {
		o := openLoopTrial(t.Context(), [][]byte{[]byte("x")}, addr, 100, defaultConfig())
		if !strings.Contains(o.Why, "not an IPv4 address") {
			t.Errorf("%s: why %q", addr, o.Why)
		}
	}
}
