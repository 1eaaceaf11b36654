package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/internal/loopback"
)

// following is the state of from's follow of to in the crowd's graph, ""
// when there is none.
func following(c *testCrowd, from, to string) string {
	fi, err := c.inbox.Follows(from)
	if err != nil || len(fi) != 1 {
		return ""
	}
	for _, r := range fi[0].Following {
		if r.Remote == to {
			return r.State
		}
	}
	return ""
}

// TestSendFollowBetweenCrowdActors is the manual debugging loop on the
// crowd itself: alice@flood1.test follows bob@flood2.test through the
// admin API; bob's inbox verifies the signed Follow and answers 202, his
// signed Accept comes back to alice, and the follow is accepted on both
// sides. Then an Undo removes it.
func TestSendFollowBetweenCrowdActors(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	const alice, bob = "https://flood1.test/users/alice", "https://flood2.test/users/bob"

	code, out, errOut := runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Follow", "--to", bob)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"Follow from alice@flood1.test to " + bob,       // what was asked
		"POST https://flood2.test/users/bob/inbox",      // where it went
		`"type": "Follow"`,                              // the activity, pretty-printed
		`"actor": "https://flood1.test/users/alice"`,    // signed by alice
		"→ 202 Accepted",                                // the answer
		`"object": "https://flood2.test/users/bob"`,     // of bob
		"\n  \"id\": \"https://flood1.test/users/alice", // indented
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	waitFor(t, "bob's Accept to reach alice", func() bool { return following(c, alice, bob) == actors.StateAccepted })
	fi, err := c.inbox.Follows(bob)
	if err != nil || len(fi) != 1 || len(fi[0].Followers) != 1 || fi[0].Followers[0].Remote != alice {
		t.Fatalf("bob's followers: %+v %v", fi, err)
	}

	// --json prints the admin API's SendResult.
	code, out, errOut = runCLI(t, "send", "--admin", c.admin, "--from", alice, "--type", "undo", "--to", "acct:bob@flood2.test", "--json")
	if code != 0 {
		t.Fatalf("undo: exit %d\n%s\n%s", code, out, errOut)
	}
	var res adminapi.SendResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output is not a SendResult: %v\n%s", err, out)
	}
	var act struct{ Type, Actor string }
	json.Unmarshal(res.Activity, &act)
	if res.Status != 202 || res.Inbox != "https://flood2.test/users/bob/inbox" || act.Type != "Undo" || act.Actor != alice {
		t.Errorf("undo result: status %d, inbox %s, activity %s", res.Status, res.Inbox, res.Activity)
	}
	waitFor(t, "the Undo to remove the follow", func() bool {
		fi, _ := c.inbox.Follows(bob)
		return following(c, alice, bob) == "" && len(fi) == 1 && len(fi[0].Followers) == 0
	})
}

// TestSendReportsTheTargetsRefusal: a target that answers 401 makes the
// command exit 1, after showing the answer.
func TestSendReportsTheTargetsRefusal(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	remote := newFakeRemote(t, map[string]string{
		"/users/grumpy": `{"@context":"https://www.w3.org/ns/activitystreams","id":"BASE/users/grumpy","type":"Person",
			"preferredUsername":"grumpy","inbox":"BASE/users/grumpy/inbox"}`,
	}, "", 401)
	code, out, errOut := runCLI(t, "send", "--admin", c.admin, "--from", "bob@flood1.test", "--type", "Create", "--to", remote.url("/users/grumpy"))
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{`"type": "Create"`, "POST " + remote.url("/users/grumpy/inbox"), "→ 401 Unauthorized", "this server does not like you"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "answered HTTP 401") {
		t.Errorf("stderr %q does not say what the target answered", errOut)
	}
}

func TestSendRejectsBadInput(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	down := loopback.Free(t)
	bob := "https://flood2.test/users/bob"
	for _, tc := range []struct {
		name string
		args []string
		code int
		say  string // stderr must name this
	}{
		// Every mistake on the command line is a usage error (2) naming its flag.
		{"no --from", []string{"--type", "Follow", "--to", bob}, 2, "--from"},
		{"--from not an account", []string{"--from", "alice", "--type", "Follow", "--to", bob}, 2, "--from"},
		{"no --type", []string{"--from", "alice@flood1.test", "--to", bob}, 2, "--type"},
		{"unsupported --type", []string{"--from", "alice@flood1.test", "--type", "Announce", "--to", bob}, 2, "--type"},
		{"no --to", []string{"--from", "alice@flood1.test", "--type", "Follow"}, 2, "--to"},
		{"--to not an account", []string{"--from", "alice@flood1.test", "--type", "Follow", "--to", "bob"}, 2, "--to"},
		{"--to with another scheme", []string{"--from", "alice@flood1.test", "--type", "Follow", "--to", "ftp://flood2.test/bob"}, 2, "--to"},
		{"Like without --object", []string{"--from", "alice@flood1.test", "--type", "Like", "--to", bob}, 2, "--object"},
		{"Like of a non-URL", []string{"--from", "alice@flood1.test", "--type", "Like", "--to", bob, "--object", "note 5"}, 2, "--object"},
		{"Create of non-JSON", []string{"--from", "alice@flood1.test", "--type", "Create", "--to", bob, "--object", "hello"}, 2, "--object"},
		{"--object on a Follow", []string{"--from", "alice@flood1.test", "--type", "Follow", "--to", bob, "--object", "https://x.test/1"}, 2, "--object"},
		{"--inbox not a URL", []string{"--from", "alice@flood1.test", "--type", "Follow", "--to", bob, "--inbox", "inbox"}, 2, "--inbox"},
		{"a positional argument", []string{"--from", "alice@flood1.test", "--type", "Follow", "--to", bob, "now"}, 2, "no arguments"},
		{"--admin without port", []string{"--admin", "localhost", "--from", "alice@flood1.test", "--type", "Follow", "--to", bob}, 2, "--admin"},
		// The crowd knows no such sender: still the command line's mistake.
		{"unknown crowd actor", []string{"--from", "zed@flood1.test", "--type", "Follow", "--to", bob}, 2, "--from"},
		// Nothing is wrong with the command, but there is no crowd to ask (1).
		{"no crowd at --admin", []string{"--admin", down, "--from", "alice@flood1.test", "--type", "Follow", "--to", bob}, 1,
			"no crowd serve answers at " + down + " (--admin): start one with `crowd serve`"},
		// An Undo with nothing to undo: the crowd refuses, the command fails (1).
		{"undo without a follow", []string{"--from", "alice@flood1.test", "--type", "Undo", "--to", bob}, 1, "no Follow to undo"},
		// A target that does not exist: the crowd could not resolve it (1).
		{"unknown crowd target", []string{"--from", "alice@flood1.test", "--type", "Follow", "--to", "acct:zed@flood2.test"}, 1, "could not reach the target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"send"}, tc.args...)
			if !strings.Contains(strings.Join(tc.args, " "), "--admin") {
				args = append(args, "--admin", c.admin)
			}
			code, out, errOut := runCLI(t, args...)
			if code != tc.code || !strings.Contains(errOut, tc.say) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q (stdout %q)", code, errOut, tc.code, tc.say, out)
			}
		})
	}
}

// TestSendRefusesAPublicTargetBeforeAnyDial: as a flood, crowd send only
// reaches loopback and private networks unless --allow-public-target; the
// refusal (exit 2, naming the flag) comes before any connection is tried.
// (That the flag lets the send through is the inbox's test, on a fake
// network: no test sends to a public address.)
func TestSendRefusesAPublicTargetBeforeAnyDial(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	code, out, errOut := runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Follow", "--to", "acct:x@192.0.2.1")
	if code != 2 || !strings.Contains(errOut, "--allow-public-target") || !strings.Contains(errOut, "192.0.2.1") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming the address and --allow-public-target\nstdout:\n%s", code, errOut, out)
	}
	if d := c.dials.Dials(); len(d) != 0 {
		t.Errorf("the crowd dialed %v for a refused target", d)
	}
	if n := len(c.inbox.Log().Latest(0, inbox.Filter{})); n != 0 {
		t.Errorf("%d activities logged for a refused send", n)
	}

}

// TestAdminAPIRefusesWebPages: over a real listener, a web page's
// cross-origin "simple" POST to /api/send is refused (403) and sends
// nothing, and a rebound name (Host: evil.example) gets 421 on every route
// the admin serves; the CLI's own requests still go through.
func TestAdminAPIRefusesWebPages(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	send := `{"from":"alice@flood1.test","type":"Follow","to":"https://flood2.test/users/bob"}`
	do := func(method, path, host string, header map[string]string) (int, string) {
		req, err := http.NewRequest(method, "http://"+c.admin+path, strings.NewReader(send))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096)) // the stream route: its first bytes are enough
		return resp.StatusCode, string(b)
	}
	for _, h := range []map[string]string{
		{"Content-Type": "text/plain", "Origin": "http://evil.example"},       // a form-less fetch from a page
		{"Content-Type": "application/json", "Origin": "http://evil.example"}, // JSON from a page (its preflight is never answered)
	} {
		if code, body := do("POST", "/api/send", c.admin, h); code != http.StatusForbidden {
			t.Errorf("POST /api/send %v: %d %s, want 403", h, code, body)
		}
	}
	if code, body := do("POST", "/api/send", c.admin, map[string]string{"Content-Type": "text/plain"}); code != http.StatusForbidden {
		t.Errorf("POST /api/send as text/plain: %d %s, want 403", code, body)
	}
	if n := len(c.inbox.Log().Latest(0, inbox.Filter{})); n != 0 {
		t.Errorf("%d activities logged after refused sends", n)
	}
	for _, route := range c.p.AdminRoutes() {
		method, path, _ := strings.Cut(route, " ")
		if code, body := do(method, path, "evil.example:9180", map[string]string{"Content-Type": "application/json"}); code != http.StatusMisdirectedRequest {
			t.Errorf("%s with Host evil.example: %d %s, want 421", route, code, body)
		}
	}
	if n := len(c.inbox.Log().Latest(0, inbox.Filter{})); n != 0 {
		t.Errorf("%d activities logged after requests for another host", n)
	}
	// The CLI's client: JSON, the admin's own host.
	if code, out, errOut := runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Follow", "--to", "https://flood2.test/users/bob"); code != 0 {
		t.Errorf("crowd send: exit %d\n%s\n%s", code, out, errOut)
	}
}
