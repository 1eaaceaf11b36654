package audience

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSUT is a small Mastodon client API in memory, for the set-up and
// probe tests: personas with tokens, remote accounts that resolve, follows
// accepted after a number of relationship reads, a home timeline.
type fakeSUT struct {
	mu          sync.Mutex
	tokens      map[string]string // token → persona
	lookupAuth  bool              // lookup wants a token (GoToSocial)
	acceptAfter int               // relationship reads before a follow shows following
	unknown     map[string]bool   // remote accts that do not resolve
	followedBy  map[string]bool   // "persona account-id": the remote follows the persona
	ids         map[string]string // acct → account id
	follows     map[string]int    // "persona id" → relationship reads since the follow
	home        map[string][]Status
	homeStatus  int // answer of the home timeline (0 = 200)
	homeDelay   time.Duration
	ignoreMaxID bool // answer the newest page whatever max_id says
	posts       int
}

func newFakeSUT(personas ...string) *fakeSUT {
	f := &fakeSUT{tokens: map[string]string{}, unknown: map[string]bool{}, followedBy: map[string]bool{},
		ids: map[string]string{}, follows: map[string]int{}, home: map[string][]Status{}}
	for i, p := range personas {
		f.tokens["tok-"+p] = p
		f.ids[p] = fmt.Sprint(i + 1)
	}
	return f
}

// start serves f and returns a client of it.
func (f *fakeSUT) start(t *testing.T) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, srv.Client(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// inMemory returns a client of f that answers each request in the calling
// goroutine, with no socket: under testing/synctest, the fake clock runs
// while the SUT takes its time.
func (f *fakeSUT) inMemory(t *testing.T) *Client {
	t.Helper()
	c, err := NewClient("http://sut.test", &http.Client{Transport: handlerTransport{f}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// handlerTransport answers requests with its handler, as a server would.
type handlerTransport struct{ h http.Handler }

func (ht handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	ht.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

func (f *fakeSUT) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	send := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	persona := f.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	p := r.URL.Path
	switch {
	case p == "/api/v1/instance":
		send(200, Instance{URI: "sut.test", Title: "fake", Version: "4.3.0"})
		return
	case p == "/api/v1/accounts/lookup":
		if f.lookupAuth && persona == "" {
			send(401, map[string]string{"error": "The access token is invalid"})
			return
		}
		acct := r.URL.Query().Get("acct")
		if strings.Contains(acct, "@") {
			if f.unknown[acct] {
				send(404, map[string]string{"error": "Record not found"})
				return
			}
			if f.ids[acct] == "" {
				f.ids[acct] = fmt.Sprint(1000 + len(f.ids))
			}
		}
		id, ok := f.ids[acct]
		if !ok {
			send(404, map[string]string{"error": "Record not found"})
			return
		}
		send(200, Account{ID: id, Username: strings.Split(acct, "@")[0], Acct: acct})
		return
	}
	if persona == "" {
		send(401, map[string]string{"error": "The access token is invalid"})
		return
	}
	switch {
	case p == "/api/v1/accounts/verify_credentials":
		send(200, Account{ID: f.ids[persona], Username: persona, Acct: persona})
	case strings.HasSuffix(p, "/follow"):
		id := strings.TrimSuffix(strings.TrimPrefix(p, "/api/v1/accounts/"), "/follow")
		f.follows[persona+" "+id] = 0
		send(200, Relationship{ID: id, Requested: true})
	case p == "/api/v1/accounts/relationships":
		var out []Relationship
		for _, id := range r.URL.Query()["id[]"] {
			n, ok := f.follows[persona+" "+id]
			if ok {
				f.follows[persona+" "+id] = n + 1
			}
			out = append(out, Relationship{ID: id, Following: ok && n >= f.acceptAfter, Requested: ok && n < f.acceptAfter,
				FollowedBy: f.followedBy[persona+" "+id]})
		}
		send(200, out)
	case p == "/api/v1/statuses":
		f.posts++
		r.ParseForm()
		send(200, Status{ID: fmt.Sprint(f.posts), URI: fmt.Sprintf("https://sut.test/users/%s/statuses/%d", persona, f.posts),
			CreatedAt: time.Now().UTC(), Content: r.Form.Get("status"), Visibility: r.Form.Get("visibility")})
	case p == "/api/v1/timelines/home":
		time.Sleep(f.homeDelay)
		if f.homeStatus != 0 {
			send(f.homeStatus, map[string]string{"error": "nope"})
			return
		}
		home := f.home[persona]
		if id := r.URL.Query().Get("max_id"); id != "" && !f.ignoreMaxID {
			i := slices.IndexFunc(home, func(s Status) bool { return s.ID == id })
			home = home[i+1:] // i = -1: the whole home, as an unknown id would
		}
		if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n < len(home) {
			home = home[:n]
		}
		send(200, home)
	default:
		send(404, map[string]string{"error": "Record not found"})
	}
}
