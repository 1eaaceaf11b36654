package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// loopResult is one closed-loop measurement: requests answered with the
// wanted status per second of the measured window, and the others.
type loopResult struct {
	// Client is clientGo or clientWrk: which client measured.
	Client   string  `json:"client"`
	Rate     float64 `json:"rate"`
	OK       int64   `json:"ok"`
	Bad      int64   `json:"bad"`
	FirstBad string  `json:"first_bad,omitempty"`
	// Seconds is the measured window as the client timed it (wrk only).
	Seconds float64 `json:"seconds,omitempty"`
	// P50 and P99 are wrk's latency percentiles, in ms (wrk only).
	P50 float64 `json:"p50_ms,omitempty"`
	P99 float64 `json:"p99_ms,omitempty"`
	// ClientCPU is the user+system CPU the client process used, in
	// seconds (wrk only: the Go client shares the bench's process).
	ClientCPU float64 `json:"client_cpu_seconds,omitempty"`
	// ClientSys is the system part of ClientCPU (wrk only).
	ClientSys float64 `json:"client_sys_seconds,omitempty"`
}

// closedLoop sends requests made by mk (i counts up from 0, shared by all
// clients) to the server at addr, whatever their URL's host, from conc
// clients back to back over keep-alive connections, for a warm-up of d/10
// and then d. A request counts when its answer, read to the end, has
// status want.
func closedLoop(ctx context.Context, addr string, conc int, d time.Duration, want int, mk func(i int64) *http.Request) loopResult {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConns: conc, MaxIdleConnsPerHost: conc, DisableCompression: true, IdleConnTimeout: time.Minute,
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, d+d/10)
	defer cancel()
	var next, ok, bad atomic.Int64
	var measuring atomic.Bool
	var once sync.Once
	var first string
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req := mk(next.Add(1) - 1).WithContext(ctx)
				resp, err := tr.RoundTrip(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if ctx.Err() != nil && (err != nil || !measuring.Load()) {
					return // cut off by the end of the window: not counted
				}
				if !measuring.Load() {
					continue
				}
				if err == nil && resp.StatusCode == want {
					ok.Add(1)
					continue
				}
				bad.Add(1)
				once.Do(func() {
					if err != nil {
						first = err.Error()
					} else {
						first = resp.Status
					}
				})
			}
		}()
	}
	warm := time.NewTimer(d / 10)
	select {
	case <-warm.C:
	case <-ctx.Done():
	}
	measuring.Store(true)
	t0 := time.Now()
	wg.Wait()
	el := time.Since(t0)
	r := loopResult{Client: clientGo, OK: ok.Load(), Bad: bad.Load(), FirstBad: first}
	if el > 0 {
		r.Rate = float64(r.OK) / el.Seconds()
	}
	if r.OK == 0 && r.Bad == 0 && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r.FirstBad = "interrupted"
	}
	return r
}

// checkPool sends each of the n requests mk makes (i = 0 … n-1) once, one
// at a time, to the server at addr and returns an error naming the first
// whose answer is not want (with the start of its body), or the first
// that fails. It bounds itself to a minute. It is how a pool is known to
// be answered as wanted before wrk, which only counts answers ≥ 400,
// replays it.
func checkPool(ctx context.Context, addr string, n int, want int, mk func(i int64) *http.Request) error {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for i := range int64(n) {
		req := mk(i).WithContext(ctx)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return fmt.Errorf("request %d (%s %s): %w", i, req.Method, req.URL.RequestURI(), err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("request %d (%s %s): %s, want %d: %q", i, req.Method, req.URL.RequestURI(), resp.Status, want, body)
		}
	}
	return nil
}

// median of xs (0 for none). xs keeps its order: a report lists rounds as
// they were measured.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Sorted(slices.Values(xs))
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// serve serves h on a new listener on 127.0.0.1:0 and returns its address
// and a function that stops it.
func serve(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go srv.Serve(l)
	return l.Addr().String(), func() { srv.Close() }, nil
}
