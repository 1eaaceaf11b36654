package statuswriter

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestStatus: the status a handler answered with, whichever way it answered.
func TestStatus(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		want    int
	}{
		// An explicit status.
		{"header", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }, http.StatusGone},
		// A body first: net/http answers 200.
		{"body", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("{}")) }, http.StatusOK},
		// Nothing at all: net/http answers 200 too.
		{"nothing", func(http.ResponseWriter, *http.Request) {}, http.StatusOK},
		// A second WriteHeader is ignored by net/http, and here.
		{"twice", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			w.WriteHeader(http.StatusOK)
		}, http.StatusNotFound},
	} {
		rec := httptest.NewRecorder()
		sw := New(rec)
		c.handler(sw, httptest.NewRequest(http.MethodGet, "/", nil))
		if sw.Status() != c.want || rec.Code != c.want {
			t.Errorf("%s: recorded %d, answered %d, want %d", c.name, sw.Status(), rec.Code, c.want)
		}
	}
}

// TestFlushReachesTheWrappedWriter: a streaming handler behind the wrapper still flushes.
func TestFlushReachesTheWrappedWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	if err := http.NewResponseController(New(rec)).Flush(); err != nil || !rec.Flushed {
		t.Fatalf("flush: %v, flushed %v", err, rec.Flushed)
	}
}

// TestHijackedIsNoAnswer: a handler that takes the connection over and closes it answered
// nothing (status 0), and the client sees no status either.
func TestHijackedIsNoAnswer(t *testing.T) {
	got := make(chan int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := New(w)
		c, _, err := http.NewResponseController(sw).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		c.Close()
		got <- sw.Status()
	}))
	defer srv.Close()
	if resp, err := srv.Client().Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatalf("the client got %s", resp.Status)
	}
	if s := <-got; s != 0 {
		t.Fatalf("recorded %d for a hijacked connection, want 0", s)
	}
}
