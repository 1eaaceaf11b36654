package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/crowdfed/crowd/internal/originaddr"
)

// largeWorldOrigins is the size of TestFedifyResolvesAcrossALargeWorld's world:
// CROWD_E2E_LARGE_ORIGINS, default 10 000 (actors are computed on demand and certificates made
// per SNI name on first use, so the world starts in well under a second once its keys exist).
func largeWorldOrigins(t *testing.T) int {
	t.Helper()
	v := os.Getenv("CROWD_E2E_LARGE_ORIGINS")
	if v == "" {
		return 10000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 || n > 10000 {
		t.Fatalf("CROWD_E2E_LARGE_ORIGINS=%q: want a number from 100 to 10000", v)
	}
	return n
}

// warmState starts the crowd with args once, with a bound of its own (minutes, for a first
// start that makes certificates), and stops it once it serves: the test's own start is then a
// restart with persisted state, within ReadyTimeout.
func warmState(t *testing.T, ns *Netns, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := ns.Command(ctx, BuildCrowd(t), args...)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	served := false
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if strings.Contains(sc.Text(), `"crowd serving"`) {
			served = true
			break
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if !served {
		t.Fatalf("the crowd's first start did not serve within 5 minutes")
	}
}

// TestFedifyResolvesAcrossALargeWorld serves a world of many origins (largeWorldOrigins × 1
// actor), each at its own address of 127.1.0.0/16, and has Fedify 1.5.9 (testpeers/lookup.mjs)
// resolve a sample of 100 actors spread across the range by name, through the crowd's DNS (the
// namespace's resolv.conf) and TLS: each checked for the WebFinger round trip and the key's
// owner. The crowd's DNS answers each sampled origin with its own address.
func TestFedifyResolvesAcrossALargeWorld(t *testing.T) {
	t.Parallel()
	origins := largeWorldOrigins(t)
	peers := NodePeers(t)
	ns := NewNetns(t)
	state := t.TempDir()
	seedKeys(t, state, origins)
	// A key per actor (--key-pool ≥ the actors, instance actors included), so the seeded key
	// files are the world's and no pool has to be made.
	args := []string{"serve", "--state", state, "--origins", fmt.Sprint(origins), "--actors", "1",
		"--key-pool", fmt.Sprint(2 * origins), "--https", ":443", "--http", "", "--dns", "127.0.0.1:53", "--admin", "127.0.0.1:9180",
		"--advertise", "127.1.0.0/16", "--dns-upstream", "127.0.0.1:1", "--log-format", "json"}
	warmState(t, ns, args...)
	started := time.Now()
	crowdServeArgs(t, ns, args...)
	t.Logf("%d origins served %v after a restart", origins, time.Since(started).Round(time.Millisecond))

	rng, _ := originaddr.ParseRange("127.1.0.0/16")
	plan, err := originaddr.NewPlan(rng, "flood%d.test", origins, 0)
	if err != nil {
		t.Fatal(err)
	}
	var resources []string
	want := map[string]string{} // resource → the actor id it must resolve to
	for i := range 100 {
		k := 1 + i*(origins-1)/99
		host := plan.Host(k)
		if got, wantAddr := resolveA(t, ns, "127.0.0.1:53", host), plan.Addrs(k)[0].String(); got != wantAddr {
			t.Errorf("the crowd's DNS answers %s with %q, want its own address %s", host, got, wantAddr)
		}
		r := "acct:alice@" + host
		resources = append(resources, r)
		want[r] = "https://" + host + "/users/alice"
	}
	cmd := ns.Command(context.Background(), "node", append([]string{filepath.Join(peers, "lookup.mjs")}, resources...)...)
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+filepath.Join(state, "tls", "ca.pem"))
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("lookup.mjs: %v", err)
	}
	ok := 0
	for line := range strings.Lines(string(out)) {
		var r struct {
			Resource    string `json:"resource"`
			Error       string `json:"error"`
			ActorID     string `json:"actorId"`
			OK          bool   `json:"ok"`
			SelfMatches bool   `json:"selfMatches"`
			OwnerMatch  bool   `json:"ownerMatches"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("lookup.mjs printed %q", line)
		}
		if !r.OK || !r.SelfMatches || !r.OwnerMatch || r.ActorID != want[r.Resource] {
			t.Errorf("Fedify's lookup of %s: ok=%v self=%v owner=%v actor %q (want %q) %s", r.Resource, r.OK,
				r.SelfMatches, r.OwnerMatch, r.ActorID, want[r.Resource], r.Error)
			continue
		}
		ok++
	}
	t.Logf("Fedify resolved %d of %d sampled actors across %d origins", ok, len(resources), origins)
	if ok != len(resources) {
		t.Errorf("Fedify resolved %d of %d actors", ok, len(resources))
	}
}

// resolveA asks the DNS at server (ip:port, reached from ns) for host's A record.
func resolveA(t *testing.T, ns *Netns, server, host string) string {
	t.Helper()
	c, err := ns.Dial(context.Background(), "udp", server)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	co := &dns.Conn{Conn: c}
	m := new(dns.Msg)
	m.SetQuestion(host+".", dns.TypeA)
	if err := co.WriteMsg(m); err != nil {
		t.Fatal(err)
	}
	in, err := co.ReadMsg()
	if err != nil {
		t.Fatalf("DNS A %s: %v", host, err)
	}
	if len(in.Answer) != 1 {
		return fmt.Sprint(in.Answer)
	}
	a, _ := in.Answer[0].(*dns.A)
	if a == nil {
		return in.Answer[0].String()
	}
	return a.A.String()
}
