package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/internal/loopback"
)

// TestLargeWorld: `crowd serve --origins 10000 --actors 100` seen by real
// peers: dig resolves an origin far along through the crowd's DNS, curl
// (OpenSSL) completes a handshake for its name, whose certificate is made
// on demand and verifies under the crowd's CA, and reads its WebFinger
// round trip and actor document; a name outside the world gets no
// certificate; /api/world pages the million actors.
func TestLargeWorld(t *testing.T) {
	t.Parallel()
	RequireTools(t, "curl", "dig")
	bin := BuildCrowd(t)
	state := t.TempDir()
	https, dnsAddr, admin := loopback.Free(t), loopback.FreeTCPAndUDP(t), loopback.Free(t)
	p := StartProcess(t, exec.Command(bin, "serve", "--state", state, "--origins", "10000", "--actors", "100", "--key-pool", "4",
		"--https", https, "--http", "", "--dns", dnsAddr, "--admin", admin, "--dns-upstream", "", "--log-format", "json"),
		readyAdmin(admin))
	if out := p.Output(); !strings.Contains(out, "1010000 actors share a pool of 4 keys") {
		t.Errorf("the key choice is not logged:\n%s", out)
	}
	_, dnsPort, _ := strings.Cut(dnsAddr, ":")
	if out, err := exec.Command("dig", "@127.0.0.1", "-p", dnsPort, "+short", "flood9999.test", "A").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "127.0.0.1" {
		t.Fatalf("dig flood9999.test: %v %q", err, out)
	}
	_, port, _ := strings.Cut(https, ":")
	curl := func(host, path string) ([]byte, error) {
		return exec.Command("curl", "-sS", "--fail", "--cacert", filepath.Join(state, "tls", "ca.pem"),
			"--resolve", host+":"+port+":127.0.0.1", "-H", "Accept: application/activity+json",
			"https://"+host+":"+port+path).CombinedOutput()
	}
	out, err := curl("flood9999.test", "/.well-known/webfinger?resource=acct:victor3@flood9999.test")
	if err != nil {
		t.Fatalf("WebFinger over TLS: %v\n%s", err, out)
	}
	var jrd struct {
		Links []struct{ Rel, Href string }
	}
	if err := json.Unmarshal(out, &jrd); err != nil {
		t.Fatalf("JRD %s: %v", out, err)
	}
	self := ""
	for _, l := range jrd.Links {
		if l.Rel == "self" {
			self = l.Href
		}
	}
	if self != "https://flood9999.test/users/victor3" {
		t.Fatalf("self link %q", self)
	}
	out, err = curl("flood9999.test", "/users/victor3")
	if err != nil {
		t.Fatalf("actor over TLS: %v\n%s", err, out)
	}
	var doc struct {
		ID        string
		PublicKey struct{ ID, Owner, PublicKeyPem string }
	}
	if err := json.Unmarshal(out, &doc); err != nil || doc.ID != self || doc.PublicKey.Owner != self ||
		doc.PublicKey.ID != self+"#main-key" || !strings.Contains(doc.PublicKey.PublicKeyPem, "BEGIN PUBLIC KEY") {
		t.Fatalf("actor document %s (%v)", out, err)
	}
	out, err = curl("flood10001.test", "/users/alice")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 35 { // 35: the TLS handshake failed
		t.Fatalf("a name outside the world: %v\n%s", err, out)
	}
	out, err = exec.Command("curl", "-sS", "--fail", "http://"+admin+"/api/world?offset=9999&limit=5").CombinedOutput()
	var info struct {
		Origins []struct{ Host string }
	}
	if err != nil || json.Unmarshal(out, &info) != nil || len(info.Origins) != 1 || info.Origins[0].Host != "flood10000.test" ||
		!strings.Contains(string(out), `"actors_per_origin": 100`) {
		t.Fatalf("/api/world's last page: %v\n%.500s", err, out)
	}
}
