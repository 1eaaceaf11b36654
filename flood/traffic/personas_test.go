package traffic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/dialguard/dialguardtest"
	"github.com/crowdfed/crowd/internal/pipenet"
	"github.com/crowdfed/crowd/signing"
)

// fakeSUT serves WebFinger, actors and outboxes for a few hosts over TLS,
// like a real server in authorized-fetch mode: every actor and outbox GET
// must carry a valid signature of the crowd's instance actor.
type fakeSUT struct {
	srv      *httptest.Server
	verifier *signing.Verifier
	signed   atomic.Int64 // verified GETs
	inflight atomic.Int64
	peak     atomic.Int64
	stall    string // a user whose actor fetch never answers
	// held, when set, holds every request: the request puts a channel on
	// it and is answered once the test closes that channel.
	held chan chan struct{}
}

func newFakeSUT(t *testing.T, inst *actors.Actor) *fakeSUT {
	t.Helper()
	s := unstartedFakeSUT(inst)
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

// unstartedFakeSUT is a fake SUT that trusts inst's key, not yet serving.
func unstartedFakeSUT(inst *actors.Actor) *fakeSUT {
	return &fakeSUT{verifier: &signing.Verifier{Keys: signing.KeyResolverFunc(
		func(_ context.Context, keyID string, _ bool) (signing.PublicKey, error) {
			if keyID != inst.KeyID {
				return signing.PublicKey{}, fmt.Errorf("unknown key %s", keyID)
			}
			return signing.PublicKey{Key: inst.Key.Public(), Owner: inst.ID, ID: inst.KeyID}, nil
		})}}
}

// client reaches every host at the fake SUT, trusting its certificate.
func (s *fakeSUT) client(timeout time.Duration) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	addr := s.srv.Listener.Addr().String()
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		// httptest's certificate names example.com; every fake host uses it.
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"},
	}}
}

func (s *fakeSUT) serve(w http.ResponseWriter, r *http.Request) {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if s.held != nil {
		release := make(chan struct{})
		s.held <- release
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	host := r.Host
	base := "https://" + host
	if r.URL.Path == "/.well-known/webfinger" {
		user, h, _ := strings.Cut(strings.TrimPrefix(r.URL.Query().Get("resource"), "acct:"), "@")
		if h != host || user == "dave" {
			http.NotFound(w, r)
			return
		}
		writeDoc(w, map[string]any{"subject": "acct:" + user + "@" + host, "links": []map[string]string{
			{"rel": "self", "type": "application/activity+json", "href": base + "/users/" + user}}})
		return
	}
	if _, err := s.verifier.Verify(r.Context(), r, nil); err != nil {
		http.Error(w, "signature: "+err.Error(), http.StatusUnauthorized)
		return
	}
	s.signed.Add(1)
	rest, ok := strings.CutPrefix(r.URL.Path, "/users/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	user, sub, _ := strings.Cut(rest, "/")
	id := base + "/users/" + user
	switch sub {
	case "":
		if user == s.stall {
			<-r.Context().Done()
			return
		}
		doc := map[string]any{"id": id, "type": "Person", "inbox": id + "/inbox", "outbox": id + "/outbox",
			"followers": id + "/followers"}
		if host != "gts.test" { // GoToSocial has no shared inbox
			doc["endpoints"] = map[string]string{"sharedInbox": base + "/inbox"}
		}
		writeDoc(w, doc)
	case "outbox":
		writeDoc(w, outboxDoc(user, id, r.URL.Query().Get("page")))
	default:
		http.NotFound(w, r)
	}
}

// outboxDoc is the outbox of user (page "" = the collection), in the
// shapes servers use: alice a Mastodon-like paged outbox of Creates with an
// Announce; bob a collection with its first page embedded and bare ids;
// carol an empty one; everyone else one post.
func outboxDoc(user, id, page string) map[string]any {
	col := map[string]any{"id": id + "/outbox", "type": "OrderedCollection"}
	switch user {
	case "alice":
		switch page {
		case "":
			col["totalItems"] = 3
			col["first"] = id + "/outbox?page=1"
		case "1":
			return map[string]any{"type": "OrderedCollectionPage", "next": id + "/outbox?page=2", "orderedItems": []any{
				map[string]any{"type": "Create", "id": id + "/statuses/1/activity", "object": map[string]any{"id": id + "/statuses/1", "type": "Note"}},
				map[string]any{"type": "Announce", "id": id + "/statuses/x/activity", "object": "https://elsewhere.test/notes/1"},
				map[string]any{"type": "Create", "id": id + "/statuses/2/activity", "object": id + "/statuses/2"},
			}}
		case "2":
			return map[string]any{"type": "OrderedCollectionPage", "orderedItems": []any{
				map[string]any{"type": "Note", "id": id + "/statuses/3"},
			}}
		}
	case "bob":
		col["first"] = map[string]any{"type": "OrderedCollectionPage", "orderedItems": []any{id + "/statuses/9"}}
	case "carol":
		if page == "" {
			col["totalItems"] = 0
			col["first"] = id + "/outbox?page=1"
		} else {
			return map[string]any{"type": "OrderedCollectionPage", "orderedItems": []any{}}
		}
	default:
		col["orderedItems"] = []any{map[string]any{"type": "Create", "object": map[string]any{"id": id + "/statuses/1"}}}
	}
	return col
}

func writeDoc(w http.ResponseWriter, doc any) {
	w.Header().Set("Content-Type", "application/activity+json")
	json.NewEncoder(w).Encode(doc)
}

func discoverOpts(s *fakeSUT, inst *actors.Actor) DiscoverOptions {
	return DiscoverOptions{Client: s.client(5 * time.Second), Signer: signing.NewSigner(signing.SignerOptions{UserAgent: "crowd-test"}),
		KeyID: inst.KeyID, Key: inst.Key, Timeout: 5 * time.Second}
}

func TestDiscoverPersonas(t *testing.T) {
	w := testWorld(t, 1, 1)
	inst := w.Origins[0].Instance
	sut := newFakeSUT(t, inst)
	personas, warns, err := Discover(context.Background(), []string{"alice@sut.test", "acct:bob@gts.test", "@carol@sut.test"}, discoverOpts(sut, inst))
	if err != nil {
		t.Fatal(err)
	}
	byAcct := map[string]*Persona{}
	for _, p := range personas {
		byAcct[p.Acct] = p
	}
	for _, c := range []struct {
		acct, target string
		posts        []string
	}{
		// Mastodon-like: the shared inbox; posts from two pages, Creates
		// embedded or by id, the Announce skipped.
		{"alice@sut.test", "https://sut.test/inbox", []string{
			"https://sut.test/users/alice/statuses/1", "https://sut.test/users/alice/statuses/2", "https://sut.test/users/alice/statuses/3"}},
		// GoToSocial-like: no shared inbox, so its own; a bare id from an
		// embedded first page.
		{"bob@gts.test", "https://gts.test/users/bob/inbox", []string{"https://gts.test/users/bob/statuses/9"}},
		// An empty outbox: no posts, so no Likes of carol.
		{"carol@sut.test", "https://sut.test/inbox", nil},
	} {
		p := byAcct[c.acct]
		if p == nil {
			t.Errorf("%s not discovered", c.acct)
			continue
		}
		if p.Target != c.target || !slices.Equal(p.Posts, c.posts) {
			t.Errorf("%s: target %s, posts %v; want %s, %v", c.acct, p.Target, p.Posts, c.target, c.posts)
		}
		if p.ID != "https://"+strings.Split(c.acct, "@")[1]+"/users/"+strings.Split(c.acct, "@")[0] {
			t.Errorf("%s: id %s", c.acct, p.ID)
		}
	}
	if len(personas) != 3 || personas[0].Acct != "alice@sut.test" || personas[2].Acct != "carol@sut.test" {
		t.Errorf("personas out of order: %v", personas)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "carol@sut.test") || !strings.Contains(warns[0], "Likes") {
		t.Errorf("warnings %q: want one about carol's Likes", warns)
	}
	// alice: actor, outbox, 2 pages; bob: actor, outbox; carol: actor, outbox, page.
	if n := sut.signed.Load(); n != 9 {
		t.Errorf("%d signed GETs verified, want 9", n)
	}
}

func TestDiscoverInboxModes(t *testing.T) {
	w := testWorld(t, 1, 1)
	inst := w.Origins[0].Instance
	sut := newFakeSUT(t, inst)
	o := discoverOpts(sut, inst)
	o.Inbox = InboxPersonal
	ps, _, err := Discover(context.Background(), []string{"alice@sut.test"}, o)
	if err != nil || ps[0].Target != "https://sut.test/users/alice/inbox" {
		t.Errorf("personal: %v, %v", ps, err)
	}
	o.Inbox = InboxShared
	if _, _, err := Discover(context.Background(), []string{"alice@sut.test", "bob@gts.test"}, o); err == nil || !strings.Contains(err.Error(), "bob@gts.test") {
		t.Errorf("shared inbox of a server without one: %v, want an error naming bob@gts.test", err)
	}
	for _, c := range []struct {
		in   string
		want InboxMode
		ok   bool
	}{
		{"", InboxAuto, true},         // the default
		{"AUTO", InboxAuto, true},     // any case
		{"shared", InboxShared, true}, // named
		{"personal", InboxPersonal, true},
		{"sharedinbox", "", false}, // unknown
	} {
		got, err := ParseInboxMode(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("ParseInboxMode(%q) = %q, %v", c.in, got, err)
		}
	}
}

func TestDiscoverFailuresNameThePersona(t *testing.T) {
	w := testWorld(t, 1, 1)
	inst := w.Origins[0].Instance
	sut := newFakeSUT(t, inst)
	sut.stall = "erin"
	o := discoverOpts(sut, inst)
	o.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, _, err := Discover(context.Background(), []string{"alice@sut.test", "dave@sut.test", "erin@sut.test"}, o)
	if err == nil || !strings.Contains(err.Error(), "dave@sut.test") || !strings.Contains(err.Error(), "erin@sut.test") {
		t.Fatalf("err %v: want errors naming dave (unknown) and erin (stalls)", err)
	}
	if strings.Contains(err.Error(), "alice") {
		t.Errorf("err %v names alice, who was found", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("discovery took %v despite a 300ms per-request timeout", d)
	}

	// A wrong key: the SUT refuses the signed GET, and the error says so.
	o = discoverOpts(sut, inst)
	o.KeyID = w.Actors()[0].KeyID
	o.Key = w.Actors()[0].Key
	if _, _, err := Discover(context.Background(), []string{"alice@sut.test"}, o); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("unverifiable signature: %v, want the SUT's 401", err)
	}
}

// TestDiscoverIsBoundedInParallel: with Parallel 3, twelve lookups keep
// exactly 3 requests in flight until the last ones, never more. The SUT
// holds every request; on synctest's fake clock, once every goroutine is
// blocked, the requests held are all the lookups could send at that moment.
func TestDiscoverIsBoundedInParallel(t *testing.T) {
	w := testWorld(t, 1, 1)
	inst := w.Origins[0].Instance
	synctest.Test(t, func(t *testing.T) {
		sut := unstartedFakeSUT(inst)
		sut.held = make(chan chan struct{}, 100)
		sink := pipenet.Serve(t, http.HandlerFunc(sut.serve))
		// Plain HTTP inside the pipe: the lookups' https URLs dial it as if
		// TLS were done.
		tr := &http.Transport{DialTLSContext: sink.DialContext}
		defer tr.CloseIdleConnections()
		o := DiscoverOptions{Client: &http.Client{Timeout: 5 * time.Second, Transport: tr},
			Signer: signing.NewSigner(signing.SignerOptions{UserAgent: "crowd-test"}),
			KeyID:  inst.KeyID, Key: inst.Key, Timeout: 5 * time.Second, Parallel: 3}
		accts, _ := ExpandPersonas("load%d@sut.test", 12)
		type result struct {
			ps  []*Persona
			err error
		}
		done := make(chan result, 1)
		go func() {
			ps, _, err := Discover(context.Background(), accts, o)
			done <- result{ps, err}
		}()

		var rounds []int // requests in flight at each standstill
		for {
			synctest.Wait()
			n := len(sut.held)
			if n == 0 {
				break // nothing held and everyone blocked: Discover has returned
			}
			rounds = append(rounds, n)
			for range n {
				close(<-sut.held)
			}
		}
		r := <-done
		if r.err != nil || len(r.ps) != 12 {
			t.Fatalf("%d personas, %v", len(r.ps), r.err)
		}
		for i, p := range r.ps {
			if p.Acct != accts[i] || len(p.Posts) != 1 {
				t.Errorf("persona %d: %s with %d posts", i, p.Acct, len(p.Posts))
			}
		}
		// 12 lookups of 3 requests each (WebFinger, actor, outbox), 3 at a time.
		if want := slices.Repeat([]int{3}, 12); !slices.Equal(rounds, want) {
			t.Errorf("requests in flight at each standstill %v, want %v (Parallel 3)", rounds, want)
		}
		if peak := sut.peak.Load(); peak != 3 {
			t.Errorf("peak of %d concurrent requests, want 3 (Parallel 3)", peak)
		}
	})
}

func TestDiscoverRefusesAPublicPersonaWithoutSending(t *testing.T) {
	w := testWorld(t, 1, 1)
	inst := w.Origins[0].Instance
	fn := &dialguardtest.FakeNet{Names: map[string][]string{"public.example": {"8.8.8.8"}}}
	g := flood.NewGuard(flood.GuardOptions{Resolve: fn.Resolve, Dial: fn.Dial})
	o := DiscoverOptions{Client: &http.Client{Transport: &http.Transport{DialContext: g.DialContext}},
		Signer: signing.NewSigner(signing.SignerOptions{}), KeyID: inst.KeyID, Key: inst.Key}
	_, _, err := Discover(context.Background(), []string{"x@public.example"}, o)
	if !errors.Is(err, flood.ErrPublicTarget) || !strings.Contains(err.Error(), "x@public.example") {
		t.Errorf("err %v: want ErrPublicTarget naming the persona", err)
	}
	if len(fn.Dials()) != 0 {
		t.Errorf("%d dials", len(fn.Dials()))
	}
}

func TestExpandPersonas(t *testing.T) {
	for _, c := range []struct {
		pattern string
		count   int
		want    []string // nil: a usage error
	}{
		{"load%d@sut.test", 3, []string{"load0@sut.test", "load1@sut.test", "load2@sut.test"}}, // 0-based, as the audience set-up
		{"acct:p%d@sut.test", 1, []string{"p0@sut.test"}},                                      // acct: prefix is fine
		{"load@sut.test", 3, nil},        // no %d
		{"load%d%d@sut.test", 3, nil},    // two %d
		{"load%s@sut.test", 3, nil},      // another verb
		{"load%d@sut.test", 0, nil},      // no count
		{"load%d", 2, nil},               // no host
		{"load%d@sut.test:8443", 2, nil}, // a port: the flood reaches a persona's server on 443
	} {
		got, err := ExpandPersonas(c.pattern, c.count)
		if c.want == nil {
			var ue *record.UsageError
			if !errors.As(err, &ue) {
				t.Errorf("ExpandPersonas(%q, %d) = %v, %v; want a usage error", c.pattern, c.count, got, err)
			}
			continue
		}
		for i := range got {
			got[i] = strings.TrimPrefix(got[i], "acct:")
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ExpandPersonas(%q, %d) = %v, %v; want %v", c.pattern, c.count, got, err, c.want)
		}
	}
}

func TestParsePersonaList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // nil with ok false: an error
		ok   bool
	}{
		{"a@sut.test\nacct:b@sut.test\n@c@SUT.test\n", []string{"a@sut.test", "b@sut.test", "c@sut.test"}, true}, // the three spellings
		{"# personas\n\n  a@sut.test  # first\n", []string{"a@sut.test"}, true},                                  // comments and blanks
		{"", nil, true}, // empty: nothing
		{"a@sut.test\nnot-an-account\n", nil, false},      // a bad line
		{"a@b@c\n", nil, false},                           // two @
		{"https://sut.test/users/a\n", nil, false},        // a URL is not an account
		{"a@127.0.0.1:8443\n", nil, false},                // a port: the flood reaches a persona's server on 443
		{"a@sut.test:\n", nil, false},                     // a host ending in ':' and no port
		{"a@[::1]\n", []string{"a@[::1]"}, true},          // a bracketed IPv6 literal
		{"a@sut.test b@sut.test\n", nil, false},           // two on a line: the second would be lost
		{"a@sut.test\t#\n", []string{"a@sut.test"}, true}, // a tab before an empty comment
	} {
		got, err := ParsePersonaList(strings.NewReader(c.in))
		if (err == nil) != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("ParsePersonaList(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
	_, err := ParsePersonaList(strings.NewReader("a@sut.test\n\nbad\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error %v does not name line 3", err)
	}
	// The whole line is quoted, so that it can be found in the file.
	_, err = ParsePersonaList(strings.NewReader("a@sut.test\nbob @sut.test\n"))
	if err == nil || !strings.Contains(err.Error(), `"bob @sut.test": line 2: one persona a line ("@sut.test" follows it`) {
		t.Errorf("error %v: want the whole line and what follows the persona", err)
	}
}

func FuzzParsePersonaList(f *testing.F) {
	for _, s := range []string{"a@sut.test\n", "# x\nacct:b@h.test", "@c@d\n\n", "a@b@c", "\xff@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list, err := ParsePersonaList(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, a := range list {
			user, host, ok := strings.Cut(a, "@")
			if !ok || user == "" || host == "" || strings.ContainsAny(host, "@/?# ") || host != strings.ToLower(host) {
				t.Fatalf("ParsePersonaList(%q) returned %q", s, a)
			}
		}
	})
}

func FuzzOutboxItem(f *testing.F) {
	for _, s := range []string{`"https://a.test/1"`, `{"type":"Create","object":{"id":"https://a.test/1"}}`,
		`{"type":["Create"],"object":"https://a.test/2"}`, `{"type":"Announce","object":"https://b.test/1"}`, `{"type":"Note","id":"ftp://x"}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if id := postID(b); id != "" && !apclient.IsHTTPURL(id) {
			t.Fatalf("postID(%q) = %q, not an http(s) URL", b, id)
		}
	})
}

func TestWorldPersonas(t *testing.T) {
	w := testWorld(t, 2, 2)
	ps := WorldPersonas(w, InboxPersonal)
	if len(ps) != 4 {
		t.Fatalf("%d personas for 4 actors", len(ps))
	}
	for i, p := range ps {
		a := w.Actors()[i]
		if p.ID != a.ID || p.Target != a.Inbox() || len(p.Posts) == 0 {
			t.Errorf("persona %+v for %s", p, a.ID)
		}
		// The posts are notes the crowd serves (their ids decode).
		for _, post := range p.Posts {
			if _, err := a.Object(strings.TrimPrefix(post, a.ID)); err != nil {
				t.Errorf("post %s is not served by the crowd: %v", post, err)
			}
		}
	}
}
