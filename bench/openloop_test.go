//go:build linux

package main

import (
	"net/http"
	"net/http/httptest"
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
				if o.OK != window || o.Achieved != rate || o.LatencyP99MS <= 0 || o.FirstError != "" {
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

// TestOpenLoopRefusesAName: the reference dials IPv4 literals only, and
// says so.
func TestOpenLoopRefusesAName(t *testing.T) {
	o := openLoopTrial(t.Context(), [][]byte{[]byte("x")}, "sink.invalid:80", 100, defaultConfig())
	if !strings.Contains(o.Why, "not an IPv4 address") {
		t.Errorf("why %q", o.Why)
	}
}
