package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/pasture"
)

// TestAdminDefaultsToLoopback: every command that serves or talks to the
// admin API defaults to an address on loopback, so the API (which can make
// the crowd send signed activities) is never on the network unless asked.
func TestAdminDefaultsToLoopback(t *testing.T) {
	t.Parallel()
	root := newRoot()
	for _, c := range []struct {
		command string
		why     string
	}{
		// The server side: what must be loopback.
		{"serve", "where the admin API listens"},
		// The clients default to the same address, so they find the server.
		{"flood", "the crowd a flood attaches to"},
		{"send", "the crowd that sends"},
		{"tail", "the crowd whose log is followed"},
		{"lookup", "the crowd that looks up"},
	} {
		cmd, _, err := root.Find([]string{c.command})
		if err != nil || cmd.Name() != c.command {
			t.Errorf("%s: no such command (%v)", c.command, err)
			continue
		}
		fl := cmd.Flags().Lookup("admin")
		if fl == nil {
			t.Errorf("%s (%s): no --admin flag", c.command, c.why)
			continue
		}
		host, port, err := net.SplitHostPort(fl.DefValue)
		ip := net.ParseIP(host)
		if err != nil || port == "" || ip == nil || !ip.IsLoopback() {
			t.Errorf("%s --admin defaults to %q (%s): want a loopback IP and a port", c.command, fl.DefValue, c.why)
		}
	}
	// What `crowd serve --help` tells the user.
	code, stdout, stderr := runCLIContext(t, context.Background(), "serve", "--help")
	if code != 0 || !regexp.MustCompile(`--admin string[^\n]*\(default "127\.0\.0\.1:9180"\)`).MatchString(stdout) {
		t.Errorf("crowd serve --help (exit %d) does not show --admin defaulting to 127.0.0.1:9180:\n%s%s", code, stdout, stderr)
	}
}

// adminRoute is one route of the admin API and how this test calls it.
type adminRoute struct {
	pattern string // as registered: "METHOD /path"
	query   string // appended to the path
	body    string // JSON body for a POST
}

// TestAdminNeverServesPrivateKeys runs the crowd as `crowd serve` builds
// it, makes it do some of everything (follows between its actors, a
// Create, a Like, a signed lookup, a registered Follow), then calls every
// route of the admin API and looks in every answer for private key
// material: any "PRIVATE KEY" PEM, any base64 run that parses as a private
// key (PKCS#8, PKCS#1, SEC 1), and the secret numbers of every key the
// crowd holds (the actors' RSA keys, the CA's key, the TLS leaf keys) in
// base64, hex and decimal. The routes are checked against those the
// admin's router serves, so a new route cannot skip this test.
func TestAdminNeverServesPrivateKeys(t *testing.T) {
	t.Parallel()
	routes := []adminRoute{
		{pattern: "GET /"},                                              // the admin page
		{pattern: "GET /login"},                                         // the page's login link: on loopback, the page
		{pattern: "GET /healthz"},                                       // liveness
		{pattern: "GET /readyz"},                                        // readiness
		{pattern: "GET /metrics"},                                       // Prometheus, after the activity
		{pattern: "GET /ca.pem"},                                        // the CA certificate (its key stays on disk)
		{pattern: "GET /api/world"},                                     // actors and their public keys' hashes
		{pattern: "GET /api/activities", query: "?limit=1000"},          // the whole log: signed activities with their headers
		{pattern: "GET /api/activities/stream", query: "?backlog=1000"}, // the same, live
		{pattern: "GET /api/activities/totals"},                         // counts only
		{pattern: "GET /api/follows"},                                   // the graph, Follow activities left out
		{pattern: "GET /api/deliveries"},                                // the queue: activities to sign later
		{pattern: "GET /api/lookup", query: "?resource=acct:%s"},        // a signed fetch of an actor document
		{pattern: "POST /api/following", body: `{"local":"%s","remote":"https://sut.example/users/x","follow_id":"https://sut.example/follows/1"}`},      // a registration's answer
		{pattern: "POST /api/following/prune", body: `{"older_than":"0s","dry_run":true}`},                                                               // stale pending Follows
		{pattern: "POST /api/send", body: `{"from":"%s","type":"Follow","to":"%s"}`},                                                                     // a send's answer: the signed activity
		{pattern: "POST /api/outbox", body: `{"items":[]}`},                                                                                              // the outboxes' count of what they took
		{pattern: "POST /api/fetchback", body: `{"label":"keys"}`},                                                                                       // a fetch-back window opened
		{pattern: "POST /api/fetchback/end", body: `{"id":"{window}"}`},                                                                                  // a window's tally at the run's end
		{pattern: "POST /api/fetchback/close", body: `{"id":"{window}"}`},                                                                                // and its last
		{pattern: "GET /api/fetchback"},                                                                                                                  // the open windows' tallies
		{pattern: "POST /api/flood/live", body: `{"run":{"label":"keys","seed":"1"},"elapsed_s":1,"tick":{"elapsed_s":1},"metrics":""}`},                 // a flood's push
		{pattern: "GET /api/flood/live"},                                                                                                                 // the runs pushed
		{pattern: "POST /api/changes", body: `{"items":[]}`},                                                                                             // the count of edits and deletions taken
		{pattern: "POST /api/following/undo", body: `{"local":"%s","remote":"https://sut.example/users/x","follow_id":"https://sut.example/follows/1"}`}, // whether an undone Follow was there
		{pattern: "GET /api/reactions"},                                                                                                                  // the Likes and Announces kept: ids only
		{pattern: "POST /api/reactions", body: `{"items":[]}`},                                                                                           // the count of reactions taken
		{pattern: "PUT /api/weather", body: `{"spec":"down=flood1.test"}`},                                                                               // the weather put in force: host names only
		{pattern: "GET /api/weather"},                                                                                                                    // the weather in force
		{pattern: "DELETE /api/weather"},                                                                                                                 // the weather cleared
	}
	var listed []string
	for _, r := range routes {
		listed = append(listed, r.pattern)
	}
	state := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cw, err := startCrowd(ctx, zap.NewNop(), actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: state},
		pasture.Config{HTTPSAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", Advertise: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		cw.Shutdown(sctx)
	}()
	if registered := cw.Pasture.AdminRoutes(); !slices.Equal(registered, sorted(listed)) {
		t.Fatalf("the admin serves the routes\n  %v\nthis test calls\n  %v\nadd the new ones here", registered, sorted(listed))
	}
	admin := "http://" + cw.Pasture.Addr("admin")
	if host, _, _ := net.SplitHostPort(cw.Pasture.Addr("admin")); !net.ParseIP(host).IsLoopback() {
		t.Errorf("admin API on %s", host)
	}
	a, b := cw.World.Origins[0].Person(0), cw.World.Origins[1].Person(1)

	// Some of everything: the logs, graph and metrics then hold activities
	// that were signed with the keys looked for.
	for _, req := range []string{
		`{"from":"` + a.Acct() + `","type":"Follow","to":"` + b.ID + `"}`,
		`{"from":"` + b.Acct() + `","type":"Follow","to":"acct:` + a.Acct() + `"}`,
		`{"from":"` + a.Acct() + `","type":"Create","to":"` + b.ID + `"}`,
	} {
		if code, body := adminCall(t, "POST", admin+"/api/send", req); code != 200 {
			t.Fatalf("send %s: %d %s", req, code, body)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := adminCall(t, "GET", admin+"/api/follows", "")
		if strings.Count(string(body), `"accepted"`) >= 4 { // both follows, on both sides
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the follows were not accepted: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	secrets := keySecrets(t, cw.World, state)
	if len(secrets) < 10 {
		t.Fatalf("only %d secrets to look for", len(secrets))
	}
	// A fetch-back window, opened before the fetches below, for its routes.
	_, opened := adminCall(t, "POST", admin+"/api/fetchback", `{"label":"open"}`)
	var window struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(opened, &window); err != nil || window.ID == "" {
		t.Fatalf("opening a fetch-back window: %v %s", err, opened)
	}
	for _, r := range routes {
		method, path, _ := strings.Cut(r.pattern, " ")
		r.body = strings.ReplaceAll(r.body, "{window}", window.ID)
		url := admin + path
		if r.query != "" {
			url += strings.Replace(r.query, "%s", b.Acct(), 1)
		}
		body := strings.Replace(strings.Replace(r.body, "%s", a.Acct(), 1), "%s", b.ID, 1)
		code, got := adminCall(t, method, url, body)
		if code >= 400 {
			t.Errorf("%s: %d %s", r.pattern, code, got)
		}
		if len(got) == 0 {
			t.Errorf("%s: empty answer", r.pattern)
		}
		checkNoPrivateKey(t, r.pattern, got, secrets)
	}
}

// adminCall makes one request to the admin API and returns the status and
// the body; a streaming answer is read for a second.
func adminCall(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The stream never ends: read what the backlog and a second give.
		var buf bytes.Buffer
		done := make(chan struct{})
		go func() { io.Copy(&buf, resp.Body); close(done) }()
		time.Sleep(time.Second)
		cancel()
		<-done
		return resp.StatusCode, buf.Bytes()
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, got
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// keySecrets returns what must never be served: for every private key of
// the world (actors and instance actors) and every private key PEM file in
// the state folder (CA, TLS leaves, actor keys), its secret numbers in
// base64 (std and URL, padded or not), hex and decimal, and each line of
// its PKCS#8 PEM but the first (which starts like every other key's).
func keySecrets(t *testing.T, w *actors.World, state string) []string {
	t.Helper()
	var keys []crypto.Signer
	for _, o := range w.Origins {
		for _, a := range append(o.Persons(), o.Instance) {
			k, err := a.PrivateKey()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
	}
	files := 0
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for rest := raw; ; {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if !strings.Contains(block.Type, "PRIVATE KEY") {
				continue
			}
			k, err := parsePrivateKey(block.Bytes)
			if err != nil {
				t.Errorf("%s: a %s that does not parse: %v", path, block.Type, err)
				continue
			}
			keys = append(keys, k)
			files++
		}
		return nil
	})
	if files == 0 {
		t.Fatal("no private key file in the state folder: the walk is broken")
	}
	var out []string
	add := func(b []byte) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString(b))
		}
		out = append(out, hex.EncodeToString(b))
	}
	addInt := func(n *big.Int) {
		add(n.Bytes())
		out = append(out, n.String(), n.Text(16))
	}
	for _, k := range keys {
		switch k := k.(type) {
		case *rsa.PrivateKey:
			addInt(k.D)
			for _, p := range k.Primes {
				addInt(p)
			}
		case *ecdsa.PrivateKey:
			if ek, err := k.ECDH(); err == nil {
				add(ek.Bytes())
			}
		case ed25519.PrivateKey:
			add(k.Seed())
		default:
			t.Errorf("a %T key: teach keySecrets its secret", k)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))), "\n")
		for _, l := range lines[2 : len(lines)-1] { // not the BEGIN line, the generic first line, the END line
			if len(l) >= 24 {
				out = append(out, l)
			}
		}
	}
	return out
}

func parsePrivateKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	return x509.ParseECPrivateKey(der)
}

// base64Run is a stretch of text that could be an encoded key, JSON
// escapes of line breaks removed first.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{100,}={0,2}`)

// checkNoPrivateKey fails the test if body carries private key material.
func checkNoPrivateKey(t *testing.T, route string, body []byte, secrets []string) {
	t.Helper()
	for _, leak := range privateKeyLeaks(body, secrets) {
		t.Errorf("%s serves %s", route, leak)
	}
}

// privateKeyLeaks says what private key material body carries: a PEM
// private key, one of secrets, a base64 run that parses as a private key,
// or a JSON field named like one.
func privateKeyLeaks(body []byte, secrets []string) []string {
	var leaks []string
	text := string(body)
	if strings.Contains(strings.ToUpper(text), "PRIVATE KEY") {
		leaks = append(leaks, "a PRIVATE KEY")
	}
	for _, s := range secrets {
		if strings.Contains(text, s) {
			leaks = append(leaks, fmt.Sprintf("private key material (%.12s…)", s))
			break
		}
	}
	flat := strings.NewReplacer(`\n`, "", `\r`, "", "\n", "", "\r", "", `\u002b`, "+", `\/`, "/").Replace(text)
	for _, run := range base64Run.FindAllString(flat, -1) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			der, err := enc.DecodeString(run)
			if err != nil {
				continue
			}
			if _, err := parsePrivateKey(der); err == nil {
				leaks = append(leaks, fmt.Sprintf("an encoded private key (%.20s…)", run))
				break
			}
		}
	}
	var v any
	if json.Unmarshal(body, &v) == nil && hasKeyField(v) {
		leaks = append(leaks, "a private key field")
	}
	return leaks
}

// TestPrivateKeyLeaksAreFound: the detector of
// TestAdminNeverServesPrivateKeys finds each way a key could leak, and
// passes what the admin API rightly serves.
func TestPrivateKeyLeaksAreFound(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	pkcs1 := x509.MarshalPKCS1PrivateKey(key)
	spki, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	privPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}))
	jsonOf := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	secrets := []string{hex.EncodeToString(key.D.Bytes()), key.D.String()}
	for _, c := range []struct {
		name string
		body string
		leak bool
	}{
		// A public key PEM in an actor's JSON is what the API should serve.
		{"public key PEM in JSON", jsonOf(map[string]string{"publicKeyPem": pubPEM}), false},
		// A PEM private key, as text.
		{"PEM private key", privPEM, true},
		// The same inside JSON (lines joined by \n escapes).
		{"PEM private key in JSON", jsonOf(map[string]string{"k": privPEM}), true},
		// PKCS#8 DER in base64 with no PEM armour.
		{"bare PKCS#8 base64", jsonOf(map[string]string{"k": base64.StdEncoding.EncodeToString(pkcs8)}), true},
		// PKCS#1 DER in unpadded URL base64.
		{"bare PKCS#1 base64url", base64.RawURLEncoding.EncodeToString(pkcs1), true},
		// The private exponent in hex, a secret the test knows.
		{"D in hex", "d=" + hex.EncodeToString(key.D.Bytes()), true},
		// A field that says what it holds, whatever its value.
		{"a private_key field", `{"actor":{"private_key":"x"}}`, true},
		// A signature (base64) is not a key.
		{"a signature", `signature="` + base64.StdEncoding.EncodeToString(pkcs1[:256]) + `"`, false},
	} {
		leaks := privateKeyLeaks([]byte(c.body), secrets)
		if (len(leaks) > 0) != c.leak {
			t.Errorf("%s: leaks %v, want a leak: %v", c.name, leaks, c.leak)
		}
	}
}

// hasKeyField reports a JSON object field named like a private key.
func hasKeyField(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch strings.ToLower(strings.ReplaceAll(k, "_", "")) {
			case "privatekey", "privatekeypem", "secretkey":
				return true
			}
			if hasKeyField(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasKeyField(x) {
				return true
			}
		}
	}
	return false
}
