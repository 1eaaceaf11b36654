package e2e

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/originaddr"
	"github.com/crowdfed/crowd/signing"
)

// The two namespaces of these tests: the crowd's (the flood runs there too) and the SUT's, two
// machines on one link, 10.250.0.0/24. The origins live on 10.251.0.0/16, made local to the
// crowd's namespace by one route ("ip route add local 10.251.0.0/16 dev lo": every address of
// the block is the machine's own, to listen and to send from, with no address added) and routed
// to it by the SUT's namespace, as a compose network or a router would.
const (
	crowdLinkIP = "10.250.0.1"
	addrSUTIP   = "10.250.0.2"
	originRange = "10.251.0.0/16"
)

// seedKeys writes one fixture key as every key of a world of origins × 1 actor (alice) before
// its first start, so that a thousand-origin world starts in seconds instead of making 2 000
// RSA keys. The SUT cannot tell actors that share a key apart; these tests only look at where
// requests come from.
func seedKeys(t *testing.T, state string, origins int) {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(ModuleRoot(t), "actors", "testdata", "keys", "flood1.test", "alice.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= origins; k++ {
		host := fmt.Sprintf("flood%d.test", k)
		dir := filepath.Join(state, "keys", host)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"alice", host} {
			if err := os.WriteFile(filepath.Join(dir, name+".pem"), pem, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// issueSUTCert makes the crowd's CA in state (if it has none) and a certificate for sut.test from
// it, and returns the folder of sut.test.crt and sut.test.key.
func issueSUTCert(t *testing.T, state string) string {
	t.Helper()
	certs := t.TempDir()
	if out, err := exec.Command(BuildCrowd(t), "ca", "issue", "--state", state, "--out", certs, "sut.test").CombinedOutput(); err != nil {
		t.Fatalf("crowd ca issue: %v\n%s", err, out)
	}
	return certs
}

// addrWorld is a crowd of many origins and the Go test SUT, each in its own namespace.
type addrWorld struct {
	ns      *Netns // the crowd's
	sutNS   *Netns
	top     *testing.T // the test the crowd process belongs to
	state   string
	origins int
	sut     *addrSUT
	crowd   *Process
	pool    *x509.CertPool
}

func startAddrWorld(t *testing.T, origins int) *addrWorld {
	t.Helper()
	ns, sutNS := NewNetns(t), NewNetns(t)
	ns.Link(t, sutNS, crowdLinkIP+"/24", addrSUTIP+"/24")
	ns.Run(t, "ip", "route", "add", "local", originRange, "dev", "lo")
	sutNS.Run(t, "ip", "route", "add", originRange, "via", crowdLinkIP)
	w := &addrWorld{ns: ns, sutNS: sutNS, top: t, state: t.TempDir(), origins: origins}
	certs := issueSUTCert(t, w.state)
	ca, err := os.ReadFile(filepath.Join(w.state, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	w.pool = x509.NewCertPool()
	w.pool.AppendCertsFromPEM(ca)
	seedKeys(t, w.state, origins)
	w.sut = startAddrSUT(t, sutNS, addrSUTIP, certs)
	return w
}

// serve (re)starts the crowd with --advertise advertise, listening on the wildcard address so
// that every origin's address reaches it. It runs until the next serve or the end of the whole
// test (not of a subtest).
func (w *addrWorld) serve(advertise string) {
	w.top.Helper()
	if w.crowd != nil {
		w.crowd.Stop()
	}
	w.crowd = crowdServeArgs(w.top, w.ns, "serve", "--state", w.state, "--origins", fmt.Sprint(w.origins), "--actors", "1",
		"--https", ":443", "--http", "", "--dns", "127.0.0.1:53", "--admin", "127.0.0.1:9180",
		"--advertise", advertise, "--dns-record", "sut.test="+addrSUTIP, "--dns-upstream", "127.0.0.1:1", "--log-format", "json")
}

// flood runs `crowd flood` attached to the crowd against load0@sut.test and returns its output.
func (w *addrWorld) flood(t *testing.T, args ...string) string {
	t.Helper()
	out := t.TempDir()
	args = append([]string{"flood", "--personas", "load%d@sut.test", "--count", "1", "--admin", "127.0.0.1:9180",
		"--state", w.state, "--out", out, "--timeout", "30s", "--log-format", "json"}, args...)
	b, err := w.ns.Command(context.Background(), BuildCrowd(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("crowd flood: %v\n%s", err, b)
	}
	return string(b)
}

func (w *addrWorld) plan(t *testing.T, advertise string) *originaddr.Plan {
	t.Helper()
	r, err := originaddr.ParseRange(advertise)
	if err != nil {
		t.Fatal(err)
	}
	p, err := originaddr.NewPlan(r, "flood%d.test", w.origins, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkFromSigner fails t for every request that did not come from its signing origin's own
// address, and returns the distinct addresses seen.
func checkFromSigner(t *testing.T, plan *originaddr.Plan, reqs []sutRequest) map[string]int {
	t.Helper()
	seen := map[string]int{}
	wrong := 0
	for _, r := range reqs {
		seen[r.Remote]++
		addrs := plan.HostAddrs(r.Signer)
		if len(addrs) == 0 || addrs[0].String() != r.Remote {
			if wrong++; wrong <= 5 {
				t.Errorf("%s %s signed by %q came from %s, not from its origin's address %v", r.Method, r.Path, r.Signer, r.Remote, addrs)
			}
		}
	}
	if wrong > 5 {
		t.Errorf("… %d requests in all came from another address than their origin's", wrong)
	}
	return seen
}

// TestOriginsSendFromTheirOwnAddresses runs a 1 000-origin crowd on 10.251.0.0/16, and a Go test
// SUT that logs remote addresses in a namespace of its own: a flood of Follows (one from each origin: a Follow goes
// only from a sender that does not follow the persona yet) arrives from 1 000 distinct source
// addresses, each request from its signing origin's own; a per-address limit answers 429 to the
// same create flood from one shared address and not when it is spread over the origins'
// addresses; and the crowd's own signed GET and Accept leave from the origin's address too.
func TestOriginsSendFromTheirOwnAddresses(t *testing.T) {
	t.Parallel()
	const origins = 1000
	w := startAddrWorld(t, origins)
	plan := w.plan(t, originRange)

	t.Run("a thousand origins, a thousand source addresses", func(t *testing.T) {
		w.serve(originRange)
		w.sut.reset(0, 0)
		// Signed as sent (jit), so the draws leave in order: a pipeline's signers could send the
		// draw after the last free sender's (a Follow diverted to a Create) before it.
		w.flood(t, "--mix", "follow=1", "--signing", "jit", "--rate", "100", "--seconds", "0", "--max-sends", fmt.Sprint(origins))
		posts := w.sut.received(isPost)
		seen := checkFromSigner(t, plan, posts)
		t.Logf("%d Follows from %d distinct addresses", len(posts), len(seen))
		if len(posts) != origins || len(seen) != origins {
			t.Errorf("the SUT received %d Follows from %d distinct addresses, want %d from %d", len(posts), len(seen), origins, origins)
		}
		// Discovery's signed GETs too leave from their signer's origin's address (persona
		// discovery signs at least the actor fetch of load0).
		gets := w.sut.received(func(r sutRequest) bool { return r.Method == http.MethodGet && r.Signer != "" })
		if len(gets) == 0 {
			t.Error("the SUT received no signed GET: persona discovery did not sign its fetches")
		}
		checkFromSigner(t, plan, gets)
	})

	// The same flood twice, at the same total rate, against a limit of 40 requests per minute
	// per address: from one address most are refused, from a thousand none.
	const limit, sends = 40, 300
	floodArgs := []string{"--mix", "create=1", "--rate", "60", "--seconds", "0", "--max-sends", fmt.Sprint(sends)}
	t.Run("a per-address limit refuses one address", func(t *testing.T) {
		w.serve(crowdLinkIP)
		w.sut.reset(limit, time.Minute)
		out := w.flood(t, floodArgs...)
		posts := w.sut.received(isPost)
		refused, from := 0, map[string]bool{}
		for _, r := range posts {
			from[r.Remote] = true
			if r.Status == http.StatusTooManyRequests {
				refused++
			}
		}
		t.Logf("%d Creates from %d address(es), %d answered 429", len(posts), len(from), refused)
		if len(posts) != sends || len(from) != 1 || refused != sends-limit {
			t.Errorf("from one address: %d Creates from %v, %d refused; want %d from one address, %d refused\n%s",
				len(posts), from, refused, sends, sends-limit, out)
		}
	})
	t.Run("the same flood over the origins' addresses is not refused", func(t *testing.T) {
		w.serve(originRange)
		w.sut.reset(limit, time.Minute)
		out := w.flood(t, floodArgs...)
		posts := w.sut.received(isPost)
		seen := checkFromSigner(t, plan, posts)
		refused := 0
		for _, r := range posts {
			if r.Status == http.StatusTooManyRequests {
				refused++
			}
		}
		t.Logf("%d Creates from %d addresses, %d answered 429", len(posts), len(seen), refused)
		if len(posts) != sends || refused != 0 || len(seen) < sends/2 {
			t.Errorf("spread: %d Creates from %d addresses, %d refused; want %d, none refused\n%s", len(posts), len(seen), refused, sends, out)
		}
	})

	t.Run("the crowd's signed GET and Accept leave from the origin's address", func(t *testing.T) {
		w.sut.reset(0, 0)
		const k = 777
		host := plan.Host(k)
		addr := plan.Addrs(k)[0].String()
		follow, _ := json.Marshal(map[string]any{"@context": "https://www.w3.org/ns/activitystreams",
			"id": sutBase + "/follows/addr-test", "type": "Follow", "actor": sutBase + "/users/load0",
			"object": "https://" + host + "/users/alice"})
		req, _ := http.NewRequest(http.MethodPost, "https://"+host+"/users/alice/inbox", bytes.NewReader(follow))
		req.Header.Set("Content-Type", "application/activity+json")
		if err := signing.NewSigner(signing.SignerOptions{}).SignPost(req, follow, w.sut.key.id, w.sut.key.signer.(crypto.Signer)); err != nil {
			t.Fatal(err)
		}
		// Sent from the SUT's side to the origin's own address: the wildcard listener receives it.
		client := w.sutNS.HTTPClient(map[string]string{host: addr}, &tls.Config{RootCAs: w.pool})
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("Follow of alice@%s: %d", host, resp.StatusCode)
		}
		eventually(t, 20*time.Second, "the Accept at the SUT", func() bool {
			return len(w.sut.received(func(r sutRequest) bool { return r.Type == "Accept" })) == 1
		})
		got := w.sut.received(func(r sutRequest) bool { return r.Signer != "" })
		var kinds []string
		for _, r := range got {
			kinds = append(kinds, r.Method+" "+r.Path+" from "+r.Remote)
			if r.Signer != host || r.Remote != addr {
				t.Errorf("%s %s signed by %s came from %s; want signed by %s from %s", r.Method, r.Path, r.Signer, r.Remote, host, addr)
			}
		}
		if !strings.Contains(strings.Join(kinds, "\n"), "GET /users/load0 from "+addr) {
			t.Errorf("no signed GET of the follower's key from %s: %v", addr, kinds)
		}
	})
}
