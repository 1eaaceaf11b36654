package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crowdServe starts `crowd serve` inside ns with the standard ports on
// 127.0.0.1 (the resolv.conf of ns names its DNS) and waits until the
// admin API says it is ready.
func crowdServe(t *testing.T, ns *Netns, state string, extra ...string) *Process {
	t.Helper()
	args := append([]string{"serve", "--state", state, "--origins", "4", "--actors", "10",
		"--https", "127.0.0.1:443", "--http", "127.0.0.1:80", "--dns", "127.0.0.1:53",
		"--admin", "127.0.0.1:9180", "--advertise", "127.0.0.1", "--log-format", "json"}, extra...)
	return crowdServeArgs(t, ns, args...)
}

// crowdServeArgs starts the crowd in ns with exactly args (its admin API on 127.0.0.1:9180) and
// waits until it is ready.
func crowdServeArgs(t *testing.T, ns *Netns, args ...string) *Process {
	t.Helper()
	cmd := ns.Command(context.Background(), BuildCrowd(t), args...)
	return StartProcess(t, cmd, func(ctx context.Context, p *Process) error {
		if err := ReadyTCP(ns, "127.0.0.1:9180")(ctx, p); err != nil {
			return err
		}
		resp, err := ns.HTTPClient(nil, nil).Get("http://127.0.0.1:9180/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return nil
	})
}

// worldKeys is what must survive a restart byte for byte: the CA and
// every public key, as served.
func worldKeys(t *testing.T, ns *Netns, state string) string {
	t.Helper()
	client := ns.HTTPClient(nil, nil)
	resp, err := client.Get("http://127.0.0.1:9180/api/world")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var world struct {
		Origins []struct {
			Actors []struct {
				Acct      string `json:"acct"`
				KeySHA256 string `json:"key_sha256"`
			} `json:"actors"`
		} `json:"origins"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&world); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(state, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Write(ca)
	for _, o := range world.Origins {
		for _, a := range o.Actors {
			fmt.Fprintf(&b, "%s %s\n", a.Acct, a.KeySHA256)
		}
	}
	return b.String()
}

// TestServeToRealPeers is the served world as a SUT meets it: inside a
// network namespace whose resolv.conf names the crowd's DNS, curl and dig
// reach it by name, a name outside the zone is forwarded (to a second
// crowd standing in as upstream), and Fedify 1.5.9 resolves every actor
// of two origins over HTTPS trusting the crowd's CA. A restart keeps the
// CA and every public key byte for byte.
func TestServeToRealPeers(t *testing.T) {
	t.Parallel()
	RequireTools(t, "curl", "dig")
	peers := NodePeers(t)
	ns := NewNetns(t)
	state := t.TempDir()

	// The upstream: another crowd on 127.0.0.2 serving another zone.
	upstreamCmd := ns.Command(context.Background(), BuildCrowd(t), "serve", "--state", t.TempDir(),
		"--origins", "1", "--actors", "1", "--domain", "up%d.example", "--https", "", "--http", "",
		"--admin", "", "--dns", "127.0.0.2:53", "--advertise", "127.0.0.2", "--dns-upstream", "127.0.0.2:53")
	StartProcess(t, upstreamCmd, ReadyOutput("crowd serving"))

	crowd := crowdServe(t, ns, state, "--dns-upstream", "127.0.0.2", "--dns-record", "sut.test=127.0.0.9")
	ca := filepath.Join(state, "tls", "ca.pem")

	t.Run("curl gets the JRD whose self href is the actor id", func(t *testing.T) {
		out := ns.Run(t, "curl", "-sS", "--fail", "--cacert", ca, "--resolve", "flood3.test:443:127.0.0.1",
			"https://flood3.test/.well-known/webfinger?resource=acct:carol@flood3.test")
		var jrd struct {
			Subject string `json:"subject"`
			Links   []struct{ Rel, Type, Href string }
		}
		if err := json.Unmarshal([]byte(out), &jrd); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		self := ""
		for _, l := range jrd.Links {
			if l.Rel == "self" {
				self = l.Href
			}
		}
		if jrd.Subject != "acct:carol@flood3.test" || self != "https://flood3.test/users/carol" {
			t.Errorf("JRD %s", out)
		}
	})

	t.Run("the actor document has every field servers check", func(t *testing.T) {
		out := ns.Run(t, "curl", "-sS", "--fail", "--cacert", ca, "-H", "Accept: application/activity+json",
			"https://flood3.test/users/carol")
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		for _, field := range []string{"@context", "id", "type", "preferredUsername", "inbox", "outbox", "followers",
			"following", "endpoints", "publicKey", "manuallyApprovesFollowers", "published", "url"} {
			if _, ok := doc[field]; !ok {
				t.Errorf("actor document lacks %s", field)
			}
		}
		key, _ := doc["publicKey"].(map[string]any)
		if doc["id"] != "https://flood3.test/users/carol" || key["owner"] != doc["id"] || key["id"] != "https://flood3.test/users/carol#main-key" {
			t.Errorf("id/publicKey: %v / %v", doc["id"], key)
		}
	})

	t.Run("dig", func(t *testing.T) {
		for _, c := range []struct{ name, want string }{
			{"flood3.test", "127.0.0.1"}, // an origin answers with --advertise
			{"sut.test", "127.0.0.9"},    // a --dns-record name
			{"up1.example", "127.0.0.2"}, // outside the zone: forwarded to the upstream
		} {
			if got := strings.TrimSpace(ns.Run(t, "dig", "+short", "@127.0.0.1", c.name)); got != c.want {
				t.Errorf("dig %s = %q, want %q", c.name, got, c.want)
			}
		}
		if got := ns.Run(t, "dig", "@127.0.0.1", "nobody.test"); !strings.Contains(got, "NXDOMAIN") {
			t.Errorf("an unknown name in the zone must be NXDOMAIN:\n%s", got)
		}
	})

	t.Run("Fedify resolves every actor of two origins", func(t *testing.T) {
		var resources []string
		for _, origin := range []string{"flood1.test", "flood4.test"} {
			for _, name := range []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"} {
				resources = append(resources, "acct:"+name+"@"+origin)
			}
		}
		cmd := ns.Command(context.Background(), "node", append([]string{filepath.Join(peers, "lookup.mjs")}, resources...)...)
		cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+ca)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("lookup.mjs: %v\n%s", err, out)
		}
		for _, field := range []string{`"ok":true`, `"selfMatches":true`, `"ownerMatches":true`} {
			if n := strings.Count(string(out), field); n != len(resources) {
				t.Errorf("%d of %d resources have %s:\n%s", n, len(resources), field, out)
			}
		}
	})

	before := worldKeys(t, ns, state)
	crowd.Stop()
	crowdServe(t, ns, state, "--dns-upstream", "127.0.0.2")
	if after := worldKeys(t, ns, state); after != before {
		t.Errorf("the CA or a public key changed across a restart:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	resp, err := ns.HTTPClient(nil, nil).Get("http://127.0.0.1:9180/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	onDisk, _ := os.ReadFile(ca)
	if resp.StatusCode != http.StatusOK || string(served) != string(onDisk) {
		t.Errorf("/ca.pem must serve the CA on disk")
	}
}
