package signing

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mr-tron/base58"
)

// web is a fake fediverse on one httptest server: documents by host+path,
// reached through a client that dials every host to the test listener.
type web struct {
	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	docs   map[string]string // "host/path" -> JSON
	counts map[string]int    // path -> fetches
	gate   chan struct{}     // when non-nil, requests wait on it
	seen   []*http.Request
}

func newWeb(t testing.TB) *web {
	w := &web{t: t, docs: map[string]string{}, counts: map[string]int{}}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *web) serve(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	w.counts[r.URL.Path]++
	w.seen = append(w.seen, r)
	gate := w.gate
	doc, ok := w.docs[r.Host+r.URL.Path]
	w.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if strings.HasPrefix(doc, "redirect:") {
		http.Redirect(rw, r, strings.TrimPrefix(doc, "redirect:"), http.StatusFound)
		return
	}
	if strings.HasPrefix(doc, "status:") {
		var code int
		fmt.Sscan(strings.TrimPrefix(doc, "status:"), &code)
		rw.WriteHeader(code)
		return
	}
	if !ok {
		http.NotFound(rw, r)
		return
	}
	rw.Header().Set("Content-Type", "application/activity+json")
	fmt.Fprint(rw, doc)
}

func (w *web) set(hostPath, doc string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.docs[hostPath] = doc
}

func (w *web) hits(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[path]
}

func (w *web) client() *http.Client {
	addr := w.srv.Listener.Addr().String()
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}}
}

// cache is a KeyCache fetching from w. Its fetcher is the least a
// KeyFetcher does (GET, 200 or an error, no redirect followed): signatures,
// limits and the redirect policy are apclient's, tested there with a
// KeyCache wired to an apclient.Fetcher.
func (w *web) cache(o KeyCacheOptions) *KeyCache {
	c := w.client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	o.Fetcher = fetchKeyFunc(func(ctx context.Context, url string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", AcceptActivity)
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return io.ReadAll(resp.Body)
	})
	return NewKeyCache(o)
}

// actor publishes a Mastodon-shaped actor with an embedded publicKey.
func (w *web) actor(host, name string, pub crypto.PublicKey) {
	id := "http://" + host + "/users/" + name
	w.set(host+"/users/"+name, mustJSON(map[string]any{
		"@context": []string{"https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"},
		"id":       id, "type": "Person", "preferredUsername": name, "inbox": id + "/inbox",
		"publicKey": map[string]any{"id": id + "#main-key", "owner": id, "publicKeyPem": pemOf(w.t, pub, false)},
	}))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func pemOf(t testing.TB, pub crypto.PublicKey, pkcs1 bool) string {
	if pkcs1 {
		return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(pub.(*rsa.PublicKey))}))
	}
	return pubPEM(t, pub)
}

// TestKeyCacheDocuments: the document shapes real servers publish, and the
// ones a verifier must refuse.
func TestKeyCacheDocuments(t *testing.T) {
	k := loadKeys(t)
	rsaPub, edPub := k.rsaA.Public(), k.edA.Public()
	const actor = "http://a.test/users/alice"
	key := func(id, owner string, pub crypto.PublicKey, pkcs1 bool) map[string]any {
		return map[string]any{"id": id, "type": "Key", "owner": owner, "publicKeyPem": pemOf(t, pub, pkcs1)}
	}
	person := func(extra map[string]any) string {
		m := map[string]any{"id": actor, "type": "Person"}
		for k, v := range extra {
			m[k] = v
		}
		return mustJSON(m)
	}
	multikey := "z" + base58.Encode(append([]byte{0xed, 0x01}, edPub.(ed25519.PublicKey)...))
	tests := []struct {
		name  string
		docs  map[string]string // host/path -> doc
		keyID string
		want  crypto.PublicKey // nil: expect ErrKeyUnavailable
		owner string
	}{
		{"Mastodon actor, PKIX PEM", map[string]string{"a.test/users/alice": person(map[string]any{"publicKey": key(actor+"#main-key", actor, rsaPub, false)})},
			actor + "#main-key", rsaPub, actor}, // the common case
		{"PKCS#1 PEM", map[string]string{"a.test/users/alice": person(map[string]any{"publicKey": key(actor+"#main-key", actor, rsaPub, true)})},
			actor + "#main-key", rsaPub, actor}, // "RSA PUBLIC KEY" blocks exist in the wild
		{"publicKey array picks by id", map[string]string{"a.test/users/alice": person(map[string]any{"publicKey": []any{
			key(actor+"#main-key", actor, rsaPub, false), key(actor+"#ed-key", actor, edPub, false)}})},
			actor + "#ed-key", edPub, actor}, // several keys: the one named
		{"Misskey additionalPublicKeys", map[string]string{"a.test/users/alice": person(map[string]any{
			"publicKey":            key(actor+"#main-key", actor, rsaPub, false),
			"additionalPublicKeys": []any{key(actor+"#ed25519-key", actor, edPub, false)}})},
			actor + "#ed25519-key", edPub, actor}, // Misskey's extra keys
		{"FEP-521a Multikey", map[string]string{"a.test/users/alice": person(map[string]any{
			"publicKey":       key(actor+"#main-key", actor, rsaPub, false),
			"assertionMethod": []any{map[string]any{"id": actor + "#multikey-1", "type": "Multikey", "controller": actor, "publicKeyMultibase": multikey}}})},
			actor + "#multikey-1", edPub, actor}, // Fedify's assertionMethod keys
		{"keyId is the actor", map[string]string{"a.test/users/alice": person(map[string]any{"publicKey": key(actor+"#main-key", actor, rsaPub, false)})},
			actor, rsaPub, actor}, // single key, keyId without fragment
		{"owner omitted in embedded key", map[string]string{"a.test/users/alice": person(map[string]any{"publicKey": map[string]any{"id": actor + "#main-key", "publicKeyPem": pemOf(t, rsaPub, false)}})},
			actor + "#main-key", rsaPub, actor}, // owner defaults to the actor
		{"GoToSocial key stub", map[string]string{"a.test/users/alice/main-key": person(map[string]any{"publicKey": key(actor+"/main-key", actor, rsaPub, false)})},
			actor + "/main-key", rsaPub, actor}, // stub actor at the key URL
		{"standalone key document", map[string]string{"a.test/keys/1": mustJSON(key("http://a.test/keys/1", actor, rsaPub, false))},
			"http://a.test/keys/1", rsaPub, actor}, // CryptographicKey with owner
		{"standalone key, foreign owner confirmed", map[string]string{
			"keys.test/k/1":      mustJSON(key("http://keys.test/k/1", actor, rsaPub, false)),
			"a.test/users/alice": person(map[string]any{"publicKey": key("http://keys.test/k/1", actor, rsaPub, false)})},
			"http://keys.test/k/1", rsaPub, actor}, // owner lists the key: believed
		{"standalone key, foreign owner denies", map[string]string{
			"keys.test/k/1":      mustJSON(key("http://keys.test/k/1", actor, rsaPub, false)),
			"a.test/users/alice": person(map[string]any{"publicKey": key(actor+"#main-key", actor, edPub, false)})},
			"http://keys.test/k/1", nil, ""}, // anyone could claim to be alice's key
		{"no key with that id", map[string]string{"a.test/users/alice": person(map[string]any{"publicKey": key(actor+"#main-key", actor, rsaPub, false)})},
			actor + "#other-key", nil, ""}, // wrong fragment
		{"embedded key owned by someone else", map[string]string{"a.test/users/alice": person(map[string]any{"publicKey": key(actor+"#main-key", "http://a.test/users/bob", rsaPub, false)})},
			actor + "#main-key", nil, ""}, // owner must be the actor
		{"document id on another host", map[string]string{"a.test/users/alice": mustJSON(map[string]any{"id": "http://b.test/users/alice", "publicKey": key("http://b.test/users/alice#main-key", "http://b.test/users/alice", rsaPub, false)})},
			actor + "#main-key", nil, ""}, // a.test cannot speak for b.test
		{"404", map[string]string{}, actor + "#main-key", nil, ""},                                             // gone or never there
		{"410", map[string]string{"a.test/users/alice": "status:410"}, actor + "#main-key", nil, ""},           // deleted actor
		{"not JSON", map[string]string{"a.test/users/alice": "<html>hi</html>"}, actor + "#main-key", nil, ""}, // HTML page
		{"bad PEM", map[string]string{"a.test/users/alice": person(map[string]any{"publicKey": map[string]any{"id": actor + "#main-key", "owner": actor, "publicKeyPem": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"}})},
			actor + "#main-key", nil, ""}, // corrupt key material
		{"keyId not a URL", map[string]string{}, "acct:alice@a.test", nil, ""}, // only http(s) keyIds are fetched
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWeb(t)
			for p, d := range tc.docs {
				w.set(p, d)
			}
			pk, err := w.cache(KeyCacheOptions{}).ResolveKey(context.Background(), tc.keyID, false)
			if tc.want == nil {
				if !errors.Is(err, ErrKeyUnavailable) {
					t.Fatalf("err = %v, key %v; want ErrKeyUnavailable", err, pk)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalKeys(tc.want, pk.Key) || pk.Owner != tc.owner {
				t.Errorf("got key %T owner %q", pk.Key, pk.Owner)
			}
		})
	}
}

// TestKeyCacheFetchesWithoutFragment: the fetcher is asked for the keyId
// without its #fragment, and a cache without a fetcher fails every lookup
// with ErrKeyUnavailable rather than panicking.
func TestKeyCacheFetchesWithoutFragment(t *testing.T) {
	k := loadKeys(t)
	w := newWeb(t)
	w.actor("a.test", "alice", k.rsaA.Public())
	if _, err := w.cache(KeyCacheOptions{}).ResolveKey(context.Background(), "http://a.test/users/alice#main-key", false); err != nil {
		t.Fatal(err)
	}
	if r := w.seen[0]; r.URL.Path != "/users/alice" || r.URL.Fragment != "" || r.URL.RawQuery != "" {
		t.Errorf("fetched %s", r.URL)
	}
	if _, err := NewKeyCache(KeyCacheOptions{}).ResolveKey(context.Background(), "http://a.test/users/alice#main-key", false); !errors.Is(err, ErrKeyUnavailable) {
		t.Errorf("no fetcher: err = %v, want ErrKeyUnavailable", err)
	}
}

// TestKeyCacheTTL: entries live TTL, failures NegativeTTL (injected clock).
func TestKeyCacheTTL(t *testing.T) {
	k := loadKeys(t)
	w := newWeb(t)
	w.actor("a.test", "alice", k.rsaA.Public())
	clock := newClock(time.Unix(1_700_000_000, 0))
	kc := w.cache(KeyCacheOptions{TTL: time.Hour, NegativeTTL: 10 * time.Second, Now: clock.Now})
	ctx := context.Background()
	resolve := func(id string) error { _, err := kc.ResolveKey(ctx, id, false); return err }
	steps := []struct {
		name    string
		advance time.Duration
		keyID   string
		fetches int // cumulative fetches of that path after the step
		path    string
		wantErr bool
	}{
		{"first use fetches", 0, "http://a.test/users/alice#main-key", 1, "/users/alice", false},
		{"59 minutes later: cached", 59 * time.Minute, "http://a.test/users/alice#main-key", 1, "/users/alice", false},
		{"61 minutes: expired, refetched", 2 * time.Minute, "http://a.test/users/alice#main-key", 2, "/users/alice", false},
		{"missing key: fetched", 0, "http://a.test/users/bob#main-key", 1, "/users/bob", true},
		{"5 s later: negative entry", 5 * time.Second, "http://a.test/users/bob#main-key", 1, "/users/bob", true},
		{"11 s later: retried", 6 * time.Second, "http://a.test/users/bob#main-key", 2, "/users/bob", true},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		err := resolve(st.keyID)
		if (err != nil) != st.wantErr {
			t.Fatalf("%s: err = %v", st.name, err)
		}
		if n := w.hits(st.path); n != st.fetches {
			t.Fatalf("%s: %d fetches, want %d", st.name, n, st.fetches)
		}
	}
	// refresh bypasses a fresh entry, unless younger than MinRefresh.
	kc2 := w.cache(KeyCacheOptions{MinRefresh: time.Minute, Now: clock.Now})
	_ = resolveKey(t, kc2, "http://a.test/users/alice#main-key", false)
	before := w.hits("/users/alice")
	_ = resolveKey(t, kc2, "http://a.test/users/alice#main-key", true)
	if w.hits("/users/alice") != before {
		t.Error("refresh within MinRefresh refetched")
	}
	clock.Advance(2 * time.Minute)
	_ = resolveKey(t, kc2, "http://a.test/users/alice#main-key", true)
	if w.hits("/users/alice") != before+1 {
		t.Error("refresh after MinRefresh did not refetch")
	}
}

func resolveKey(t testing.TB, kc *KeyCache, id string, refresh bool) PublicKey {
	t.Helper()
	pk, err := kc.ResolveKey(context.Background(), id, refresh)
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

// TestKeyCacheLRU: MaxEntries bounds the cache; the least recently used goes.
func TestKeyCacheLRU(t *testing.T) {
	k := loadKeys(t)
	w := newWeb(t)
	for _, n := range []string{"a", "b", "c"} {
		w.actor("x.test", n, k.rsaA.Public())
	}
	kc := w.cache(KeyCacheOptions{MaxEntries: 2})
	id := func(n string) string { return "http://x.test/users/" + n + "#main-key" }
	for _, n := range []string{"a", "b", "a", "c"} { // b is now least recent
		resolveKey(t, kc, id(n), false)
	}
	if kc.Len() != 2 {
		t.Fatalf("Len = %d", kc.Len())
	}
	resolveKey(t, kc, id("a"), false)
	if w.hits("/users/a") != 1 {
		t.Errorf("a refetched: recently used entries must stay")
	}
	resolveKey(t, kc, id("b"), false)
	if w.hits("/users/b") != 2 {
		t.Errorf("b fetched %d times: it should have been evicted", w.hits("/users/b"))
	}
	kc.Invalidate(id("b"))
	resolveKey(t, kc, id("b"), false)
	if w.hits("/users/b") != 3 {
		t.Errorf("Invalidate did not drop b")
	}
}

// TestKeyCacheSingleflight: N concurrent misses of one keyId make one fetch,
// and a waiter that gives up does not cancel it for the others.
func TestKeyCacheSingleflight(t *testing.T) {
	k := loadKeys(t)
	w := newWeb(t)
	w.actor("a.test", "alice", k.rsaA.Public())
	gate := make(chan struct{})
	w.gate = gate
	kc := w.cache(KeyCacheOptions{})
	const n = 50
	var wg sync.WaitGroup
	var ok atomic.Int32
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := kc.ResolveKey(context.Background(), "http://a.test/users/alice#main-key", false); err == nil {
				ok.Add(1)
			}
		}()
	}
	// An impatient caller joins the same flight and gives up.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := kc.ResolveKey(ctx, "http://a.test/users/alice#main-key", false)
		done <- err
	}()
	for w.hits("/users/alice") == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !errors.Is(err, ErrKeyUnavailable) {
		t.Errorf("impatient caller: %v", err)
	}
	close(gate)
	wg.Wait()
	if ok.Load() != n || w.hits("/users/alice") != 1 || kc.Fetches() != 1 {
		t.Fatalf("%d/%d ok, %d server fetches, %d cache fetches; want all ok and 1 fetch", ok.Load(), n, w.hits("/users/alice"), kc.Fetches())
	}
}

// TestParsePublicKeyPEM covers the encodings ParsePublicKeyPEM accepts.
func TestParsePublicKeyPEM(t *testing.T) {
	k := loadKeys(t)
	rsaPKIX := pemOf(t, k.rsaA.Public(), false)
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"PKIX RSA", rsaPKIX, true},                                                               // Mastodon
		{"PKCS#1 RSA", pemOf(t, k.rsaA.Public(), true), true},                                     // older servers
		{"PKIX ed25519", pemOf(t, k.edA.Public(), false), true},                                   // Misskey additional keys
		{"escaped newlines", strings.ReplaceAll(rsaPKIX, "\n", `\n`), true},                       // double-escaped JSON
		{"mislabelled PKIX", strings.ReplaceAll(rsaPKIX, " PUBLIC KEY", " RSA PUBLIC KEY"), true}, // label lies
		{"empty", "", false},        // nothing
		{"not PEM", "hello", false}, // garbage
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePublicKeyPEM(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// TestKeyCacheRefreshFailureKeepsKey: a refresh that fails (peer down) reports
// the failure but does not evict the still-valid cached key.
func TestKeyCacheRefreshFailureKeepsKey(t *testing.T) {
	k := loadKeys(t)
	w := newWeb(t)
	w.actor("a.test", "alice", k.rsaA.Public())
	kc := w.cache(KeyCacheOptions{})
	const id = "http://a.test/users/alice#main-key"
	resolveKey(t, kc, id, false)
	w.set("a.test/users/alice", "status:503")
	if _, err := kc.ResolveKey(context.Background(), id, true); !errors.Is(err, ErrKeyUnavailable) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("refresh err = %v", err)
	}
	if pk := resolveKey(t, kc, id, false); !equalKeys(pk.Key, k.rsaA.Public()) {
		t.Fatal("cached key lost after a failed refresh")
	}
	if w.hits("/users/alice") != 2 {
		t.Errorf("%d fetches, want 2", w.hits("/users/alice"))
	}
}

// fetchKeyFunc adapts a function to KeyFetcher, for fetchers made in a test.
type fetchKeyFunc func(ctx context.Context, url string) ([]byte, error)

// FetchKey calls f.
func (f fetchKeyFunc) FetchKey(ctx context.Context, url string) ([]byte, error) { return f(ctx, url) }
