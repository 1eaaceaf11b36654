package webfinger

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/apclient"
)

var update = flag.Bool("update", false, "rewrite golden files")

func testWorld(t *testing.T) *actors.World {
	t.Helper()
	w, err := actors.Open(actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func mux(w *actors.World) http.Handler {
	h, err := NewHandlers(w, "1.2.3")
	if err != nil {
		panic(err)
	}
	m := http.NewServeMux()
	m.HandleFunc("/.well-known/webfinger", h.WebFinger)
	m.HandleFunc("/.well-known/host-meta", h.HostMeta)
	m.HandleFunc("/.well-known/host-meta.json", h.HostMeta)
	m.HandleFunc("/.well-known/nodeinfo", h.NodeInfoDiscovery)
	m.HandleFunc("/nodeinfo/2.0", h.NodeInfo("2.0"))
	m.HandleFunc("/nodeinfo/2.1", h.NodeInfo("2.1"))
	return m
}

func get(t *testing.T, h http.Handler, host, target, accept string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Host = host
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestWebFingerAnswers(t *testing.T) {
	h := mux(testWorld(t))
	for _, c := range []struct {
		name, host, target string
		status             int
		self               string // expected self href, for 200s
		reason             string // expected in the body, for errors
	}{
		{"acct resource", "flood2.test", "/.well-known/webfinger?resource=acct:bob@flood2.test", 200, "https://flood2.test/users/bob", ""},
		{"actor URL resource", "flood2.test", "/.well-known/webfinger?resource=https://flood2.test/users/bob", 200, "https://flood2.test/users/bob", ""},
		{"profile URL resource", "flood2.test", "/.well-known/webfinger?resource=https://flood2.test/@bob", 200, "https://flood2.test/users/bob", ""},
		{"instance actor", "flood1.test", "/.well-known/webfinger?resource=acct:flood1.test@flood1.test", 200, "https://flood1.test/actor", ""},
		{"host with port and case", "FLOOD1.test:443", "/.well-known/webfinger?resource=acct:alice@flood1.test", 200, "https://flood1.test/users/alice", ""},
		{"missing resource", "flood1.test", "/.well-known/webfinger", 400, "", "missing"},
		{"malformed acct", "flood1.test", "/.well-known/webfinger?resource=acct:alice", 400, "", "acct:name@host"},
		{"unknown scheme", "flood1.test", "/.well-known/webfinger?resource=mailto:alice@flood1.test", 400, "", "neither"},
		{"unknown account", "flood1.test", "/.well-known/webfinger?resource=acct:mallory@flood1.test", 404, "", "mallory"},
		{"account of another origin", "flood1.test", "/.well-known/webfinger?resource=acct:alice@flood2.test", 404, "", "not served"},
		{"unknown Host", "elsewhere.test", "/.well-known/webfinger?resource=acct:alice@flood1.test", 404, "", "elsewhere.test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := get(t, h, c.host, c.target, "")
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			if c.status != 200 {
				if !strings.Contains(rec.Body.String(), c.reason) {
					t.Errorf("body %q should say %q", rec.Body, c.reason)
				}
				return
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/jrd+json") {
				t.Errorf("Content-Type %q", ct)
			}
			if !strings.Contains(rec.Body.String(), `"href": "`+c.self+`"`) {
				t.Errorf("self link should be %s: %s", c.self, rec.Body)
			}
		})
	}
}

func TestDiscoveryDocumentsMatchGoldenFiles(t *testing.T) {
	w := testWorld(t)
	h := mux(w)
	for _, c := range []struct{ file, target, accept string }{
		{"host-meta.xml", "/.well-known/host-meta", ""},          // XRD for Mastodon-era clients
		{"host-meta.json", "/.well-known/host-meta.json", ""},    // its JRD form
		{"nodeinfo-discovery.json", "/.well-known/nodeinfo", ""}, // links to both schemas
		{"nodeinfo-2.0.json", "/nodeinfo/2.0", ""},               // software crowd, its version
		{"nodeinfo-2.1.json", "/nodeinfo/2.1", ""},               // plus repository and homepage
	} {
		rec := get(t, h, "flood1.test", c.target, c.accept)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", c.target, rec.Code, rec.Body)
		}
		golden(t, c.file, rec.Body.Bytes())
	}
	// The WebFinger JRD embeds no key, so it is stable whatever keys were made.
	golden(t, "webfinger-alice.json", get(t, h, "flood1.test", "/.well-known/webfinger?resource=acct:alice@flood1.test", "").Body.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got: %s\nwant: %s", name, got, want)
	}
}

func TestLookupAgainstARealTLSListener(t *testing.T) {
	w := testWorld(t)
	srv := httptest.NewTLSServer(mux(w))
	defer srv.Close()
	// Every host name dials the test server, as the crowd's DNS would make it.
	client := srv.Client()
	tr := client.Transport.(*http.Transport)
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	// The crowd's client, apclient, reads what the handlers serve.
	fetcher := apclient.New(apclient.Options{Client: client})
	for _, c := range []struct {
		acct, self, err string
	}{
		{"alice@flood1.test", "https://flood1.test/users/alice", ""},  // bare handle
		{"acct:bob@flood2.test", "https://flood2.test/users/bob", ""}, // acct: URI
		{"@bob@flood2.test", "https://flood2.test/users/bob", ""},     // Mastodon-style handle
		{"mallory@flood1.test", "", "no such account"},                // 404
		{"nobody", "", "name@host"},                                   // malformed
	} {
		jrd, err := fetcher.Lookup(context.Background(), c.acct)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Lookup(%q) err = %v, want %q", c.acct, err, c.err)
			}
			continue
		}
		if err != nil || jrd.Self() != c.self {
			t.Errorf("Lookup(%q) = %q, %v; want %s", c.acct, jrd.Self(), err, c.self)
		}
	}
}

func FuzzResolve(f *testing.F) {
	w, err := actors.Open(actors.Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	defer w.Close()
	o := w.Origins[0]
	f.Add("acct:alice@flood1.test")
	f.Add("https://flood1.test/users/alice")
	f.Add("acct:@@")
	f.Fuzz(func(t *testing.T, resource string) {
		a, err := Resolve(o, resource)
		if err == nil && a == nil {
			t.Fatal("nil actor without error")
		}
	})
}

// TestWebFingerKeepsAnswersButNotDeletedAccounts: NewHandlers' Handlers keep
// each resolved question's JRD under its origin and raw query, yet an
// account deleted after its answer was kept (a leaver after its Delete) is
// answered 410 from then on; errors and padded queries are answered but
// not kept.
func TestWebFingerKeepsAnswersButNotDeletedAccounts(t *testing.T) {
	w := testWorld(t)
	h, err := NewHandlers(w, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	flood1, _ := w.Origin("flood1.test")
	flood2, _ := w.Origin("flood2.test")
	alice, _ := flood1.Actor("alice")
	leaver := alice.Leaver(1)
	const path = "/.well-known/webfinger?"
	query := "resource=acct:" + leaver.Acct()
	bob := "resource=acct:bob@flood1.test&pad="
	longest := bob + strings.Repeat("x", maxCachedQuery-len(bob))
	for _, step := range []struct {
		name         string
		origin       *actors.Origin
		query        string
		deleteLeaver bool // record the leaver's deletion before this step
		status       int
		body         string // substring
		kept         bool   // the question is kept afterwards
	}{
		// The first answer is resolved, rendered and kept.
		{"first answer", flood1, query, false, 200, `"href": "` + leaver.ID + `"`, true},
		// Asked again, the kept answer is the same.
		{"kept answer", flood1, query, false, 200, `"href": "` + leaver.ID + `"`, true},
		// The same query on another origin is its own question: that origin serves no such account.
		{"same query, another origin", flood2, query, false, 404, "not served by flood2.test", false},
		// Deleted after it was kept: 410, as for a deleted account never asked about.
		{"deleted after it was kept", flood1, query, true, 410, leaver.Acct() + " was deleted", true},
		// An unknown account is answered 404 and not kept.
		{"unknown account", flood1, "resource=acct:mallory@flood1.test", false, 404, "mallory", false},
		// A query of maxCachedQuery bytes is still kept.
		{"longest kept query", flood1, longest, false, 200, `"href": "https://flood1.test/users/bob"`, true},
		// One byte more is answered as any other, not kept.
		{"padded query", flood1, longest + "x", false, 200, `"href": "https://flood1.test/users/bob"`, false},
	} {
		if step.deleteLeaver {
			if err := w.RecordChanges([]actors.Change{{ID: leaver.ID, Deleted: "2026-11-30T12:00:00Z"}}); err != nil {
				t.Fatal(err)
			}
		}
		rec := get(t, http.HandlerFunc(h.WebFinger), step.origin.Host, path+step.query, "")
		if rec.Code != step.status || !strings.Contains(rec.Body.String(), step.body) {
			t.Errorf("%s: %d %q, want %d with %q", step.name, rec.Code, rec.Body, step.status, step.body)
		}
		if kept := h.answers.Contains(question{origin: step.origin, query: step.query}); kept != step.kept {
			t.Errorf("%s: kept %v, want %v", step.name, kept, step.kept)
		}
	}
}

// TestWebFingerWithoutKeptAnswers: a Handlers literal (no kept answers)
// resolves every request, and answers 410 for a deleted account too.
func TestWebFingerWithoutKeptAnswers(t *testing.T) {
	w := testWorld(t)
	flood1, _ := w.Origin("flood1.test")
	alice, _ := flood1.Actor("alice")
	gone := alice.Leaver(2)
	if err := w.RecordChanges([]actors.Change{{ID: gone.ID, Deleted: "2026-11-30T12:00:00Z"}}); err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(Handlers{World: w}.WebFinger)
	for _, c := range []struct {
		name, resource string
		status         int
		body           string // substring
	}{
		// A live account: its JRD, rendered for the request.
		{"live account", "acct:alice@flood1.test", 200, `"href": "https://flood1.test/users/alice"`},
		// A deleted leaver: 410.
		{"deleted leaver", "acct:" + gone.Acct(), 410, gone.Acct() + " was deleted"},
	} {
		rec := get(t, h, "flood1.test", "/.well-known/webfinger?resource="+c.resource, "")
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s: %d %q, want %d with %q", c.name, rec.Code, rec.Body, c.status, c.body)
		}
	}
}
