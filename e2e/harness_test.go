package e2e

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// helperEnv selects what the test binary does when a test re-runs it as a helper process
// (a tiny HTTP server or client that must run inside a namespace).
const helperEnv = "CROWD_E2E_HELPER"

// TestMain runs the helper processes, then the tests, then removes the crowd binary BuildCrowd
// made. It is the only TestMain of package e2e: tests added to this package share it.
func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "http-server":
		// Answers every request with the token, on the address given.
		token := os.Getenv("CROWD_E2E_TOKEN")
		err := http.ListenAndServe(os.Getenv("CROWD_E2E_ADDR"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, token)
		}))
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	case "http-get":
		// Prints the body of one GET.
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(os.Getenv("CROWD_E2E_URL"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		io.Copy(os.Stdout, resp.Body)
		os.Exit(0)
	}
	code := m.Run()
	removeBuild()
	os.Exit(code)
}

// randomToken returns a string no other process could answer by accident.
func randomToken(t *testing.T) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// helperCommand re-runs this test binary inside ns as the named helper.
func helperCommand(ns *Netns, helper string, env ...string) *exec.Cmd {
	cmd := ns.Command(context.Background(), os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+helper), env...)
	return cmd
}

func TestMissingTools(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools []string
		want  []string
	}{
		// sh is on every machine that can run these tests.
		{"present", []string{"sh"}, nil},
		// only the missing one is named, in order.
		{"one missing", []string{"sh", "crowd-no-such-tool-x1"}, []string{"crowd-no-such-tool-x1"}},
		// a path works too, and a missing path is reported as given.
		{"path", []string{"/bin/sh", "/nonexistent/crowd-tool"}, []string{"/nonexistent/crowd-tool"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := missingTools(tc.tools...); !slices.Equal(got, tc.want) {
				t.Errorf("missingTools(%v) = %v, want %v", tc.tools, got, tc.want)
			}
		})
	}
}

// TestNetnsIsolation proves the harness: a server started in the namespace is reached from
// inside it (by a process started there, and by the test's own Dial), its resolv.conf and hosts
// files are the namespace's, and the host's loopback does not see the server.
func TestNetnsIsolation(t *testing.T) {
	t.Parallel()
	ns := NewNetns(t)
	token := randomToken(t)
	StartProcess(t, helperCommand(ns, "http-server", "CROWD_E2E_ADDR=127.0.0.1:80", "CROWD_E2E_TOKEN="+token),
		ReadyTCP(ns, "127.0.0.1:80"))

	// A process started in the namespace reaches the server.
	out, err := helperCommand(ns, "http-get", "CROWD_E2E_URL=http://127.0.0.1:80/").CombinedOutput()
	if err != nil || string(out) != token {
		t.Errorf("GET from inside the namespace = %q, %v; want the token", out, err)
	}

	// So does the test process, through a socket made in the namespace.
	resp, err := ns.HTTPClient(nil, nil).Get("http://127.0.0.1:80/")
	if err != nil {
		t.Fatalf("GET through Netns.HTTPClient: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != token {
		t.Errorf("GET through Netns.HTTPClient = %q, want the token", body)
	}

	// The host's loopback is another network: nothing, or someone else's server, answers there.
	c := &http.Client{Timeout: 2 * time.Second}
	if resp, err := c.Get("http://127.0.0.1:80/"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) == token {
			t.Errorf("the host's 127.0.0.1:80 answered with the namespace's token")
		}
	}

	// Names: resolv.conf names 127.0.0.1, and a hosts file written with WriteEtc is seen.
	if got := ns.Run(t, "cat", "/etc/resolv.conf"); !strings.Contains(got, "nameserver 127.0.0.1") {
		t.Errorf("resolv.conf in the namespace = %q", got)
	}
	ns.WriteEtc(t, "hosts", "127.0.0.1 localhost\n127.0.0.9 probe.test\n")
	if got := ns.Run(t, "getent", "hosts", "probe.test"); !strings.HasPrefix(got, "127.0.0.9") {
		t.Errorf("getent hosts probe.test in the namespace = %q", got)
	}
}

// TestCleanup checks that what a test made is gone after it: the namespace, its /etc/netns
// folder, and the process group StartProcess started.
func TestCleanup(t *testing.T) {
	var name, etc string
	var pid int
	t.Run("make", func(t *testing.T) {
		ns := NewNetns(t)
		name, etc = ns.Name, ns.EtcDir
		ns.WriteEtc(t, "hosts", "127.0.0.1 localhost\n")
		p := StartProcess(t, helperCommand(ns, "http-server", "CROWD_E2E_ADDR=127.0.0.1:80"), ReadyTCP(ns, "127.0.0.1:80"))
		pid = p.Cmd.Process.Pid
	})
	if t.Failed() || name == "" {
		return
	}
	if processAlive(pid) {
		t.Errorf("process %d still runs after its test", pid)
	}
	if _, err := os.Stat(filepath.Join("/var/run/netns", name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s still exists (%v)", name, err)
	}
	if _, err := os.Stat(etc); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists (%v)", etc, err)
	}
}

// TestProcessStop checks Stop and Kill: the process is gone when they return, its port is
// closed, and a second call (and the cleanup's) does nothing.
func TestProcessStop(t *testing.T) {
	ns := NewNetns(t)
	for _, tc := range []struct {
		name string
		end  func(*Process)
	}{
		// a graceful stop, as before a restart.
		{"stop", (*Process).Stop},
		// a crash, as in a kill -9 test.
		{"kill", (*Process).Kill},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := StartProcess(t, helperCommand(ns, "http-server", "CROWD_E2E_ADDR=127.0.0.1:80"), ReadyTCP(ns, "127.0.0.1:80"))
			tc.end(p)
			if exited, _ := p.Exited(); !exited {
				t.Fatalf("%s returned before the process exited", tc.name)
			}
			if err := ReadyTCP(ns, "127.0.0.1:80")(context.Background(), p); err == nil {
				t.Errorf("port still open after %s", tc.name)
			}
			tc.end(p)
			p.Stop()
		})
	}
}

// ---------------------------------------------------------------------------------------------
// The test peers themselves: each verifier accepts a correct draft-cavage signature and rejects
// broken ones, and the Fedify peer serves, resolves, follows and counts.

// signedRequest is the stdin shape of testpeers/verify.mjs and verify_httpsig.py.
type signedRequest struct {
	Method       string            `json:"method"`
	URL          string            `json:"url"`
	Headers      map[string]string `json:"headers"`
	Body         string            `json:"body"`
	PublicKeyPem string            `json:"publicKeyPem"`
}

// signCavage signs a request the way DESIGN.md §4 says, with the standard library only, so the
// verifiers are checked against a signer that shares no code with them.
func signCavage(t *testing.T, key *rsa.PrivateKey, method, rawURL, body string, date time.Time, algorithm string) signedRequest {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"host": u.Host, "date": date.UTC().Format(http.TimeFormat)}
	names := []string{"(request-target)", "host", "date"}
	if method == "POST" {
		sum := sha256.Sum256([]byte(body))
		h["digest"] = "SHA-256=" + base64.StdEncoding.EncodeToString(sum[:])
		h["content-type"] = "application/activity+json"
		names = append(names, "digest", "content-type")
	} else {
		h["accept"] = "application/activity+json"
		names = append(names, "accept")
	}
	var lines []string
	for _, n := range names {
		if n == "(request-target)" {
			lines = append(lines, n+": "+strings.ToLower(method)+" "+u.RequestURI())
			continue
		}
		lines = append(lines, n+": "+h[n])
	}
	digest := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	h["signature"] = fmt.Sprintf(`keyId="https://flood3.test/users/alice#main-key",algorithm=%q,headers=%q,signature=%q`,
		algorithm, strings.Join(names, " "), base64.StdEncoding.EncodeToString(sig))
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return signedRequest{Method: method, URL: rawURL, Headers: h, Body: body,
		PublicKeyPem: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}
}

// verdict is one line of a verifier's output.
type verdict struct {
	Lib   string  `json:"lib"`
	OK    bool    `json:"ok"`
	Error *string `json:"error"`
}

// runVerifier feeds input to a verifier command and returns its exit code and verdicts.
func runVerifier(t *testing.T, argv []string, input []byte) (int, []verdict) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	var vs []verdict
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var v verdict
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%v printed a line that is not JSON: %q (stderr %s)", argv, line, stderr.String())
		}
		vs = append(vs, v)
	}
	return code, vs
}

func TestVerifiers(t *testing.T) {
	t.Parallel()
	peers := NodePeers(t)
	python := PythonHTTPSig(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const inbox = "https://sut.test/users/load0/inbox"
	const body = `{"@context":"https://www.w3.org/ns/activitystreams","id":"https://flood3.test/users/alice/likes/1","type":"Like","actor":"https://flood3.test/users/alice","object":"https://sut.test/users/load0/posts/1"}`
	now := time.Now()
	for _, tc := range []struct {
		name string
		req  func() any
		// want is the exit code of both verifiers; wantNodeOK lists the node libraries that
		// accept when the whole verdict is a rejection (nil: all reject or all accept).
		want       int
		wantNodeOK []string
	}{
		// a correct signed POST: every library accepts.
		{"post", func() any { return signCavage(t, key, "POST", inbox, body, now, "rsa-sha256") }, 0, nil},
		// a correct signed GET with a query: no Digest needed.
		{"get", func() any {
			return signCavage(t, key, "GET", "https://sut.test/users/load0?page=1", "", now, "rsa-sha256")
		}, 0, nil},
		// the body changed after signing: Digest no longer matches.
		{"tampered body", func() any {
			r := signCavage(t, key, "POST", inbox, body, now, "rsa-sha256")
			r.Body = strings.Replace(r.Body, "Like", "Announce", 1)
			return r
		}, 1, nil},
		// signed with a key other than the one offered.
		{"wrong key", func() any {
			r := signCavage(t, other, "POST", inbox, body, now, "rsa-sha256")
			r.PublicKeyPem = signCavage(t, key, "GET", inbox, "", now, "rsa-sha256").PublicKeyPem
			return r
		}, 1, nil},
		// a Host other than the signed one (a request replayed to another server).
		{"other host", func() any {
			r := signCavage(t, key, "POST", inbox, body, now, "rsa-sha256")
			r.Headers["host"] = "evil.test"
			return r
		}, 1, nil},
		// a Date two hours old, correctly signed: the clock-checking libraries refuse it
		// (python-httpsig and activitypub-http-signatures check no clock).
		{"stale date", func() any { return signCavage(t, key, "POST", inbox, body, now.Add(-2*time.Hour), "rsa-sha256") }, 1, []string{"apsig"}},
		// hs2019 with an RSA key: only Misskey accepts it (DESIGN.md §4: sign rsa-sha256).
		{"hs2019", func() any { return signCavage(t, key, "POST", inbox, body, now, "hs2019") }, 1, []string{"misskey"}},
		// not the input shape at all: a usage error, not a verdict.
		{"garbage", func() any { return json.RawMessage(`{"method": 1}`) }, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input, err := json.Marshal(tc.req())
			if err != nil {
				t.Fatal(err)
			}
			code, vs := runVerifier(t, []string{"node", filepath.Join(peers, "verify.mjs")}, input)
			if code != tc.want {
				t.Errorf("verify.mjs exit %d, want %d: %+v", code, tc.want, vs)
			}
			if tc.want != 2 {
				var libs, okLibs []string
				for _, v := range vs {
					libs = append(libs, v.Lib)
					if v.OK {
						okLibs = append(okLibs, v.Lib)
					}
				}
				if !slices.Equal(libs, []string{"misskey", "joyent", "apsig"}) {
					t.Errorf("verify.mjs libraries = %v", libs)
				}
				wantOK := tc.wantNodeOK
				if tc.want == 0 {
					wantOK = libs
				}
				if !slices.Equal(okLibs, wantOK) {
					t.Errorf("verify.mjs accepted by %v, want %v: %+v", okLibs, wantOK, vs)
				}
			}
			pcode, pvs := runVerifier(t, python, input)
			wantPy := tc.want
			if tc.name == "stale date" {
				wantPy = 0 // httpsig checks no Date: the signature itself is good
			}
			if pcode != wantPy {
				t.Errorf("verify_httpsig.py exit %d, want %d: %+v", pcode, wantPy, pvs)
			}
		})
	}
}

// testCA makes a throwaway CA and a certificate for each host, as PEM files in dir; it returns
// the CA file and a pool that trusts it.
func testCA(t *testing.T, dir string, hosts ...string) (string, *x509.CertPool) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	caFile := filepath.Join(dir, "ca.pem")
	writePEM(t, caFile, "CERTIFICATE", caDER)
	for i, h := range hosts {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: h}, DNSNames: []string{h},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, filepath.Join(dir, h+".pem"), "CERTIFICATE", der)
		kd, _ := x509.MarshalPKCS8PrivateKey(k)
		writePEM(t, filepath.Join(dir, h+"-key.pem"), "PRIVATE KEY", kd)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return caFile, pool
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFedifyPeers runs two Fedify peers in a namespace: lookup.mjs resolves their actors, one
// follows the other through the control API and gets Fedify's signed Accept, and an unsigned
// POST is counted as rejected.
func TestFedifyPeers(t *testing.T) {
	t.Parallel()
	peers := NodePeers(t)
	ns := NewNetns(t)
	ns.WriteEtc(t, "hosts", "127.0.0.1 localhost\n127.0.0.2 sut.test\n127.0.0.3 peer2.test\n")
	dir := t.TempDir()
	caFile, pool := testCA(t, dir, "sut.test", "peer2.test")
	env := append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile)
	start := func(domain, ip, control, personas string) {
		cmd := ns.Command(context.Background(), "node", filepath.Join(peers, "fedify-peer.mjs"),
			"--domain", domain, "--listen", ip+":443", "--control", control,
			"--cert", filepath.Join(dir, domain+".pem"), "--key", filepath.Join(dir, domain+"-key.pem"),
			"--personas", personas, "--count", "2")
		cmd.Env = env
		StartProcess(t, cmd, ReadyOutput(`"ready":true`))
	}
	start("sut.test", "127.0.0.2", "127.0.0.1:9300", "load%d")
	start("peer2.test", "127.0.0.3", "127.0.0.1:9301", "bob%d")

	lookup := func(resources ...string) (int, string) {
		cmd := ns.Command(context.Background(), "node", append([]string{filepath.Join(peers, "lookup.mjs")}, resources...)...)
		cmd.Env = env
		out, err := cmd.Output()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := lookup("acct:load0@sut.test", "load1@sut.test", "https://peer2.test/users/bob0"); code != 0 {
		t.Errorf("lookup.mjs of existing actors: exit %d\n%s", code, out)
	} else if strings.Count(out, `"selfMatches":true`) != 3 || strings.Count(out, `"ownerMatches":true`) != 3 {
		t.Errorf("lookup.mjs: want 3 self and owner matches:\n%s", out)
	}
	if code, out := lookup("acct:nobody@sut.test"); code != 1 {
		t.Errorf("lookup.mjs of a missing actor: exit %d, want 1\n%s", code, out)
	}

	ctl := ns.HTTPClient(nil, nil)
	call := func(method, u string, in any, out any) {
		t.Helper()
		var body io.Reader
		if in != nil {
			b, _ := json.Marshal(in)
			body = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, u, body)
		resp, err := ctl.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, u, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, u, resp.StatusCode, raw)
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatalf("%s %s: %v in %s", method, u, err, raw)
			}
		}
	}
	call("POST", "http://127.0.0.1:9301/follow", map[string]string{"from": "bob0", "to": "acct:load0@sut.test"}, nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var following []struct{ Actor, State, Error string }
		call("GET", "http://127.0.0.1:9301/following?persona=bob0", nil, &following)
		if len(following) == 1 && following[0].State == "accepted" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob0's follow of load0 not accepted: %+v", following)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// An unsigned POST to the shared inbox: Fedify answers 401, the peer counts it.
	web := ns.HTTPClient(map[string]string{"sut.test": "127.0.0.2"}, &tls.Config{RootCAs: pool})
	resp, err := web.Post("https://sut.test/inbox", "application/activity+json", strings.NewReader(
		`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://peer2.test/likes/1","type":"Like","actor":"https://peer2.test/users/bob0","object":"https://sut.test/users/load0/posts/1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned POST: %d, want 401", resp.StatusCode)
	}
	var stats struct {
		Verified, Rejected map[string]int
		Received           []string
	}
	call("GET", "http://127.0.0.1:9300/stats", nil, &stats)
	if stats.Verified["Follow"] != 1 || stats.Rejected["Like"] != 1 || len(stats.Received) != 1 {
		t.Errorf("sut.test stats = %+v, want one verified Follow and one rejected Like", stats)
	}
	var followers []struct{ Actor string }
	call("GET", "http://127.0.0.1:9300/followers?persona=load0", nil, &followers)
	if len(followers) != 1 || followers[0].Actor != "https://peer2.test/users/bob0" {
		t.Errorf("load0 followers = %+v", followers)
	}
}
