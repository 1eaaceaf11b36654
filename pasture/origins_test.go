package pasture

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
)

func testWorld(t testing.TB) *actors.World {
	t.Helper()
	w, err := actors.Open(actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func testPasture(t testing.TB, cfg Config) *Pasture {
	t.Helper()
	if cfg.World == nil {
		cfg.World = testWorld(t)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOriginRoutes(t *testing.T) {
	p := testPasture(t, Config{Version: "test"})
	alice, _ := p.cfg.World.ActorByID("https://flood2.test/users/alice")
	note := alice.NoteID(actors.NoteSpec{Seq: 1, MentionID: "https://sut.test/users/a", MentionHandle: "@a@sut.test"})
	for _, c := range []struct {
		name, host, path, accept string
		status                   int
		contentType              string // prefix
		body                     string // substring
	}{
		{"actor as activity+json", "flood2.test", "/users/alice", "application/activity+json", 200, "application/activity+json", `"id": "https://flood2.test/users/alice"`},
		{"actor as ld+json keeps the profile", "flood2.test", "/users/alice", `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`, 200, "application/ld+json; profile=", `"publicKeyPem"`},
		{"actor with no Accept is a document", "flood2.test", "/users/alice", "", 200, "application/activity+json", `"inbox"`},
		{"actor for a browser is a page", "flood2.test", "/users/alice", "text/html,application/xhtml+xml", 200, "text/html", "<h1>@alice@flood2.test</h1>"},
		// A browser that also names JSON gets the document: JSON wins over a page.
		{"actor for html and json is a document", "flood2.test", "/users/alice", "text/html, application/json", 200, "application/activity+json", `"inbox"`},
		// Both ActivityPub types named: activity+json, as Mastodon asks.
		{"actor for both media types is activity+json", "flood2.test", "/users/alice", `application/activity+json, application/ld+json; profile="https://www.w3.org/ns/activitystreams"`, 200, "application/activity+json", `"inbox"`},
		{"profile page", "flood2.test", "/@alice", "text/html", 200, "text/html", "alice@flood2.test"},
		// The profile's address asked for JSON answers the actor document, in the type asked.
		{"profile page as ld+json", "flood2.test", "/@alice", `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`, 200, "application/ld+json; profile=", `"publicKeyPem"`},
		// The instance actor, as any actor, in ld+json when asked.
		{"instance actor as ld+json", "flood1.test", "/actor", "application/ld+json", 200, "application/ld+json", `"type": "Application"`},
		{"instance actor", "flood1.test", "/actor", "application/activity+json", 200, "application/activity+json", `"type": "Application"`},
		{"followers root", "flood2.test", "/users/alice/followers", "", 200, "application/activity+json", `"totalItems": 0`},
		{"followers page", "flood2.test", "/users/alice/followers?page=1", "", 200, "application/activity+json", `"OrderedCollectionPage"`},
		{"bad page number", "flood2.test", "/users/alice/followers?page=x", "", 400, "text/plain", "not a positive number"},
		{"outbox", "flood2.test", "/users/alice/outbox", "", 200, "application/activity+json", `"OrderedCollection"`},
		{"a note the crowd sent", "flood2.test", strings.TrimPrefix(note, "https://flood2.test"), "", 200, "application/activity+json", `"type": "Note"`},
		{"its Create", "flood2.test", strings.TrimPrefix(note, "https://flood2.test") + "/activity", "", 200, "application/activity+json", `"type": "Create"`},
		{"its replies", "flood2.test", strings.TrimPrefix(note, "https://flood2.test") + "/replies", "", 200, "application/activity+json", `"items": []`},
		{"featured", "flood2.test", "/users/alice/collections/featured", "", 200, "application/activity+json", `"orderedItems": []`},
		{"instance outbox", "flood1.test", "/actor/outbox", "", 200, "application/activity+json", `"totalItems": 0`},
		{"a note never sent", "flood2.test", "/users/alice/notes/AAAA", "", 404, "text/plain", "never sent"},
		{"unknown actor", "flood2.test", "/users/mallory", "", 404, "text/plain", `no actor "mallory"`},
		{"unknown host", "elsewhere.test", "/users/alice", "", 404, "text/plain", `"elsewhere.test"`},
		{"nodeinfo", "flood1.test", "/nodeinfo/2.1", "", 200, "application/json", `"name": "crowd"`},
		{"webfinger", "flood1.test", "/.well-known/webfinger?resource=acct:bob@flood1.test", "", 200, "application/jrd+json", `"href": "https://flood1.test/users/bob"`},
		{"origin home page", "flood1.test", "/", "", 200, "text/html", "bob@flood1.test"},
		{"unknown path", "flood1.test", "/nope", "", 404, "text/plain", "nothing at /nope"},
		{"inbox without an inbox handler", "flood1.test", "/inbox", "", 405, "text/plain", "not allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGet(t, p.Handler(), c.host, c.path, c.accept, c.status, c.contentType, c.body)
		})
	}
}

func TestAdminAPI(t *testing.T) {
	p := testPasture(t, Config{Version: "v9"})
	for _, c := range []struct {
		route  adminapi.Route
		body   string
		status int
	}{
		{adminapi.RouteHealth, "ok", 200},             // alive
		{adminapi.RouteReady, "not ready", 503},       // nothing started yet
		{adminapi.RouteCA, "BEGIN CERTIFICATE", 200},  // the CA a SUT must trust
		{adminapi.RouteMetrics, "go_goroutines", 200}, // prometheus exposition
		{adminapi.RouteWorld, `"key_sha256"`, 200},    // the world, with key fingerprints
	} {
		rec := httptest.NewRecorder()
		p.admin.ServeHTTP(rec, httptest.NewRequest(c.route.Method(), "http://127.0.0.1:9180"+c.route.Path(), nil))
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s: %d %q, want %d containing %q", c.route, rec.Code, rec.Body.String()[:min(rec.Body.Len(), 200)], c.status, c.body)
		}
		if strings.Contains(rec.Body.String(), "PRIVATE KEY") {
			t.Errorf("%s serves a private key", c.route)
		}
	}
	var info adminapi.WorldInfo
	rec := httptest.NewRecorder()
	p.admin.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9180"+adminapi.RouteWorld.Path(), nil))
	if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Origins) != 2 || len(info.Origins[1].Actors) != 2 || info.Origins[1].Actors[0].Acct != "alice@flood2.test" {
		t.Errorf("world info: %+v", info)
	}
}

// TestLinkedCollectionsAreServed: every collection an actor document links
// (a person's and the instance actor's) answers 200 with a document whose id
// is that URL; a link that 404s makes servers log an error per actor.
func TestLinkedCollectionsAreServed(t *testing.T) {
	p := testPasture(t, Config{Version: "test"})
	o, _ := p.cfg.World.Origin("flood1.test")
	for _, a := range []*actors.Actor{o.Person(0), o.Instance} {
		doc := a.Document()
		for _, link := range []string{doc.Outbox, doc.Followers, doc.Following, doc.Featured, doc.FeaturedTags} {
			t.Run(link, func(t *testing.T) {
				r := httptest.NewRequest(http.MethodGet, link, nil)
				r.Header.Set("Accept", actors.ContentTypeActivity)
				rec := httptest.NewRecorder()
				p.Handler().ServeHTTP(rec, r)
				var got struct {
					ID         string `json:"id"`
					TotalItems *int   `json:"totalItems"`
				}
				if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				if got.ID != link || got.TotalItems == nil {
					t.Errorf("id %q totalItems %v, want id %q and a count", got.ID, got.TotalItems, link)
				}
			})
		}
	}
}
