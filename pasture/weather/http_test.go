package weather

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// skyOf is a sky with spec in force over flood1.test and flood2.test.
func skyOf(t *testing.T, spec string) *Sky {
	t.Helper()
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Assign(s, []string{"flood1.test", "flood2.test"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	sky := &Sky{}
	sky.Set(f)
	return sky
}

// served is the handler behind the weather: what a clear origin answers.
var served = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) })

// TestAnswers: what an origin in each weather answers, whole, as a client
// reads it (status, the headers that matter, the body: golden files).
func TestAnswers(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, spec, method, path string
		draw                     float64 // what Rand draws
		status                   int
	}{
		// A flaky origin's draw below P answers as nginx in front of a dead upstream.
		{"flaky-502", "flaky=flood1.test:0.3", "GET", "/users/alice", 0.01, 502},
		{"flaky-503", "flaky=flood1.test:0.3", "POST", "/inbox", 0.15, 503},
		{"flaky-504", "flaky=flood1.test:0.3", "GET", "/users/alice", 0.29, 504},
		// A draw at or above P is served as usual.
		{"flaky-served", "flaky=flood1.test:0.3", "GET", "/users/alice", 0.3, 200},
		// Mastodon's 429: Retry-After in seconds, the reset as an ISO 8601 time.
		{"limited", "limited=flood1.test:90s", "POST", "/users/alice/inbox", 0, 429},
		// A gone origin's documents are Tombstones with the requested id.
		{"gone-actor", "gone=flood1.test", "GET", "/users/alice", 0, 410},
		{"gone-collection-page", "gone=flood1.test", "GET", "/users/alice/outbox?page=2", 0, 410},
		{"gone-instance-actor", "gone=flood1.test", "GET", "/actor", 0, 410},
		// Its WebFinger, NodeInfo and inboxes a plain 410.
		{"gone-webfinger", "gone=flood1.test", "GET", "/.well-known/webfinger?resource=acct:alice@flood1.test", 0, 410},
		{"gone-nodeinfo", "gone=flood1.test", "GET", "/nodeinfo/2.0", 0, 410},
		{"gone-inbox", "gone=flood1.test", "POST", "/inbox", 0, 410},
		// A lapsed domain and broken certificates change nothing once a client got here.
		{"nxdomain", "nxdomain=flood1.test", "GET", "/users/alice", 0, 200},
		{"tls-expired", "tls-expired=flood1.test", "GET", "/users/alice", 0, 200},
		{"tls-wrong-name", "tls-wrong-name=flood1.test", "GET", "/users/alice", 0, 200},
		// Another origin's weather is not this one's.
		{"clear-neighbour", "gone=flood2.test", "GET", "/users/alice", 0, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &HTTP{Sky: skyOf(t, c.spec), Host: func(*http.Request) string { return "flood1.test" },
				Rand: func() float64 { return c.draw }, Now: func() time.Time { return at }}
			rec := httptest.NewRecorder()
			h.Wrap(served).ServeHTTP(rec, httptest.NewRequest(c.method, "https://flood1.test"+c.path, strings.NewReader("{}")))
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d", rec.Code, c.status)
			}
			var b strings.Builder
			keys := make([]string, 0, len(rec.Header()))
			for k := range rec.Header() {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b.WriteString(rec.Result().Status + "\n")
			for _, k := range keys {
				b.WriteString(k + ": " + rec.Header().Get(k) + "\n")
			}
			b.WriteString("\n" + rec.Body.String())
			golden(t, filepath.Join("testdata", c.name+".txt"), b.String())
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n got %q\nwant %q", path, got, want)
	}
}

// TestFlakyStatus: one draw decides both whether a flaky origin fails and
// which of the three statuses, each a third of the failures.
func TestFlakyStatus(t *testing.T) {
	for _, c := range []struct {
		u, p float64
		want int
	}{
		// The first third of [0, p) is 502,
		{0, 0.3, 502},
		{0.0999, 0.3, 502},
		// the second 503,
		{0.1, 0.3, 503},
		// the last 504,
		{0.2999, 0.3, 504},
		// and from p on, served as usual.
		{0.3, 0.3, 0},
		{0.99, 0.3, 0},
		// p = 1 fails everything, the largest draw still 504.
		{0.9999999, 1, 504},
	} {
		if got := flakyStatus(c.u, c.p); got != c.want {
			t.Errorf("flakyStatus(%v, %v) = %d, want %d", c.u, c.p, got, c.want)
		}
	}
}

// TestClearCostsNothing: with the weather clear nothing but the sky is
// read: not even the request's host.
func TestClearCostsNothing(t *testing.T) {
	h := &HTTP{Sky: &Sky{}, Host: func(*http.Request) string { t.Fatal("the host was looked up in clear weather"); return "" }}
	rec := httptest.NewRecorder()
	h.Wrap(served).ServeHTTP(rec, httptest.NewRequest("GET", "https://flood1.test/users/alice", nil))
	if rec.Body.String() != "served" {
		t.Fatalf("answered %q", rec.Body)
	}
}

// TestSlowWaitEnds: a slow origin's wait (an hour here) ends early: served at once when the
// weather changes or the server shuts down, and not served at all when the client goes away.
func TestSlowWaitEnds(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(sky *Sky, closing chan struct{}, cancel context.CancelFunc)
		// served says the handler behind the weather answered.
		served bool
	}{
		// The weather clears: the request is served at once.
		{"weather changes", func(sky *Sky, _ chan struct{}, _ context.CancelFunc) { sky.Set(nil) }, true},
		// The server shuts down: served at once too.
		{"shutdown", func(_ *Sky, closing chan struct{}, _ context.CancelFunc) { close(closing) }, true},
		// The client gives up: nothing is served.
		{"client goes away", func(_ *Sky, _ chan struct{}, cancel context.CancelFunc) { cancel() }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sky, closing := skyOf(t, "slow=flood1.test:1h:1"), make(chan struct{})
			waiting, done := make(chan struct{}, 1), make(chan struct{})
			var served bool
			h := &HTTP{Sky: sky, Closing: closing, Host: func(*http.Request) string { return "flood1.test" },
				Rand: func() float64 { waiting <- struct{}{}; return 0 }} // drawn just before the wait
			inner := h.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = true; w.Write([]byte("served")) }))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(done)
				inner.ServeHTTP(w, r)
			}))
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan string, 1)
			go func() {
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/users/alice", nil)
				resp, err := srv.Client().Do(req)
				if err != nil {
					got <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got <- string(b)
			}()
			<-waiting
			c.end(sky, closing, cancel)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the wait did not end")
			}
			if answer := <-got; served != c.served || c.served && answer != "served" {
				t.Errorf("served %v (the client got %q), want %v", served, answer, c.served)
			}
		})
	}
}

// TestWaitOutlastsOtherChanges: a slow origin's wait goes on when the weather changes for other
// origins, or is set again to the same condition, and ends only when its own origin's changes.
func TestWaitOutlastsOtherChanges(t *testing.T) {
	sky := skyOf(t, "slow=flood1.test:1h:1")
	waiting, done := make(chan struct{}, 1), make(chan struct{})
	h := &HTTP{Sky: sky, Host: func(*http.Request) string { return "flood1.test" },
		Rand: func() float64 { waiting <- struct{}{}; return 0 }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		h.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) })).ServeHTTP(w, r)
	}))
	defer srv.Close()
	go func() {
		if resp, err := srv.Client().Get(srv.URL + "/users/alice"); err == nil {
			resp.Body.Close()
		}
	}()
	<-waiting
	for _, spec := range []string{
		"slow=flood1.test:1h:1,gone=flood2.test", // another origin's weather changes
		"slow=flood1.test:1h:1",                  // the same weather, set again
	} {
		sky.Set(skyOf(t, spec).Now())
		select {
		case <-done:
			t.Fatalf("after %q the wait ended", spec)
		case <-time.After(200 * time.Millisecond):
		}
	}
	sky.Set(skyOf(t, "gone=flood1.test").Now()) // its own origin's weather changes
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end when its origin's weather changed")
	}
}

// TestBlackHolesAreBounded: past MaxHeld held connections, a black hole resets the next one as
// a down origin does, and takes connections again once a hold ends.
func TestBlackHolesAreBounded(t *testing.T) {
	closing := make(chan struct{})
	h := &HTTP{Sky: skyOf(t, "blackhole=flood1.test"), Host: func(*http.Request) string { return "flood1.test" },
		MaxHeld: 1, Closing: closing}
	srv := httptest.NewServer(h.Wrap(http.NotFoundHandler()))
	defer srv.Close()
	first := make(chan error, 1)
	go func() {
		c := srv.Client()
		c.Timeout = 30 * time.Second
		_, err := c.Get(srv.URL + "/users/alice")
		first <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); h.holding.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first connection was never held")
		}
	}
	c := srv.Client()
	c.Timeout = 30 * time.Second
	if _, err := c.Get(srv.URL + "/users/alice"); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("past the bound, a black hole answered %v; want a reset", err)
	}
	close(closing) // ends the first hold
	if err := <-first; err == nil {
		t.Error("the held request got an answer")
	}
}
