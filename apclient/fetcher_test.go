package apclient

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRedirectPolicy: two real servers, home and other. A redirect on
// home's host is followed; any redirect away from it is refused before the
// request leaves, so other receives nothing (a check of the answer's final
// URL would come too late: the signed GET would be there already).
func TestRedirectPolicy(t *testing.T) {
	var otherHits atomic.Int64
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		serveDoc("application/activity+json", `{}`)(w, r)
	})
	var foreignName atomic.Int64
	var home *server
	home = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "localhost:") {
			foreignName.Add(1) // the home server under another name
		}
		switch r.URL.Path {
		case "/@alice": // a renamed route on the same host
			http.Redirect(w, r, "/users/alice", http.StatusMovedPermanently)
		case "/users/alice":
			serveDoc("application/activity+json", `{"id":"alice"}`)(w, r)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/other-name": // the same server under another host name
			http.Redirect(w, r, strings.Replace(home.URL, "127.0.0.1", "localhost", 1)+"/users/alice", http.StatusFound)
		default: // moved elsewhere
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
		}
	})
	caller := home.Client()
	f := signedFetcher(t, caller, Options{})
	for _, tc := range []struct {
		name string
		path string
		want error // nil: the document arrives
	}{
		// A move on the keyId's own host: followed.
		{"same host", "/@alice", nil},
		// Another host (and port): refused before sending.
		{"other host", "/users/mallory", ErrRedirect},
		// Another name for the same address and port: still another host.
		{"other name", "/other-name", ErrRedirect},
		// A chain longer than MaxRedirects: refused.
		{"too many", "/loop", ErrRedirect},
	} {
		_, err := f.Get(context.Background(), home.URL+tc.path, "")
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if n := otherHits.Load() + foreignName.Load(); n != 0 {
		t.Errorf("the other hosts received %d requests, want none", n)
	}
	if caller.CheckRedirect != nil {
		t.Error("New changed the caller's client")
	}
}

// TestSameHost specifies the policy on the chains a fetch may meet.
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
		ok   bool
	}{
		// The first request is no redirect.
		{"first request", "https://a.test/x", nil, true},
		// Host names compare case-insensitively.
		{"same host, other case", "https://A.test/users/alice", chain(1, "https://a.test/@alice"), true},
		// Another host: refused.
		{"other host", "https://b.test/users/alice", chain(1, "https://a.test/users/alice"), false},
		// Another port is another origin.
		{"other port", "https://a.test:8443/users/alice", chain(1, "https://a.test/users/alice"), false},
		// The first request's host counts, not the last hop's.
		{"back to the first host after a hop", "https://a.test/x", append(chain(1, "https://a.test/"), req("https://b.test/")), true},
		// net/http's default bound on a chain.
		{"tenth redirect", "https://a.test/x", chain(MaxRedirects, "https://a.test/x"), false},
		{"ninth redirect", "https://a.test/x", chain(MaxRedirects-1, "https://a.test/x"), true},
	} {
		err := SameHost(req(tc.next), tc.via)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrRedirect) {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestGetChecksTheAnswer: what Get refuses, and the error each refusal
// wraps; a refused URL is never requested.
func TestGetChecksTheAnswer(t *testing.T) {
	const limit = 64
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/at-limit":
			serveDoc("application/activity+json", `"`+strings.Repeat("a", limit-2)+`"`)(w, r)
		case "/over-limit":
			serveDoc("application/activity+json", `"`+strings.Repeat("a", limit-1)+`"`)(w, r)
		case "/ld":
			serveDoc(`application/ld+json; profile="https://www.w3.org/ns/activitystreams"`, `{}`)(w, r)
		case "/html":
			serveDoc("text/html; charset=utf-8", `<html></html>`)(w, r)
		case "/json":
			serveDoc("application/json", `{}`)(w, r)
		case "/untyped":
			w.Header()["Content-Type"] = nil // no sniffing either
			fmt.Fprint(w, `{}`)
		case "/gone":
			http.Error(w, "  this actor was deleted  ", http.StatusGone)
		default:
			serveDoc("application/activity+json", `{}`)(w, r)
		}
	})
	f := signedFetcher(t, s.Client(), Options{MaxBodyBytes: limit})
	for _, tc := range []struct {
		name   string
		url    string
		accept string
		want   error // nil: the body comes back
		code   int   // for ErrStatus
	}{
		// A body of exactly the limit is whole.
		{"at the limit", s.URL + "/at-limit", "", nil, 0},
		// One byte more: refused, not cut short.
		{"over the limit", s.URL + "/over-limit", "", ErrTooLarge, 0},
		// ld+json is an ActivityPub type (its profile is not judged here).
		{"ld+json", s.URL + "/ld", "", nil, 0},
		// A web page where an actor was expected: Mastodon refuses it too.
		{"HTML", s.URL + "/html", "", ErrContentType, 0},
		// Plain JSON was not asked for by AcceptActivity.
		{"plain JSON for an actor", s.URL + "/json", "", ErrContentType, 0},
		// ... but is when the caller asks for it.
		{"plain JSON asked for", s.URL + "/json", "application/json", nil, 0},
		// No Content-Type at all.
		{"no Content-Type", s.URL + "/untyped", "", ErrContentType, 0},
		// A 410 is a *StatusError carrying the code.
		{"gone", s.URL + "/gone", "", ErrStatus, http.StatusGone},
		// Not an http(s) URL: refused before anything is sent.
		{"not http", "ftp://a.test/x", "", ErrNotHTTP, 0},
		{"relative", "/users/alice", "", ErrNotHTTP, 0},
	} {
		before := len(s.requests())
		body, err := f.Get(context.Background(), tc.url, tc.accept)
		switch {
		case tc.want == nil && (err != nil || len(body) == 0):
			t.Errorf("%s: %q, %v", tc.name, body, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		case tc.want != nil && body != nil:
			t.Errorf("%s: a refused answer returned %d bytes", tc.name, len(body))
		case StatusCode(err) != tc.code:
			t.Errorf("%s: StatusCode = %d, want %d", tc.name, StatusCode(err), tc.code)
		}
		if tc.want == ErrNotHTTP && len(s.requests()) != before {
			t.Errorf("%s: a request was sent", tc.name)
		}
	}
	if _, err := f.Get(context.Background(), s.URL+"/gone", ""); !strings.Contains(err.Error(), "HTTP 410: this actor was deleted") {
		t.Errorf("a status error should carry the server's reason: %v", err)
	}
}

// TestDoReturnsAnyAnswer: Do leaves judging to its caller (the lookup
// diagnosis): a 404 and a wrong type are answers, and the final URL after
// a same-host redirect is reported.
func TestDoReturnsAnyAnswer(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/@alice" {
			http.Redirect(w, r, "/users/alice", http.StatusFound)
			return
		}
		http.Error(w, "no", http.StatusNotFound)
	})
	f := signedFetcher(t, s.Client(), Options{})
	r, err := f.Do(context.Background(), s.URL+"/@alice", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusNotFound || r.URL != s.URL+"/users/alice" || !strings.HasPrefix(r.ContentType, "text/plain") || string(r.Body) != "no\n" {
		t.Errorf("response %+v", r)
	}
}

// TestTimeoutBoundsAFetch: Options.Timeout ends a fetch the server never
// answers, with the context's error.
func TestTimeoutBoundsAFetch(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	f := signedFetcher(t, s.Client(), Options{Timeout: 1})
	if _, err := f.Get(context.Background(), s.URL+"/stall", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
}

// FuzzAccepts: any Accept value and media type; a media type is always
// accepted by an Accept that names exactly it.
func FuzzAccepts(f *testing.F) {
	f.Add("application/activity+json, application/ld+json; profile=\"https://www.w3.org/ns/activitystreams\"", "application/ld+json")
	f.Add("*/*", "text/html")
	f.Add("application/*", "application/json")
	f.Add(",,;", "")
	f.Fuzz(func(t *testing.T, accept, mt string) {
		accepts(accept, mt)
		if !strings.ContainsAny(mt, ",;\"") && mt == strings.ToLower(strings.TrimSpace(mt)) && strings.Count(mt, "/") == 1 {
			if want, _, err := mime.ParseMediaType(mt); err == nil && want == mt && !accepts(mt, mt) {
				t.Errorf("accepts(%q, %q) = false", mt, mt)
			}
		}
	})
}
