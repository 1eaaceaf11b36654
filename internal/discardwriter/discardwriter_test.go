package discardwriter

import (
	"net/http"
	"testing"
)

// TestStatusAndReset: the status is the first one written (200 for a body
// first), and Reset forgets it and the header.
func TestStatusAndReset(t *testing.T) {
	const body = -1 // in writes: a Write instead of a WriteHeader
	for _, c := range []struct {
		name   string
		writes []int
		want   int
	}{
		// The first status is kept.
		{"two statuses", []int{http.StatusGone, http.StatusOK}, http.StatusGone},
		// A body before any status is a 200, as net/http answers.
		{"body first", []int{body}, http.StatusOK},
		// A body after a status keeps that status.
		{"status then body", []int{http.StatusAccepted, body}, http.StatusAccepted},
		// Nothing written: no status yet.
		{"nothing", nil, 0},
	} {
		w := New()
		w.Header().Set("Vary", "Accept")
		for _, code := range c.writes {
			if code == body {
				w.Write([]byte("{}"))
			} else {
				w.WriteHeader(code)
			}
		}
		if w.Status() != c.want {
			t.Errorf("%s: status %d, want %d", c.name, w.Status(), c.want)
		}
		w.Reset()
		if w.Status() != 0 || len(w.Header()) != 0 {
			t.Errorf("%s: after Reset, status %d and header %v", c.name, w.Status(), w.Header())
		}
	}
}
