package inbox

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/dialguard/dialguardtest"
	"github.com/crowdfed/crowd/internal/testkeys"
	"github.com/crowdfed/crowd/signing"
)

// remoteHost is the remote server's name. httptest's TLS certificate is
// valid for it, and the test client dials it to the test listener, so no
// packet leaves loopback.
const remoteHost = "example.com"

func remoteID(name string) string    { return "https://" + remoteHost + "/users/" + name }
func remoteKeyID(name string) string { return remoteID(name) + "#main-key" }

// openWorld opens a two-origin, two-actor world (flood1.test and
// flood2.test, alice and bob) in stateDir with keys from testdata, so no
// test pays for RSA key generation.
func openWorld(t testing.TB, stateDir string) *actors.World {
	t.Helper()
	for _, host := range []string{"flood1.test", "flood2.test"} {
		dst := filepath.Join(stateDir, "keys", host)
		if err := os.MkdirAll(dst, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"alice", "bob", host} {
			b, err := os.ReadFile(filepath.Join("testdata", "keys", host, n+".pem"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, n+".pem"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The backend CROWD_CRYPTO names (auto when unset: libcrypto in a cgo build), so the
	// benchmarks compare backends: CROWD_CRYPTO=go go test -bench InboxServeHTTP ./inbox/.
	backend, err := signing.NewBackend(os.Getenv("CROWD_CRYPTO"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := actors.Open(actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: stateDir, Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func loadRemoteKey(t testing.TB, name string) *rsa.PrivateKey {
	return testkeys.RSA(t, filepath.Join("testdata", "remote", name+".pem"))
}

func pubPEM(t testing.TB, k *rsa.PrivateKey) string { return testkeys.PublicPEM(t, &k.PublicKey) }

// received is one request the remote server got, with its verdict on the
// signature (checked with signing.Verifier, as a real server would).
type received struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	Verified     signing.Verified
	VerifyErr    error
}

// remoteServer is a second, independent "fediverse server" on a TLS
// listener: it serves actor documents with keys and WebFinger, and
// inboxes that record and verify what they receive.
type remoteServer struct {
	srv    *httptest.Server
	client *http.Client // the crowd's client: dials example.com to srv
	keys   map[string]*rsa.PrivateKey
	signer *signing.Signer

	mu       sync.Mutex
	posts    []received
	gets     []received
	statuses []int // answers for the next inbox POSTs; then 202
	always   int   // when set, every inbox POST gets it
	dialed   []string
}

func newRemote(t *testing.T, world *actors.World) *remoteServer {
	t.Helper()
	// php is an actor whose server escapes '/' in JSON, as PHP's json_encode does.
	rs := &remoteServer{keys: map[string]*rsa.PrivateKey{"bob": loadRemoteKey(t, "bob"), "carol": loadRemoteKey(t, "carol"), "php": loadRemoteKey(t, "carol"), "drifter": loadRemoteKey(t, "carol"),
		"fep": loadRemoteKey(t, "carol"), "leaky": loadRemoteKey(t, "carol")},
		signer: signing.NewSigner(signing.SignerOptions{UserAgent: "remote-test/1"})}
	// The remote verifies the crowd's signatures with the crowd's public
	// keys, exactly what fetching the crowd's actor documents would give.
	verifier := &signing.Verifier{Keys: signing.KeyResolverFunc(func(ctx context.Context, keyID string, _ bool) (signing.PublicKey, error) {
		a, ok := world.ActorByKeyID(keyID)
		if !ok {
			return signing.PublicKey{}, fmt.Errorf("%w: %s", signing.ErrKeyUnavailable, keyID)
		}
		return signing.PublicKey{Key: a.Key.Public(), Owner: a.ID, ID: a.KeyID}, nil
	})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{name}", func(w http.ResponseWriter, r *http.Request) {
		v, verr := verifier.Verify(r.Context(), r, nil)
		rs.mu.Lock()
		rs.gets = append(rs.gets, received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Verified: v, VerifyErr: verr})
		rs.mu.Unlock()
		name := r.PathValue("name")
		if name == "badguy" {
			// Everything a real server objects to.
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Person","publicKey":{"id":%q,"owner":"https://elsewhere.test/users/x","publicKeyPem":"nope"}}`,
				remoteID("badguy"), remoteKeyID("badguy"))
			return
		}
		key, ok := rs.keys[name]
		if !ok {
			http.Error(w, "no such actor", http.StatusNotFound)
			return
		}
		id := remoteID(name)
		doc := map[string]any{
			"@context":          []string{"https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"},
			"id":                id,
			"type":              "Person",
			"preferredUsername": name,
			"inbox":             id + "/inbox",
			"outbox":            id + "/outbox",
			"followers":         id + "/followers",
			"following":         id + "/following",
			"endpoints":         map[string]string{"sharedInbox": "https://" + remoteHost + "/inbox"},
			"publicKey":         map[string]string{"id": remoteKeyID(name), "owner": id, "publicKeyPem": pubPEM(t, key)},
		}
		switch name {
		case "fep": // named by FEP-2c59's webfinger, its preferredUsername no account
			doc["preferredUsername"], doc["webfinger"] = "nobody-here", "fep@"+remoteHost
		case "leaky": // its webfinger names a host on a public address
			doc["webfinger"] = "x@public.test"
		}
		w.Header().Set("Content-Type", "application/activity+json")
		b, _ := json.Marshal(doc)
		if name == "php" {
			b = bytes.ReplaceAll(b, []byte("/"), []byte(`\/`)) // every '/' is inside a string
		}
		w.Write(b)
	})
	mux.HandleFunc("GET /.well-known/webfinger", func(w http.ResponseWriter, r *http.Request) {
		res := r.URL.Query().Get("resource")
		user, _, _ := strings.Cut(strings.TrimPrefix(res, "acct:"), "@")
		if user == "noself" { // an account with no ActivityPub actor
			w.Header().Set("Content-Type", "application/jrd+json")
			fmt.Fprintf(w, `{"subject":%q,"links":[]}`, res)
			return
		}
		// Answers that name another account, or none, or a self link
		// Mastodon does not fetch: what it stops at, and what it follows.
		subject, self, selfType := res, remoteID(user), "application/activity+json"
		switch user {
		case "alias": // a vanity account: bob's own answer confirms it
			subject, self = "acct:bob@"+remoteHost, remoteID("bob")
		case "hijack": // names alias, whose answer names bob: one redirect too many
			subject, self = "acct:alias@"+remoteHost, remoteID("bob")
		case "drifter": // its actor's round trip meets hijack's redirects
			subject = "acct:hijack@" + remoteHost
		case "nosubject":
			subject, self = "", remoteID("bob")
		case "ldself": // JSON-LD without the profile Mastodon compares
			self, selfType = remoteID("bob"), "application/ld+json"
		case "twoselves": // an ActivityPub self link, then a page's: Mastodon reads the last
			w.Header().Set("Content-Type", "application/jrd+json")
			fmt.Fprintf(w, `{"subject":%q,"links":[{"rel":"self","type":"application/activity+json","href":%q},{"rel":"self","type":"text/html","href":"https://%s/@bob"}]}`,
				res, remoteID("bob"), remoteHost)
			return
		default:
			if _, ok := rs.keys[user]; !ok && user != "badguy" {
				http.Error(w, "not found", http.StatusNotFound)
				return
			}
		}
		w.Header().Set("Content-Type", "application/jrd+json")
		fmt.Fprintf(w, `{"subject":%q,"links":[{"rel":"self","type":%q,"href":%q}]}`, subject, selfType, self)
	})
	inbox := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		v, verr := verifier.Verify(r.Context(), r, body)
		rs.mu.Lock()
		rs.posts = append(rs.posts, received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Verified: v, VerifyErr: verr})
		status := http.StatusAccepted
		switch {
		case rs.always != 0:
			status = rs.always
		case len(rs.statuses) > 0:
			status, rs.statuses = rs.statuses[0], rs.statuses[1:]
		case verr != nil:
			status = http.StatusUnauthorized
		}
		rs.mu.Unlock()
		if status >= 300 {
			http.Error(w, "remote says no", status)
			return
		}
		w.WriteHeader(status)
	}
	mux.HandleFunc("POST /users/{name}/inbox", inbox)
	mux.HandleFunc("POST /inbox", inbox)
	rs.srv = httptest.NewTLSServer(mux)
	t.Cleanup(rs.srv.Close)
	tr := rs.srv.Client().Transport.(*http.Transport).Clone()
	addr := rs.srv.Listener.Addr().String()
	tr.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		rs.mu.Lock()
		rs.dialed = append(rs.dialed, a) // every address the crowd's client tried
		rs.mu.Unlock()
		if a != remoteHost+":443" {
			// As a real dial that finds nothing there fails.
			return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("test network: no route to %s", a)}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	rs.client = &http.Client{Transport: tr, Timeout: 5 * time.Second}
	return rs
}

func (rs *remoteServer) setStatuses(always int, next ...int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.always, rs.statuses = always, next
}

func (rs *remoteServer) postsTo(path string) []received {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []received
	for _, p := range rs.posts {
		if p.Path == path {
			out = append(out, p)
		}
	}
	return out
}

func (rs *remoteServer) getsSnapshot() []received {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]received(nil), rs.gets...)
}

// countingListener counts the bytes the server reads from its clients.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// fixture is a crowd (world + Inbox served on a real listener) and a
// remote server.
type fixture struct {
	t      *testing.T
	world  *actors.World
	state  string
	remote *remoteServer
	in     *Inbox
	srv    *httptest.Server
	read   *atomic.Int64
	reg    *prometheus.Registry
}

// testConfig is a fast configuration: short backoff, few attempts.
func testConfig(f *fixture) Config {
	return Config{
		World:        f.world,
		Client:       f.remote.client,
		StateDir:     f.state,
		Logger:       zap.NewNop(),
		Registerer:   f.reg,
		MaxBodyBytes: 64 << 10,
		Delivery:     DeliveryConfig{Workers: 2, MaxAttempts: 3, BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond, Timeout: 5 * time.Second},
		// The remote's name is private here, as the client dials it to loopback.
		ResolveTarget: (&dialguardtest.FakeNet{Names: map[string][]string{remoteHost: {"127.0.0.1"}, "public.test": {"93.184.215.14"}}}).Resolve,
	}
}

// newFixture builds the crowd and the remote; start runs the delivery
// workers (some tests check what happens before they run).
func newFixture(t *testing.T, start bool, mutate ...func(*Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, state: t.TempDir(), read: &atomic.Int64{}, reg: prometheus.NewRegistry()}
	f.world = openWorld(t, f.state)
	t.Cleanup(func() { f.world.Close() })
	f.remote = newRemote(t, f.world)
	cfg := testConfig(f)
	for _, m := range mutate {
		m(&cfg)
	}
	in, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.in = in
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := in.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	if start {
		if err := in.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	f.srv = httptest.NewUnstartedServer(addressed(f.world, in))
	f.srv.Listener = countingListener{Listener: f.srv.Listener, n: f.read}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) actor(acct string) *actors.Actor {
	f.t.Helper()
	a, err := f.in.LocalActor(acct)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// signedPost builds a POST of body to path on host, signed by the remote
// actor name (or with mod applied before signing, e.g. another Date).
func (f *fixture) signedPost(host, path, name string, body []byte, signer *signing.Signer) *http.Request {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Host = host
	if signer == nil {
		signer = f.remote.signer
	}
	if err := signer.SignPost(req, body, remoteKeyID(name), f.remote.keys[name]); err != nil {
		f.t.Fatal(err)
	}
	return req
}

// do sends req and returns the status and body.
func (f *fixture) do(req *http.Request) (int, string) {
	f.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// deliver is signedPost + do for a remote actor's activity.
func (f *fixture) deliver(path, name string, body []byte) (int, string) {
	f.t.Helper()
	return f.do(f.signedPost("flood1.test", path, name, body, nil))
}

func followJSON(id, actor, object string) []byte {
	return fmt.Appendf(nil, `{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Follow","actor":%q,"object":%q}`, id, actor, object)
}

// eventually waits (up to 10 s, a deadlock guard, not a timing claim)
// for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// metricValue sums the samples of a counter or gauge family whose labels
// include want.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, fam := range fams {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// entries returns the log entries that match f.
func (f *fixture) entries(filter Filter) []Entry { return f.in.Log().Latest(0, filter) }

// queueFiles lists the pending delivery files on disk.
func queueFiles(t *testing.T, state string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(state, "outbox"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			out = append(out, e.Name())
		}
	}
	return out
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
}

// addressed hands each request to in as the crowd's origin router does: the Host's origin and
// the path's inbox in the request's context (WithRecipient); an unknown Host is addressed to
// no origin. pasture's router is the real one; the inbox's tests stand apart from it.
func addressed(world *actors.World, in http.Handler) http.Handler {
	at := func(rc func(r *http.Request) Recipient) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if o, ok := world.Origin(r.Host); ok {
				a := rc(r)
				a.Origin = o
				r = r.WithContext(WithRecipient(r.Context(), a))
			}
			in.ServeHTTP(w, r)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/inbox", at(func(*http.Request) Recipient { return Recipient{} }))
	mux.Handle("/actor/inbox", at(func(*http.Request) Recipient { return Recipient{Instance: true} }))
	mux.Handle("/users/{name}/inbox", at(func(r *http.Request) Recipient { return Recipient{Name: r.PathValue("name")} }))
	mux.Handle("/", in)
	return mux
}

// dialedSnapshot is every address the crowd's client dialled so far.
func (rs *remoteServer) dialedSnapshot() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.dialed...)
}
