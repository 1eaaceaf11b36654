package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/dialguard/dialguardtest"
)

// adminServer serves the fixture's admin routes on a real listener.
func adminServer(t *testing.T, f *fixture) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	f.in.AdminRoutes(mux.Handle)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		mustJSON(t, b, v)
	}
	return resp.StatusCode
}

func postJSON(t *testing.T, url string, body any, v any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if v != nil {
		mustJSON(t, rb, v)
	}
	return resp.StatusCode
}

func TestAdminActivitiesAndFollows(t *testing.T) {
	f := newFixture(t, true)
	admin := adminServer(t, f)
	alice := f.actor("alice@flood1.test")
	bob := remoteID("bob")
	f.deliver("/users/alice/inbox", "bob", likeJSON(bob))
	f.deliver("/users/alice/inbox", "bob", followJSON(bob+"/f/1", bob, alice.ID))
	eventually(t, "the Accept", func() bool { return len(f.remote.postsTo("/users/bob/inbox")) == 1 })

	var list []Entry
	if s := getJSON(t, admin.URL+adminapi.RouteActivities.Path()+"?type=Follow&actor=alice@flood1.test", &list); s != 200 || len(list) != 1 || list[0].Type != "Follow" {
		t.Errorf("filtered activities: %d %+v", s, list)
	}
	if getJSON(t, admin.URL+adminapi.RouteActivities.Path()+"?limit=1", &list); len(list) != 1 {
		t.Errorf("limit=1 gave %d", len(list))
	}
	if s := getJSON(t, admin.URL+adminapi.RouteActivities.Path()+"?limit=x", nil); s != http.StatusBadRequest {
		t.Errorf("bad limit: %d", s)
	}
	// A misspelt parameter would answer everything as if its filter held,
	// and a second value be ignored.
	for _, route := range []adminapi.Route{adminapi.RouteActivities, adminapi.RouteStream, adminapi.RouteLookup, adminapi.RouteFollows} {
		if s := getJSON(t, admin.URL+route.Path()+"?acter=alice@flood1.test", nil); s != http.StatusBadRequest {
			t.Errorf("%s with an unknown parameter: %d, want 400", route, s)
		}
	}
	if s := getJSON(t, admin.URL+adminapi.RouteActivities.Path()+"?actor=flood1.test&actor=flood2.test", nil); s != http.StatusBadRequest {
		t.Errorf("a parameter given twice: %d, want 400", s)
	}
	for _, tt := range []struct {
		actor string
		want  int
	}{
		{"alic@flood1.test", http.StatusBadRequest},                // a crowd host, no such actor: would match nothing
		{"acct:zed@FLOOD1.test", http.StatusBadRequest},            // the same, with acct: and another case
		{"alice@flood1.test", http.StatusOK},                       // a crowd actor
		{"flood1.test@flood1.test", http.StatusOK},                 // the instance actor
		{"ghost@" + remoteHost, http.StatusOK},                     // another host's actor: the crowd cannot know it
		{"https://flood1.test/notes/1", http.StatusOK},             // a URL may name a note
		{"flood1.test", http.StatusOK},                             // a host alone
		{"ALICE@flood1.test", http.StatusOK},                       // a crowd actor, its name in capitals: names have no case
		{"alice", http.StatusBadRequest},                           // an actor's name alone: a bare word is a host
		{"alice@", http.StatusBadRequest},                          // an account with no host
		{"flood1.test/users/alice", http.StatusBadRequest},         // a URL without its scheme
		{"https://flood1.test/users/alcie", http.StatusBadRequest}, // a crowd actor URL, no such actor
		{"https://flood1.test/users/alice", http.StatusOK},         // a crowd actor's URL
		{"https://FLOOD1.test/users/alice/", http.StatusOK},        // its host in capitals, a trailing slash: the same URL
		{"https://flood1.test/users/Alice", http.StatusBadRequest}, // a path keeps its case: no such actor
		{"alice@flood99.test", http.StatusBadRequest},              // the crowd's pattern, past its origins
		{"flood99.test", http.StatusBadRequest},                    // the same host alone
		{"gts", http.StatusOK},                                     // a host with no dot (a compose service's name) is a host
		{"flood01.test", http.StatusBadRequest},                    // the pattern's, not as the crowd writes it
		{"flood1.test.", http.StatusBadRequest},                    // a trailing dot: the log has none
		{"flood1.test:443", http.StatusBadRequest},                 // a crowd host with a port
		{"alice@flood1.test:443", http.StatusBadRequest},           // the same in an account
		{"http://flood1.test/users/alice", http.StatusBadRequest},  // the crowd's actors are https
		{"https://flood1.test/", http.StatusBadRequest},            // a URL with no actor in it
		{"ACCT:alice@flood1.test", http.StatusOK},                  // the scheme in any case
		{"ghost@" + remoteHost + ":8443", http.StatusOK},           // another server's host may have a port
	} {
		for _, route := range []adminapi.Route{adminapi.RouteActivities, adminapi.RouteStream} {
			if route == adminapi.RouteStream && tt.want == http.StatusOK {
				continue // a stream that is not refused stays open
			}
			q := url.Values{adminapi.ParamActor: {tt.actor}}
			if s := getJSON(t, admin.URL+route.Path()+"?"+q.Encode(), nil); s != tt.want {
				t.Errorf("%s actor=%q: %d, want %d", route, tt.actor, s, tt.want)
			}
		}
	}

	var follows []adminapi.FollowsInfo
	var raw json.RawMessage
	getJSON(t, admin.URL+adminapi.RouteFollows.Path(), &raw)
	if err := json.Unmarshal(raw, &follows); err != nil || len(follows) != 1 || follows[0].Acct != "alice@flood1.test" || len(follows[0].Followers) != 1 {
		t.Errorf("follows: %+v (%v)", follows, err)
	}
	if bytes.Contains(raw, []byte(`"follow"`)) {
		t.Errorf("the follows list carries the whole Follow (it is for the Accept): %s", raw)
	}
	if s := getJSON(t, admin.URL+adminapi.RouteFollows.Path()+"?actor=nobody@flood1.test", nil); s != http.StatusNotFound {
		t.Errorf("unknown actor: %d", s)
	}

	// A flood process registers its pending Follow; the Accept that follows
	// finds it; registering it again does not reset it.
	bob2 := f.actor("bob@flood2.test")
	fid := bob2.Follow(actors.FollowSpec{Seq: 3, Object: bob}).ID
	var rel adminapi.Relation
	req := adminapi.FollowingRequest{Local: "bob@flood2.test", Remote: bob, FollowID: fid}
	if s := postJSON(t, admin.URL+adminapi.RouteFollowing.Path(), req, &rel); s != 200 || rel.State != adminapi.StatePending {
		t.Fatalf("register: %d %+v", s, rel)
	}
	f.deliver("/inbox", "bob", []byte(`{"id":"`+bob+`/a/9","type":"Accept","actor":"`+bob+`","object":"`+fid+`"}`))
	postJSON(t, admin.URL+adminapi.RouteFollowing.Path(), req, &rel)
	if rel.State != actors.StateAccepted {
		t.Errorf("after Accept and re-registration: %+v", rel)
	}
	tests := []struct {
		name string
		req  adminapi.FollowingRequest
		want int
	}{
		{"unknown local", adminapi.FollowingRequest{Local: "zed@flood1.test", Remote: bob, FollowID: "x"}, http.StatusNotFound},              // no such crowd actor
		{"relative remote", adminapi.FollowingRequest{Local: "alice@flood1.test", Remote: "/users/x", FollowID: "x"}, http.StatusBadRequest}, // not a URL
		{"no follow id", adminapi.FollowingRequest{Local: "alice@flood1.test", Remote: bob}, http.StatusBadRequest},                          // nothing to match Accepts with
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s := postJSON(t, admin.URL+adminapi.RouteFollowing.Path(), tt.req, nil); s != tt.want {
				t.Errorf("got %d, want %d", s, tt.want)
			}
		})
	}
}

// TestAdminStream: the SSE stream delivers new entries live, filtered.
func TestAdminStream(t *testing.T) {
	f := newFixture(t, false)
	admin := adminServer(t, f)
	bob := remoteID("bob")
	f.deliver("/users/alice/inbox", "bob", likeJSON(bob)) // backlog

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin.URL+adminapi.RouteStream.Path()+"?type=Like,Create&backlog=5", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan Entry, 10)
	go func() {
		adminapi.ReadStream(resp.Body, func(e Event) error { events <- e.Entry; return nil })
		close(events)
	}()
	if e := <-events; e.Type != "Like" {
		t.Fatalf("backlog event %+v", e)
	}
	f.deliver("/users/alice/inbox", "bob", followJSON(bob+"/f/1", bob, "https://flood1.test/users/alice")) // filtered out
	f.deliver("/users/alice/inbox", "bob", bytes.ReplaceAll(likeJSON(bob), []byte("likes/1"), []byte("likes/2")))
	e := <-events
	if e.Type != "Like" || !strings.HasSuffix(e.ID, "likes/2") {
		t.Errorf("live event %+v", e)
	}
	// Shutdown ends the stream.
	f.in.Shutdown(context.Background())
	for range events {
	}
}

// TestAdminSendAndLookup drives /api/send and /api/lookup against the
// remote server.
func TestAdminSendAndLookup(t *testing.T) {
	f := newFixture(t, true)
	admin := adminServer(t, f)
	bob := remoteID("bob")

	tests := []struct {
		name   string
		req    adminapi.SendRequest
		status int    // admin API answer
		remote string // type the remote must have received ("" = nothing)
	}{
		{"follow", adminapi.SendRequest{From: "alice@flood1.test", Type: "Follow", To: "acct:bob@" + remoteHost}, 200, "Follow"},
		{"create", adminapi.SendRequest{From: "alice@flood1.test", Type: "create", To: "bob@" + remoteHost}, 200, "Create"},
		{"like", adminapi.SendRequest{From: "https://flood1.test/users/alice", Type: "Like", To: bob, Object: json.RawMessage(`"https://example.com/users/bob/statuses/1"`)}, 200, "Like"},
		{"undo", adminapi.SendRequest{From: "alice@flood1.test", Type: "Undo", To: bob}, 200, "Undo"},
		{"undo without follow", adminapi.SendRequest{From: "alice@flood1.test", Type: "Undo", To: bob}, 400, ""},                // nothing left to undo
		{"like without object", adminapi.SendRequest{From: "alice@flood1.test", Type: "Like", To: bob}, 400, ""},                // what to like?
		{"unknown type", adminapi.SendRequest{From: "alice@flood1.test", Type: "Block", To: bob}, 400, ""},                      // not offered
		{"unknown sender", adminapi.SendRequest{From: "zed@flood1.test", Type: "Follow", To: bob}, 404, ""},                     // not a crowd actor
		{"unknown target", adminapi.SendRequest{From: "alice@flood1.test", Type: "Follow", To: "ghost@" + remoteHost}, 502, ""}, // WebFinger 404
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.remote.postsTo("/users/bob/inbox")) + len(f.remote.postsTo("/inbox"))
			var res adminapi.SendResult
			status := postJSON(t, admin.URL+adminapi.RouteSend.Path(), tt.req, &res)
			if status != tt.status {
				t.Fatalf("status %d (%+v), want %d", status, res, tt.status)
			}
			posts := append(f.remote.postsTo("/users/bob/inbox"), f.remote.postsTo("/inbox")...)
			if tt.remote == "" {
				if len(posts) != before {
					t.Errorf("the remote got something")
				}
				return
			}
			if res.Status != http.StatusAccepted || len(posts) != before+1 {
				t.Fatalf("result %+v, remote got %d", res, len(posts)-before)
			}
			var act struct{ Type string }
			mustJSON(t, res.Activity, &act)
			if act.Type != tt.remote {
				t.Errorf("sent %s", act.Type)
			}
			for _, p := range posts {
				if p.VerifyErr != nil {
					t.Errorf("the remote could not verify: %v", p.VerifyErr)
				}
			}
		})
	}
	// Bodies refused before anything is sent, with the status that says why.
	for _, tt := range []struct {
		name   string
		body   string
		status int
		say    string
	}{
		// A misspelt field would be dropped, and the send made without it.
		{"misspelt field", `{"from":"alice@flood1.test","type":"Follow","to":"` + bob + `","allow_public_taget":true}`, http.StatusBadRequest, `unknown field "allow_public_taget"`},
		// An inbox the crowd cannot post to: refused as asked, not as an
		// inbox that did not answer.
		{"an ftp inbox", `{"from":"alice@flood1.test","type":"Follow","to":"` + bob + `","inbox":"ftp://127.0.0.1/inbox"}`, http.StatusBadRequest, "not an absolute http(s) URL"},
		// Past the limit: 413, not 400.
		{"too large", `{"from":"alice@flood1.test","type":"Create","to":"` + bob + `","object":{"content":"` + strings.Repeat("x", 1<<20) + `"}}`, http.StatusRequestEntityTooLarge, "too large"},
	} {
		before := len(f.remote.postsTo("/users/bob/inbox")) + len(f.remote.postsTo("/inbox"))
		var answer struct{ Error string }
		if s := postJSON(t, admin.URL+adminapi.RouteSend.Path(), json.RawMessage(tt.body), &answer); s != tt.status || !strings.Contains(answer.Error, tt.say) {
			t.Errorf("%s: %d %q, want %d saying %q", tt.name, s, answer.Error, tt.status, tt.say)
		}
		if after := len(f.remote.postsTo("/users/bob/inbox")) + len(f.remote.postsTo("/inbox")); after != before {
			t.Errorf("%s: the remote got something", tt.name)
		}
	}
	// An inbox that does not answer (nothing listens there): 502, saying
	// so, not that the target was not resolved (it was).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	var answer struct{ Error string }
	if s := postJSON(t, admin.URL+adminapi.RouteSend.Path(), adminapi.SendRequest{From: "alice@flood1.test", Type: "Like", To: bob,
		Object: json.RawMessage(`"https://example.com/users/bob/statuses/1"`), Inbox: "http://" + closed + "/inbox"}, &answer); s != http.StatusBadGateway ||
		!strings.Contains(answer.Error, "the inbox did not answer") {
		t.Errorf("an inbox that does not answer: %d %q, want 502 saying the inbox did not answer", s, answer.Error)
	}
	// Create goes to the shared inbox, the rest to bob's own.
	if n := len(f.remote.postsTo("/inbox")); n != 1 {
		t.Errorf("%d posts to the shared inbox", n)
	}
	// The generated Create that left is in alice's outbox; one wrapping an
	// object of the user's is not (the crowd cannot regenerate it).
	var own adminapi.SendResult
	postJSON(t, admin.URL+adminapi.RouteSend.Path(), adminapi.SendRequest{From: "alice@flood1.test", Type: "Create",
		To: bob, Object: json.RawMessage(`{"type":"Note","content":"mine"}`)}, &own)
	var sent struct{ Object struct{ ID string } }
	mustJSON(t, f.remote.postsTo("/inbox")[0].Body, &sent)
	if ids, n := f.world.Outbox.Latest(f.actor("alice@flood1.test").ID); n != 1 || len(ids) != 1 || ids[0] != sent.Object.ID {
		t.Errorf("alice's outbox: %d %q, want 1 [%s]", n, ids, sent.Object.ID)
	}

	var lr adminapi.LookupResult
	if s := getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource=acct:bob@"+remoteHost, &lr); s != 200 || len(lr.Problems) != 0 || lr.URL != bob || lr.Document == nil {
		t.Errorf("lookup bob: %d %+v", s, lr)
	}
	// An account whose WebFinger names no actor: that is the problem, and
	// nothing else is asked.
	lr = adminapi.LookupResult{}
	if s := getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource=acct:noself@"+remoteHost, &lr); s != 200 || len(lr.Problems) != 1 ||
		!strings.Contains(lr.Problems[0], "no ActivityPub self link") || lr.Status != 0 {
		t.Errorf("lookup of an account with no actor: %d %+v", s, lr)
	}
	// A crowd origin's URL that is no actor of it: the origin's 404, not
	// the failed DNS lookup of a name the machine does not resolve.
	lr = adminapi.LookupResult{}
	getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource=https://flood1.test/users/zed", &lr)
	if lr.Status != http.StatusNotFound || !strings.Contains(strings.Join(lr.Problems, "\n"), "404") || strings.Contains(strings.Join(lr.Problems, "\n"), "lookup") {
		t.Errorf("lookup of no actor on a crowd origin: status %d, problems %q; want its 404", lr.Status, lr.Problems)
	}
	// A name of the crowd's pattern past its origins: said so, not left to
	// the resolver.
	lr = adminapi.LookupResult{}
	getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource=acct:alice@flood99.test", &lr)
	if got := strings.Join(lr.Problems, "\n"); !strings.Contains(got, "flood99.test is no origin of this crowd (it serves flood1.test") || strings.Contains(got, "resolver") {
		t.Errorf("lookup on flood99.test: problems %q, want it named no origin of the crowd", lr.Problems)
	}
	getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource="+remoteID("badguy"), &lr)
	for _, want := range []string{"Content-Type", "no inbox", "publicKey.owner", "publicKeyPem", "preferredUsername"} {
		if !strings.Contains(strings.Join(lr.Problems, "\n"), want) {
			t.Errorf("lookup badguy: no problem about %s in %q", want, lr.Problems)
		}
	}
	// A PHP server escapes every '/' in its JSON; decoded, the document is fine.
	lr = adminapi.LookupResult{}
	if s := getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource=acct:php@"+remoteHost, &lr); s != 200 || len(lr.Problems) != 0 || lr.URL != remoteID("php") {
		t.Errorf("lookup php: %d %+v", s, lr)
	}
	// WebFinger answers Mastodon follows once to another account, and
	// those it stops at. Each row's problems must contain its words, in
	// order; none for a resolvable account.
	for _, c := range []struct {
		resource string
		url      string   // the actor fetched; "" = none
		redirect string   // the subject asked again; "" = none
		problems []string // one each
	}{
		// A vanity account: its subject's own answer confirms it; bob is fetched.
		{"acct:alias@" + remoteHost, remoteID("bob"), "acct:bob@" + remoteHost, nil},
		// A subject naming an account whose answer names a third: Mastodon stops.
		{"acct:hijack@" + remoteHost, "", "acct:alias@" + remoteHost, []string{"Too many webfinger redirects"}},
		// No subject at all.
		{"acct:nosubject@" + remoteHost, "", "", []string{"no subject"}},
		// A self link of a JSON-LD type without the ActivityStreams profile.
		{"acct:ldself@" + remoteHost, remoteID("bob"), "", []string{`no self link of type exactly "application/activity+json" or`, `"Missing self link"`}},
		// Two self links, the last a page's: the one older Mastodon releases read.
		{"acct:twoselves@" + remoteHost, remoteID("bob"), "", []string{`older Mastodon releases read the last self link, of type "text/html"`}},
		// An actor whose FEP-2c59 webfinger names its account (its preferredUsername none): round-tripped by it.
		{remoteID("fep"), remoteID("fep"), "", nil},
		// One whose webfinger names a host on a public address: not asked, said beside the document.
		{remoteID("leaky"), remoteID("leaky"), "", []string{"WebFinger round trip: acct:x@public.test not asked", "public address"}},
		// An actor fetched by URL whose round trip meets the redirects Mastodon stops at.
		{remoteID("drifter"), remoteID("drifter"), "", []string{"WebFinger round trip", "Too many webfinger redirects"}},
	} {
		lr = adminapi.LookupResult{}
		if s := getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource="+url.QueryEscape(c.resource), &lr); s != 200 {
			t.Errorf("lookup %s: %d", c.resource, s)
			continue
		}
		if lr.Status != 0 != (c.url != "") || c.url != "" && lr.URL != c.url {
			t.Errorf("lookup %s: fetched %q (status %d), want %q", c.resource, lr.URL, lr.Status, c.url)
		}
		askedAgain := ""
		if lr.WebFingerRedirect != nil && lr.WebFinger != nil {
			askedAgain = lr.WebFinger.Subject
		}
		if askedAgain != c.redirect {
			t.Errorf("lookup %s: asked again for %q, want %q", c.resource, askedAgain, c.redirect)
		}
		if len(lr.Problems) != min(len(c.problems), 1) {
			t.Errorf("lookup %s: problems %q, want %d", c.resource, lr.Problems, min(len(c.problems), 1))
			continue
		}
		for _, a := range f.remote.dialedSnapshot() {
			if strings.HasPrefix(a, "public.test:") {
				t.Errorf("lookup %s: the crowd dialled %s", c.resource, a)
			}
		}
		rest := strings.Join(lr.Problems, "\n")
		for _, w := range c.problems {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("lookup %s: problems %q lack %q (in order)", c.resource, lr.Problems, w)
				break
			}
			rest = rest[i+len(w):]
		}
	}
	getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource=alice@flood1.test", &lr)
	if len(lr.Problems) != 0 {
		t.Errorf("a crowd actor has problems: %q", lr.Problems)
	}
	if s := getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource=nonsense", nil); s != http.StatusBadRequest {
		t.Errorf("bad resource: %d", s)
	}
}

func TestActorProblems(t *testing.T) {
	const id = "https://a.test/users/x"
	good := `{"@context":["https://www.w3.org/ns/activitystreams","https://w3id.org/security/v1"],"id":"` + id + `","type":"Person","preferredUsername":"x","inbox":"` + id + `/inbox","outbox":"` + id + `/outbox","publicKey":{"id":"` + id + `#main-key","owner":"` + id + `","publicKeyPem":"PEM"}}`
	pem := pubPEM(t, loadRemoteKey(t, "bob"))
	pemJSON, _ := json.Marshal(pem)
	good = strings.Replace(good, `"PEM"`, string(pemJSON), 1)
	tests := []struct {
		name        string
		final       string
		status      int
		contentType string
		body        string
		self        string
		want        []string // substrings, one problem each; nil = no problems
	}{
		{"good", id, 200, "application/activity+json", good, id, nil},                                                            // what the crowd serves
		{"ld+json with profile", id, 200, `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`, good, "", nil}, // the other accepted type
		{"ld+json without profile", id, 200, "application/ld+json", good, "", []string{"lacks profile"}},                         // some servers refuse
		{"json", id, 200, "application/json", good, "", []string{"not application/activity+json"}},                               // Mastodon refuses
		{"404", id, 404, "text/plain", "gone", "", []string{"HTTP 404"}},                                                         // nothing to check
		{"not json", id, 200, "application/activity+json", "<html>", "", []string{"not a JSON object"}},                          // an HTML page
		{"id differs", id, 200, "application/activity+json", strings.ReplaceAll(good, `"id":"`+id+`"`, `"id":"https://b.test/u"`), "",
			[]string{"not the URL", "another host", "publicKey.owner"}}, // a document claiming another origin
		{"webfinger mismatch", id, 200, "application/activity+json", good, "https://a.test/@x", []string{"WebFinger self href"}}, // round trip fails
		{"redirected", "https://a.test/other", 200, "application/activity+json", good, "", []string{"after a redirect"}},         // id is not where it was served
		{"no key", id, 200, "application/activity+json", cut(good, `,"publicKey":{`), "", []string{"no publicKey"}},              // cannot verify
		{"not an actor", id, 200, "application/activity+json", strings.Replace(good, `"Person"`, `"Note"`, 1), "", []string{"not an actor type"}},
		{"slashes escaped", id, 200, "application/activity+json", strings.ReplaceAll(good, "/", `\/`), id, nil}, // PHP writes https:\/\/: the same document
		{"context a single string", id, 200, "application/activity+json", strings.Replace(good, `["https://www.w3.org/ns/activitystreams","https://w3id.org/security/v1"]`, `"https://www.w3.org/ns/activitystreams"`, 1), "",
			[]string{"security/v1"}}, // publicKey undefined for JSON-LD processors
		{"no preferredUsername", id, 200, "application/activity+json", strings.Replace(good, `"preferredUsername":"x",`, "", 1), "",
			[]string{"nor FEP-2c59 webfinger"}}, // nothing to name the account by
		{"FEP-2c59 webfinger only", id, 200, "application/activity+json", strings.Replace(good, `"preferredUsername":"x",`, `"webfinger":"x@a.test",`, 1), "",
			[]string{"only servers that read FEP-2c59"}}, // recent Mastodon names it; others cannot
		{"context URL only inside a term", id, 200, "application/activity+json", strings.Replace(good, `"https://w3id.org/security/v1"`, `{"sec":"https://w3id.org/security/v1"}`, 1), "",
			[]string{"security/v1"}}, // a term definition is not the security context
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ActorProblems(id, tt.final, tt.status, tt.contentType, []byte(tt.body), tt.self)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to mention %q", i, got[i], w)
				}
			}
		})
	}
}

// cut removes from s everything from the marker to the closing brace of
// the document (the marker's object is the last field).
func cut(s, marker string) string {
	i := strings.Index(s, marker)
	return s[:i] + "}"
}

func FuzzActorProblems(f *testing.F) {
	f.Add(`{"id":"https://a.test/u","type":"Person","publicKey":{"id":"k","owner":"o","publicKeyPem":"x"}}`, "application/activity+json", "https://a.test/u")
	f.Add(`{"id":5,"publicKey":[{"owner":1}]}`, "application/ld+json; profile=x", "")
	f.Add(`[]`, ";;;", "::")
	f.Fuzz(func(t *testing.T, body, contentType, self string) {
		// Must not panic, whatever the peer serves.
		ActorProblems("https://a.test/u", "https://a.test/u", 200, contentType, []byte(body), self)
	})
}

// TestManualRequestsRefusePublicTargetsBeforeContactingThem: a manual send
// and a lookup check every host they are about to talk to (WebFinger, the
// actor, the inbox) as a flood does (a lookup's GETs are signed by a crowd
// actor too), and a public one is refused (403 over the API, naming the
// override) before a byte goes to it, unless the request allows public
// targets.
func TestManualRequestsRefusePublicTargetsBeforeContactingThem(t *testing.T) {
	lookup := func(q adminapi.LookupQuery) *adminapi.LookupQuery { return &q }
	for _, c := range []struct {
		name    string
		send    adminapi.SendRequest  // the request, for a send
		lookup  *adminapi.LookupQuery // or the lookup's query
		public  string                // the remote's address as the resolver answers it
		status  int                   // the API's answer
		gets    int                   // signed GETs the remote got (the actor document)
		posts   int                   // activities the remote got
		lookups int                   // names resolved for the check
	}{
		// An IP literal is judged without resolving and without any request.
		{"send: public IP literal", adminapi.SendRequest{To: "acct:x@192.0.2.1"}, nil, "127.0.0.1", http.StatusForbidden, 0, 0, 0},
		{"lookup: public IP literal", adminapi.SendRequest{}, lookup(adminapi.LookupQuery{Resource: "acct:x@192.0.2.1"}), "127.0.0.1", http.StatusForbidden, 0, 0, 0},
		// A name that resolves to a public address: no WebFinger either.
		{"send: public name", adminapi.SendRequest{To: "acct:bob@" + remoteHost}, nil, "93.184.215.14", http.StatusForbidden, 0, 0, 1},
		{"lookup: public name", adminapi.SendRequest{}, lookup(adminapi.LookupQuery{Resource: "acct:bob@" + remoteHost}), "93.184.215.14", http.StatusForbidden, 0, 0, 1},
		// An actor URL is checked before its document is fetched.
		{"send: public actor URL", adminapi.SendRequest{To: remoteID("bob")}, nil, "93.184.215.14", http.StatusForbidden, 0, 0, 1},
		{"lookup: public actor URL", adminapi.SendRequest{}, lookup(adminapi.LookupQuery{Resource: remoteID("bob")}), "93.184.215.14", http.StatusForbidden, 0, 0, 1},
		// The inbox is checked too: the target is private, the override is not.
		{"send: public inbox override", adminapi.SendRequest{To: remoteID("bob"), Inbox: "https://192.0.2.1/inbox"}, nil, "127.0.0.1", http.StatusForbidden, 1, 0, 1},
		// Allowed by the request: it goes through.
		{"send: allowed", adminapi.SendRequest{To: "acct:bob@" + remoteHost, AllowPublicTarget: true}, nil, "93.184.215.14", http.StatusOK, 1, 1, 1},
		{"lookup: allowed", adminapi.SendRequest{}, lookup(adminapi.LookupQuery{Resource: remoteID("bob"), AllowPublicTarget: true}), "93.184.215.14", http.StatusOK, 1, 0, 1},
		// A private target needs no permission.
		{"send: private", adminapi.SendRequest{To: "acct:bob@" + remoteHost}, nil, "127.0.0.1", http.StatusOK, 1, 1, 1},
		{"lookup: private", adminapi.SendRequest{}, lookup(adminapi.LookupQuery{Resource: remoteID("bob")}), "127.0.0.1", http.StatusOK, 1, 0, 1},
		// A crowd actor is looked up in-process: nothing is resolved.
		{"lookup: crowd actor", adminapi.SendRequest{}, lookup(adminapi.LookupQuery{Resource: "acct:bob@flood2.test"}), "93.184.215.14", http.StatusOK, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			fn := &dialguardtest.FakeNet{Names: map[string][]string{remoteHost: {c.public}}}
			f := newFixture(t, false, func(cfg *Config) { cfg.ResolveTarget = fn.Resolve })
			admin := adminServer(t, f)
			var answer map[string]any
			var status int
			if c.lookup != nil {
				status = getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?"+c.lookup.Values().Encode(), &answer)
			} else {
				c.send.From, c.send.Type = "alice@flood1.test", "Follow"
				status = postJSON(t, admin.URL+adminapi.RouteSend.Path(), c.send, &answer)
			}
			if status != c.status {
				t.Errorf("status %d %v, want %d", status, answer, c.status)
			}
			if c.status == http.StatusForbidden && !strings.Contains(fmt.Sprint(answer["error"]), "--allow-public-target") {
				t.Errorf("the refusal %q does not say how to override it", answer["error"])
			}
			if g, p := len(f.remote.getsSnapshot()), len(f.remote.postsTo("/users/bob/inbox")); g != c.gets || p != c.posts {
				t.Errorf("the remote got %d GETs and %d POSTs, want %d and %d", g, p, c.gets, c.posts)
			}
			if n := len(fn.Lookups()); n != c.lookups {
				t.Errorf("%d lookups (%v), want %d", n, fn.Lookups(), c.lookups)
			}
			if rels := f.world.Graph.Following(f.actor("alice@flood1.test").ID); c.posts == 0 && len(rels) != 0 {
				t.Errorf("a refused Follow was registered: %+v", rels)
			}
		})
	}
	f := newFixture(t, false)
	admin := adminServer(t, f)
	if s := getJSON(t, admin.URL+adminapi.RouteLookup.Path()+"?resource=acct:bob@flood2.test&allow_public_target=maybe", nil); s != http.StatusBadRequest {
		t.Errorf("allow_public_target=maybe: %d, want 400", s)
	}
}

// TestAdminPrune: POST /api/following/prune lists the crowd's Follows
// pending for longer than asked and removes them unless dry_run; a bad
// older_than is a 400 naming it.
func TestAdminPrune(t *testing.T) {
	f := newFixture(t, true)
	admin := adminServer(t, f)
	alice := f.actor("alice@flood1.test")
	if err := f.world.Graph.AddFollowing(alice.ID, remoteID("bob"), alice.ID+"/follows/1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		req     adminapi.PruneRequest
		status  int
		stale   int
		removed int
	}{
		{"young", adminapi.PruneRequest{OlderThan: "1h"}, 200, 0, 0},                 // registered just now
		{"dry run", adminapi.PruneRequest{OlderThan: "0s", DryRun: true}, 200, 1, 0}, // listed, kept
		{"pruned", adminapi.PruneRequest{OlderThan: "0s"}, 200, 1, 1},                // removed
		{"gone", adminapi.PruneRequest{OlderThan: "0s"}, 200, 0, 0},                  // nothing left
		{"bad duration", adminapi.PruneRequest{OlderThan: "soon"}, 400, 0, 0},        // not a duration
		{"negative", adminapi.PruneRequest{OlderThan: "-1h"}, 400, 0, 0},             // in the future
	} {
		var res adminapi.PruneResult
		if s := postJSON(t, admin.URL+adminapi.RoutePrune.Path(), c.req, &res); s != c.status || len(res.Stale) != c.stale || res.Removed != c.removed {
			t.Errorf("%s: %d %+v; want %d, %d stale, %d removed", c.name, s, res, c.status, c.stale, c.removed)
		}
	}
}

// TestRelationStates: the admin API's relation states are the follow
// graph's, so a client compares what the graph wrote.
func TestRelationStates(t *testing.T) {
	for _, c := range [][2]string{
		{adminapi.StatePending, actors.StatePending},
		{adminapi.StateAccepted, actors.StateAccepted},
		{adminapi.StateRejected, actors.StateRejected},
	} {
		if c[0] != c[1] {
			t.Errorf("adminapi state %q, graph state %q", c[0], c[1])
		}
	}
}
