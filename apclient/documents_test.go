package apclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crowdfed/crowd/signing"
)

// TestParseActor: the actor shapes servers publish.
func TestParseActor(t *testing.T) {
	const id = "https://a.test/users/alice"
	for _, tc := range []struct {
		name string
		doc  string
		want Actor
		err  error
	}{
		// Mastodon: endpoints.sharedInbox and one publicKey object.
		{"Mastodon", `{"id":"` + id + `","type":"Person","preferredUsername":"alice","inbox":"` + id + `/inbox","outbox":"` + id + `/outbox",
			"followers":"` + id + `/followers","endpoints":{"sharedInbox":"https://a.test/inbox"},
			"publicKey":{"id":"` + id + `#main-key","owner":"` + id + `","publicKeyPem":"PEM"}}`,
			Actor{ID: id, Type: "Person", PreferredUsername: "alice", Inbox: id + "/inbox", SharedInbox: "https://a.test/inbox",
				Outbox: id + "/outbox", Followers: id + "/followers", PublicKeys: []PublicKeyRef{{ID: id + "#main-key", Owner: id, PublicKeyPem: "PEM"}}}, nil},
		// GoToSocial: no shared inbox.
		{"GoToSocial", `{"id":"` + id + `","type":"Person","inbox":"` + id + `/inbox"}`,
			Actor{ID: id, Type: "Person", Inbox: id + "/inbox"}, nil},
		// Several types and several keys (Fedify may list both).
		{"type and key lists", `{"id":"` + id + `","type":["Service","Application"],"publicKey":[{"id":"k1"},{"id":"k2"}]}`,
			Actor{ID: id, Type: "Service", PublicKeys: []PublicKeyRef{{ID: "k1"}, {ID: "k2"}}}, nil},
		// PHP escapes every '/': the decoded URLs are the same.
		{"escaped slashes", `{"id":"https:\/\/a.test\/users\/alice"}`, Actor{ID: id}, nil},
		// A publicKey of the wrong shape is no key, not an error.
		{"publicKey a string", `{"id":"` + id + `","publicKey":"nope"}`, Actor{ID: id}, nil},
		// An empty object is an actor with nothing in it: the caller judges.
		{"empty", `{}`, Actor{}, nil},
		// Not an object.
		{"array", `[]`, Actor{}, ErrDocument},
		{"HTML", `<html>`, Actor{}, ErrDocument},
		// A field of the wrong type.
		{"inbox a number", `{"inbox":3}`, Actor{}, ErrDocument},
	} {
		got, err := ParseActor([]byte(tc.doc))
		if !errors.Is(err, tc.err) || tc.err == nil && err != nil {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.err)
			continue
		}
		if tc.err == nil && !equalActors(got, tc.want) {
			t.Errorf("%s: got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func equalActors(a, b Actor) bool {
	return reflect.DeepEqual(a, b)
}

// FuzzParseActor: any body parses or fails with ErrDocument, never panics.
func FuzzParseActor(f *testing.F) {
	f.Add(`{"id":"https://a.test/u","type":["Person"],"publicKey":[{"id":"k"}],"endpoints":{"sharedInbox":"s"}}`)
	f.Add(`{"publicKey":{}}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, body string) {
		if _, err := ParseActor([]byte(body)); err != nil && !errors.Is(err, ErrDocument) {
			t.Errorf("err %v does not wrap ErrDocument", err)
		}
	})
}

// FuzzParseCollection: any body parses or fails with ErrDocument.
func FuzzParseCollection(f *testing.F) {
	f.Add(`{"first":"https://a.test/o?page=1","orderedItems":[1],"items":["x"]}`)
	f.Add(`{"first":{"orderedItems":[]},"next":{"id":"n"}}`)
	f.Fuzz(func(t *testing.T, body string) {
		c, err := ParseCollection([]byte(body))
		if err != nil && !errors.Is(err, ErrDocument) {
			t.Errorf("err %v does not wrap ErrDocument", err)
		}
		if err == nil {
			linkURL(c.First)
			linkURL(c.Next)
		}
	})
}

// TestItems walks the collection shapes servers serve, one outbox per row.
func TestItems(t *testing.T) {
	var pages = map[string]string{
		// Mastodon: the collection links its first page, which links the next.
		"/paged":        `{"type":"OrderedCollection","first":"BASE/paged?page=1"}`,
		"/paged?page=1": `{"orderedItems":["a","b"],"next":"BASE/paged?page=2"}`,
		"/paged?page=2": `{"orderedItems":["c"],"next":"BASE/paged?page=3"}`,
		"/paged?page=3": `{"orderedItems":["d"]}`,
		// GoToSocial: the first page embedded.
		"/embedded":        `{"first":{"type":"OrderedCollectionPage","orderedItems":["a"],"next":"BASE/embedded?page=2"}}`,
		"/embedded?page=2": `{"items":["b"]}`,
		// Items inline in the collection itself.
		"/inline": `{"orderedItems":["a"],"items":["b"]}`,
		// A first page written as {"id"} only.
		"/link":        `{"first":{"id":"BASE/link?page=1"}}`,
		"/link?page=1": `{"orderedItems":["a"]}`,
		// A page that points back at itself: read once.
		"/loop":        `{"first":"BASE/loop?page=1"}`,
		"/loop?page=1": `{"orderedItems":["a"],"next":"BASE/loop?page=1"}`,
		// A later page that fails: what came before is kept.
		"/broken": `{"orderedItems":["a"],"first":"BASE/missing"}`,
		// Not a collection.
		"/html": `<html>`,
	}
	var s *server
	s = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		doc, ok := pages[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		serveDoc("application/activity+json", strings.ReplaceAll(doc, "BASE", s.URL))(w, r)
	})
	f := signedFetcher(t, s.Client(), Options{})
	for _, tc := range []struct {
		name     string
		path     string
		maxPages int
		stopAt   int // yield says stop after this many items; 0 never
		want     []string
		err      error
	}{
		{"paged", "/paged", 3, 0, []string{"a", "b", "c", "d"}, nil},
		// maxPages counts the pages after the collection itself.
		{"paged, 2 pages", "/paged", 2, 0, []string{"a", "b", "c"}, nil},
		// yield ends the walk: no page after it is fetched.
		{"paged, enough after 2", "/paged", 3, 2, []string{"a", "b"}, nil},
		{"embedded first page", "/embedded", 3, 0, []string{"a", "b"}, nil},
		{"inline items", "/inline", 3, 0, []string{"a", "b"}, nil},
		{"first as a link object", "/link", 3, 0, []string{"a"}, nil},
		{"a page pointing at itself", "/loop", 5, 0, []string{"a"}, nil},
		{"a failing later page", "/broken", 3, 0, []string{"a"}, nil},
		// The collection itself failing is an error.
		{"missing", "/nothing", 3, 0, nil, ErrStatus},
		{"not a collection", "/html", 3, 0, nil, ErrDocument},
	} {
		before := len(s.requests())
		var got []string
		err := f.Items(context.Background(), s.URL+tc.path, tc.maxPages, func(it json.RawMessage) bool {
			var v string
			json.Unmarshal(it, &v)
			got = append(got, v)
			return tc.stopAt == 0 || len(got) < tc.stopAt
		})
		if !errors.Is(err, tc.err) || tc.err == nil && err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, got, err, tc.want, tc.err)
		}
		if tc.stopAt > 0 {
			if n := len(s.requests()) - before; n != 2 {
				t.Errorf("%s: %d requests, want 2 (the collection and its first page)", tc.name, n)
			}
		}
	}
}

// TestWebFinger: the lookup's URL, unsigned; any JSON type taken, a 404
// kept recognisable, HTML refused.
func TestWebFinger(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("resource") {
		case "acct:alice@sut.test":
			serveDoc("application/jrd+json", `{"subject":"acct:alice@sut.test"}`)(w, r)
		case "acct:bob@sut.test": // some servers label the JRD with the AP type
			serveDoc("application/activity+json", `{"subject":"acct:bob@sut.test"}`)(w, r)
		case "acct:carol@sut.test": // a login page instead
			serveDoc("text/html", `<html>`)(w, r)
		default:
			http.NotFound(w, r)
		}
	})
	f := signedFetcher(t, dialAll(s), Options{})
	for _, tc := range []struct {
		user string
		want error
	}{
		{"alice", nil},            // jrd+json
		{"bob", nil},              // any JSON type
		{"carol", ErrContentType}, // not JSON
		{"dave", ErrStatus},       // no such account
	} {
		body, err := f.WebFinger(context.Background(), tc.user, "sut.test")
		if !errors.Is(err, tc.want) || tc.want == nil && (err != nil || !strings.Contains(string(body), tc.user)) {
			t.Errorf("%s: %s, %v; want %v", tc.user, body, err, tc.want)
		}
	}
	if StatusCode(func() error { _, err := f.WebFinger(context.Background(), "dave", "sut.test"); return err }()) != http.StatusNotFound {
		t.Error("a 404 lost its status code")
	}
	r := s.requests()[0]
	if r.URL.Path != "/.well-known/webfinger" || r.URL.Query().Get("resource") != "acct:alice@sut.test" || r.Host != "sut.test" {
		t.Errorf("asked %s at %s", r.URL, r.Host)
	}
	if r.Header.Get("Signature") != "" || r.Header.Get("Accept") != AcceptJRD {
		t.Errorf("headers %v: want unsigned, Accept %s", r.Header, AcceptJRD)
	}
}

// TestKeyCacheThroughFetcher wires a signing.KeyCache to a Fetcher, as the
// inbox does: the key resolves with a signed GET both verifiers accept, and
// a keyId whose host redirects elsewhere fails with ErrKeyUnavailable
// wrapping ErrRedirect, the other host receiving nothing.
func TestKeyCacheThroughFetcher(t *testing.T) {
	alice := loadKey(t, "rsa-alice.pem")
	var otherHits atomic.Int64
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		http.NotFound(w, r)
	})
	var home *server
	home = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		id := home.URL + "/users/alice"
		switch r.URL.Path {
		case "/users/alice":
			b, _ := json.Marshal(map[string]any{"id": id, "type": "Person",
				"publicKey": map[string]any{"id": id + "#main-key", "owner": id, "publicKeyPem": pubPEM(t, alice)}})
			serveDoc("application/activity+json", string(b))(w, r)
		default:
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
		}
	})
	kc := signing.NewKeyCache(signing.KeyCacheOptions{Fetcher: signedFetcher(t, home.Client(), Options{})})
	pk, err := kc.ResolveKey(context.Background(), home.URL+"/users/alice#main-key", false)
	if err != nil || !alice.PublicKey.Equal(pk.Key) {
		t.Fatalf("key %v, err %v", pk.Key, err)
	}
	verifySigned(t, home.requests()[0])
	_, err = kc.ResolveKey(context.Background(), home.URL+"/users/mallory#main-key", false)
	if !errors.Is(err, signing.ErrKeyUnavailable) || !errors.Is(err, ErrRedirect) {
		t.Errorf("err = %v, want ErrKeyUnavailable wrapping ErrRedirect", err)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other host received %d signed GETs, want none", n)
	}
}
