package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// federation is the crowd and a real Fedify 1.5.9 server side by side in
// one network namespace: the crowd on 127.0.0.1 (its DNS names both), the
// SUT "sut.test" on 127.0.0.2:443 with a certificate from the crowd's CA.
type federation struct {
	ns      *Netns
	state   string
	crowd   *Process
	fedify  *Process
	web     *http.Client // the namespace's HTTPS, trusting the crowd's CA
	control *http.Client // plain HTTP to loopback ports in the namespace
	serve   []string     // more flags of crowd serve, at every (re)start
}

const (
	sutIP       = "127.0.0.2"
	fedifyCtl   = "http://127.0.0.1:9300"
	crowdAdmin  = "http://127.0.0.1:9180"
	sutPersonas = "load%d"
)

// startFederation starts the crowd, then Fedify with personas load0..n-1.
func startFederation(t *testing.T, personas int) *federation {
	t.Helper()
	return startFederationWith(t, personas)
}

// startFederationWith is startFederation with more flags for Fedify.
func startFederationWith(t *testing.T, personas int, peerArgs ...string) *federation {
	t.Helper()
	return startFederationServing(t, personas, nil, peerArgs...)
}

// startFederationServing is startFederationWith with more flags for crowd
// serve (such as a smaller world), kept for its restarts.
func startFederationServing(t *testing.T, personas int, serve []string, peerArgs ...string) *federation {
	t.Helper()
	peers := NodePeers(t)
	ns := NewNetns(t)
	f := &federation{ns: ns, state: t.TempDir(), control: ns.HTTPClient(nil, nil), serve: serve}
	certs := t.TempDir()
	if out, err := exec.Command(BuildCrowd(t), "ca", "issue", "--state", f.state, "--out", certs, "sut.test").CombinedOutput(); err != nil {
		t.Fatalf("crowd ca issue: %v\n%s", err, out)
	}
	f.crowd = f.startCrowd(t)
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(f.state, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	resolve := map[string]string{"sut.test": sutIP}
	for i := 1; i <= 4; i++ {
		resolve[fmt.Sprintf("flood%d.test", i)] = "127.0.0.1"
	}
	f.web = ns.HTTPClient(resolve, &tls.Config{RootCAs: pool})

	cmd := ns.Command(context.Background(), "node", filepath.Join(peers, "fedify-peer.mjs"),
		"--domain", "sut.test", "--listen", sutIP+":443", "--control", "127.0.0.1:9300",
		"--cert", filepath.Join(certs, "sut.test.crt"), "--key", filepath.Join(certs, "sut.test.key"),
		"--personas", sutPersonas, "--count", fmt.Sprint(personas))
	cmd.Args = append(cmd.Args, peerArgs...)
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+filepath.Join(f.state, "tls", "ca.pem"))
	f.fedify = StartProcess(t, cmd, ReadyOutput(`"ready":true`))
	return f
}

func (f *federation) startCrowd(t *testing.T) *Process {
	t.Helper()
	return crowdServe(t, f.ns, f.state, append([]string{"--dns-record", "sut.test=" + sutIP, "--dns-upstream", "127.0.0.1:1"}, f.serve...)...)
}

// call sends JSON to a control or admin API and decodes the JSON answer.
func (f *federation) call(t *testing.T, method, url string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.control.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %v in %s", method, url, resp.StatusCode, err, raw)
		}
	}
	return resp.StatusCode
}

// collection fetches every item of an OrderedCollection the crowd serves,
// over HTTPS by name, as a SUT reads it.
func (f *federation) collection(t *testing.T, url string) (total int, items []string) {
	t.Helper()
	get := func(u string, v any) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Accept", "application/activity+json")
		resp, err := f.web.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
		}
	}
	var root struct {
		TotalItems int    `json:"totalItems"`
		First      string `json:"first"`
	}
	get(url, &root)
	for next := root.First; next != ""; {
		var page struct {
			OrderedItems []string `json:"orderedItems"`
			Next         string   `json:"next"`
		}
		get(next, &page)
		items = append(items, page.OrderedItems...)
		next = page.Next
	}
	return root.TotalItems, items
}

// eventually polls cond every 200 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type fedifyFollow struct {
	Actor, State, Error string
}

func (f *federation) fedifyFollowing(t *testing.T, persona string) map[string]string {
	var list []fedifyFollow
	f.call(t, "GET", fedifyCtl+"/following?persona="+persona, nil, &list)
	m := map[string]string{}
	for _, e := range list {
		m[e.Actor] = e.State
	}
	return m
}

// TestFollowsWithRealFedify is the Follow/Accept conversation with a real
// server: Fedify follows crowd actors on three origins and accepts only
// what it verified; Undo removes a follow; the crowd's own Follow gets
// Fedify's Accept; and a kill -9 just after a Follow was answered 202
// loses neither the follow nor its Accept.
func TestFollowsWithRealFedify(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	load0 := "https://sut.test/users/load0"
	targets := []string{"https://flood1.test/users/alice", "https://flood2.test/users/bob", "https://flood3.test/users/carol"}

	for _, to := range targets {
		if code := f.call(t, "POST", fedifyCtl+"/follow", map[string]string{"from": "load0", "to": to}, nil); code != 202 {
			t.Fatalf("Fedify /follow %s: %d", to, code)
		}
	}
	eventually(t, 30*time.Second, "Fedify's three follows accepted", func() bool {
		got := f.fedifyFollowing(t, "load0")
		for _, to := range targets {
			if got[to] != "accepted" {
				return false
			}
		}
		return true
	})
	for _, to := range targets {
		if total, items := f.collection(t, to+"/followers"); total != 1 || !slices.Contains(items, load0) {
			t.Errorf("%s/followers = %d %v, want load0", to, total, items)
		}
	}
	var log []struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
		Actor  string `json:"actor"`
	}
	f.call(t, "GET", crowdAdmin+"/api/activities?type=Follow&direction=in&limit=100", nil, &log)
	verified := 0
	for _, e := range log {
		if e.Status == 202 && e.Actor == load0 {
			verified++
		}
	}
	if verified != 3 {
		t.Errorf("the crowd's log shows %d verified Follows from load0, want 3: %+v", verified, log)
	}

	t.Run("Undo removes the follow", func(t *testing.T) {
		if code := f.call(t, "POST", fedifyCtl+"/undo-follow", map[string]string{"from": "load0", "to": targets[0]}, nil); code != 202 {
			t.Fatalf("undo-follow: %d", code)
		}
		eventually(t, 20*time.Second, "alice's followers empty after the Undo", func() bool {
			total, items := f.collection(t, targets[0]+"/followers")
			return total == 0 && len(items) == 0
		})
		if total, _ := f.collection(t, targets[1]+"/followers"); total != 1 {
			t.Errorf("an Undo of one follow removed another: bob has %d followers", total)
		}
	})

	t.Run("the crowd's Follow gets Fedify's Accept", func(t *testing.T) {
		out := f.ns.Run(t, BuildCrowd(t), "send", "--admin", "127.0.0.1:9180", "--from", "dave@flood1.test",
			"--type", "Follow", "--to", "acct:load1@sut.test")
		if !strings.Contains(out, "202") {
			t.Fatalf("crowd send Follow: %s", out)
		}
		eventually(t, 20*time.Second, "dave's following collection shows load1", func() bool {
			_, items := f.collection(t, "https://flood1.test/users/dave/following")
			return slices.Contains(items, "https://sut.test/users/load1")
		})
		var followers []struct{ Actor string }
		f.call(t, "GET", fedifyCtl+"/followers?persona=load1", nil, &followers)
		if len(followers) != 1 || followers[0].Actor != "https://flood1.test/users/dave" {
			t.Errorf("Fedify's followers of load1: %+v", followers)
		}
	})

	t.Run("kill -9 after the 202 loses neither follow nor Accept", func(t *testing.T) {
		erin := "https://flood2.test/users/erin"
		f.call(t, "POST", fedifyCtl+"/inbox/pause", map[string]int{"status": 503}, nil)
		f.call(t, "POST", fedifyCtl+"/follow", map[string]string{"from": "load2", "to": erin}, nil)
		eventually(t, 20*time.Second, "the crowd has tried the Accept at least once", func() bool {
			var pending []struct {
				Type     string `json:"type"`
				Attempts int    `json:"attempts"`
			}
			f.call(t, "GET", crowdAdmin+"/api/deliveries", nil, &pending)
			return len(pending) == 1 && pending[0].Type == "Accept" && pending[0].Attempts >= 1
		})
		f.crowd.Kill()
		f.call(t, "POST", fedifyCtl+"/inbox/resume", nil, nil)
		if got := f.fedifyFollowing(t, "load2")[erin]; got != "pending" {
			t.Fatalf("before the restart Fedify's follow must still be pending, is %q", got)
		}
		f.crowd = f.startCrowd(t)
		eventually(t, 30*time.Second, "the Accept delivered after the restart", func() bool {
			return f.fedifyFollowing(t, "load2")[erin] == "accepted"
		})
		if _, items := f.collection(t, erin+"/followers"); !slices.Contains(items, "https://sut.test/users/load2") {
			t.Errorf("erin's follower was lost in the crash: %v", items)
		}
	})
}
