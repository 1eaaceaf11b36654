package redirect

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestSameHost specifies the policy on the redirects a fetch may meet.
func TestSameHost(t *testing.T) {
	req := func(u string) *http.Request {
		r, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	chain := func(n int, u string) []*http.Request {
		via := make([]*http.Request, n)
		for i := range via {
			via[i] = req(u)
		}
		return via
	}
	for _, tc := range []struct {
		name string
		next string
		via  []*http.Request
		want error // nil: followed
	}{
		// A move on the same origin (an old path, a trailing slash): followed.
		{"same host", "https://a.test/users/alice", chain(1, "https://a.test/@alice"), nil},
		// Host names compare case-insensitively.
		{"same host, other case", "https://A.test/users/alice", chain(1, "https://a.test/@alice"), nil},
		// Another host: refused, the signed GET must not go there.
		{"other host", "https://b.test/users/alice", chain(1, "https://a.test/users/alice"), ErrCrossHost},
		// Another port is another origin.
		{"other port", "https://a.test:8443/users/alice", chain(1, "https://a.test/users/alice"), ErrCrossHost},
		// The first request's host counts, not the last hop's.
		{"back to the first host after a hop", "https://a.test/x", append(chain(1, "https://a.test/"), req("https://b.test/")), nil},
		// net/http's default bound on a chain.
		{"tenth redirect", "https://a.test/x", chain(MaxRedirects, "https://a.test/x"), ErrTooMany},
		{"ninth redirect", "https://a.test/x", chain(MaxRedirects-1, "https://a.test/x"), nil},
	} {
		err := SameHost(req(tc.next), tc.via)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestClientRefusesBeforeSending: two real servers, the first redirecting to
// the second. Through Client the second receives nothing, and the caller's
// client is left as it was.
func TestClientRefusesBeforeSending(t *testing.T) {
	var second atomic.Int64
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		second.Add(1)
		io.WriteString(w, "{}")
	}))
	defer b.Close()
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/users/alice", http.StatusMovedPermanently)
			return
		}
		if r.URL.Path == "/users/alice" {
			io.WriteString(w, "{}")
			return
		}
		http.Redirect(w, r, b.URL+r.URL.Path, http.StatusFound)
	}))
	defer a.Close()

	caller := &http.Client{}
	c := Client(caller)
	if caller.CheckRedirect != nil {
		t.Error("Client changed the caller's client")
	}
	resp, err := c.Get(a.URL + "/moved")
	if err != nil {
		t.Fatalf("a redirect on the same host: %v", err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/users/alice" {
		t.Errorf("same-host redirect ended at %s", resp.Request.URL)
	}
	if _, err := c.Get(a.URL + "/users/bob"); !errors.Is(err, ErrCrossHost) {
		t.Errorf("a redirect to another host: err = %v, want ErrCrossHost", err)
	}
	if n := second.Load(); n != 0 {
		t.Errorf("the other host received %d requests, want none", n)
	}
}
