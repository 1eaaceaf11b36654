package h1

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// untimed is a context with a deadline but no timer behind it, as a
// flood's send context is: its Done is its parent's, its Err says the
// deadline passed once it has.
type untimed struct {
	context.Context
	deadline time.Time
}

func (u untimed) Deadline() (time.Time, bool) { return u.deadline, true }

func (u untimed) Err() error {
	if err := u.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(u.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// post makes one POST with ctx and reads its answer to the end.
func post(t *testing.T, tr *Transport, ctx context.Context, url string) (int, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// TestAborterBoundsAndEnds: a request whose context holds an Aborter is
// bounded by its context's deadline though no timer of the context's
// fires, ends at once when aborted, and leaves no bound on a connection
// that goes on to carry requests without one.
func TestAborterBoundsAndEnds(t *testing.T) {
	t.Run("deadline with no timer behind it", func(t *testing.T) {
		s := startRaw(t, answer{hold: true})
		tr := NewTransport(Options{})
		defer tr.CloseIdleConnections()
		ctx := untimed{WithAborter(context.Background(), &Aborter{}), time.Now().Add(300 * time.Millisecond)}
		start := time.Now()
		_, err := post(t, tr, ctx, s.url())
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 5*time.Second {
			t.Errorf("a held answer ended after %v with %v, want the deadline's error after 300ms", took, err)
		}
	})
	t.Run("aborted in flight, then before sending", func(t *testing.T) {
		s := startRaw(t, answer{hold: true}, answer{raw: ok2})
		tr := NewTransport(Options{})
		defer tr.CloseIdleConnections()
		a := &Aborter{}
		ctx := WithAborter(context.Background(), a) // no deadline, never done
		go func() {
			// Not waitFor: its Fatalf would end this goroutine, not the
			// test, and leave the request waiting forever. Past 10 s it
			// aborts anyway, and the check below reports how long it took.
			for i := 0; i < 1000 && s.next.Load() != 1; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			a.Abort()
		}()
		start := time.Now()
		_, err := post(t, tr, ctx, s.url())
		if took := time.Since(start); !errors.Is(err, context.Canceled) || took > 5*time.Second {
			t.Errorf("an aborted request ended after %v with %v, want context.Canceled once it reached the server", took, err)
		}
		if _, err := post(t, tr, ctx, s.url()); !errors.Is(err, context.Canceled) {
			t.Errorf("a request after Abort: %v, want context.Canceled", err)
		}
		if got := s.next.Load(); got != 1 {
			t.Errorf("the server read %d requests, want 1: none is sent after Abort", got)
		}
	})
	t.Run("a bound is not left on a resting connection", func(t *testing.T) {
		s := startRaw(t, answer{raw: ok2}, answer{raw: ok2}, answer{raw: ok2})
		tr := NewTransport(Options{IdleTimeout: time.Minute})
		defer tr.CloseIdleConnections()
		deadline := time.Now().Add(time.Second)
		bounded := untimed{WithAborter(context.Background(), &Aborter{}), deadline}
		if status, err := post(t, tr, bounded, s.url()); err != nil || status != 200 {
			t.Fatalf("bounded request: %d %v", status, err)
		}
		// The connection rests past the first request's deadline: it must
		// still be taken as alive, and carry a request with no deadline
		// and one with a later deadline.
		time.Sleep(time.Until(deadline) + 100*time.Millisecond)
		if status, err := post(t, tr, context.Background(), s.url()); err != nil || status != 200 {
			t.Errorf("unbounded request on the same connection: %d %v", status, err)
		}
		later := untimed{WithAborter(context.Background(), &Aborter{}), time.Now().Add(time.Minute)}
		if status, err := post(t, tr, later, s.url()); err != nil || status != 200 {
			t.Errorf("request with a later deadline on the same connection: %d %v", status, err)
		}
		if got := s.accepts.Load(); got != 1 {
			t.Errorf("%d connections, want 1: a connection resting past a deadline was taken for dead", got)
		}
	})
	t.Run("one request at a time", func(t *testing.T) {
		release := make(chan struct{})
		s := startRaw(t, answer{raw: ok2, after: release}, answer{raw: ok2})
		tr := NewTransport(Options{})
		defer tr.CloseIdleConnections()
		ctx := WithAborter(context.Background(), &Aborter{})
		first := make(chan error, 1)
		go func() { _, err := post(t, tr, ctx, s.url()); first <- err }()
		waitFor(t, "the first request to reach the server", func() bool { return s.next.Load() == 1 })
		if _, err := post(t, tr, ctx, s.url()); !errors.Is(err, errAborterShared) {
			t.Errorf("a second request while the first holds the Aborter: %v, want %v", err, errAborterShared)
		}
		close(release)
		if err := <-first; err != nil {
			t.Errorf("the first request: %v", err)
		}
	})
}
