package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/internal/loopback"
)

func TestLookup(t *testing.T) {
	c := startTestCrowd(t)
	bad := newFakeRemote(t, map[string]string{
		// Served as text/html, with an id that is not where it was fetched
		// from, no inbox and no key: what a broken SUT might serve.
		"/users/broken": `{"@context":"https://www.w3.org/ns/activitystreams","id":"https://elsewhere.test/users/broken","type":"Person"}`,
	}, "text/html", 202)
	down := loopback.Free(t)
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		stdout  []string // stdout must hold each
		stderr  string   // and stderr this
		noAdmin bool     // the row sets --admin itself
	}{
		// A crowd actor by acct: WebFinger, the document, no problems.
		{"a sound actor", []string{"acct:bob@flood2.test"}, 0, []string{
			"WebFinger acct:bob@flood2.test → https://flood2.test/users/bob",
			"GET https://flood2.test/users/bob → 200 application/activity+json",
			`  "preferredUsername": "bob",`,
			"no problems: a real server would accept this actor"}, "", false},
		// By URL: no WebFinger line, the same document.
		{"by URL", []string{"https://flood1.test/users/alice"}, 0, []string{
			"GET https://flood1.test/users/alice → 200", `"id": "https://flood1.test/users/alice"`}, "", false},
		// A broken document: every problem listed, exit 1.
		{"a broken actor", []string{bad.url("/users/broken")}, 1, []string{
			"problems a real server would object to:",
			`  - Content-Type "text/html" is not application/activity+json`,
			"is not the URL it was fetched from",
			"no inbox",
			"no publicKey"}, "a real server would object to", false},
		// Nothing there: the failed fetch is the problem, exit 1.
		{"an unreachable actor", []string{"http://" + down + "/users/nobody"}, 1, []string{
			"1 problem a real server would object to:", "connection refused"}, "1 problem", false},
		// An unknown crowd account: WebFinger fails, exit 1.
		{"an unknown crowd account", []string{"zed@flood1.test"}, 1, []string{"WebFinger: "}, "1 problem", false},
		// Usage errors (2): no actor, two actors, neither acct nor URL.
		{"no argument", nil, 2, nil, "takes one actor", false},
		{"two arguments", []string{"acct:a@b.test", "acct:c@d.test"}, 2, nil, "takes one actor", false},
		{"not an actor", []string{"bob"}, 2, nil, `"bob"`, false},
		{"another scheme", []string{"ftp://flood1.test/users/bob"}, 2, nil, "ftp://", false},
		// A public host (an IP literal, judged without resolving or sending):
		// refused (2), naming the flag that would allow it.
		{"a public target", []string{"acct:x@192.0.2.1"}, 2, nil, "--allow-public-target", false},
		{"a public actor URL", []string{"https://192.0.2.1/users/x"}, 2, nil, "--allow-public-target", false},
		// No crowd at --admin (1), with what to do about it.
		{"no crowd", []string{"--admin", down, "acct:bob@flood2.test"}, 1, nil,
			"no crowd serve answers at " + down + " (--admin): start one with `crowd serve`", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"lookup"}, tc.args...)
			if !tc.noAdmin {
				args = append(args, "--admin", c.admin)
			}
			code, out, errOut := runCLI(t, args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, tc.code, tc.stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
		})
	}

	t.Run("--json is the admin API's LookupResult", func(t *testing.T) {
		code, out, errOut := runCLI(t, "lookup", "--admin", c.admin, "--json", bad.url("/users/broken"))
		if code != 1 {
			t.Fatalf("exit %d, want 1 (problems)\n%s", code, errOut)
		}
		var res adminapi.LookupResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if res.Status != 200 || len(res.Problems) < 3 || !strings.Contains(string(res.Document), "elsewhere.test") {
			t.Errorf("result %+v", res)
		}
	})

	t.Run("CROWD_ADMIN sets --admin", func(t *testing.T) {
		t.Setenv("CROWD_ADMIN", c.admin)
		if code, _, errOut := runCLI(t, "lookup", "acct:alice@flood1.test"); code != 0 {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
}

// TestPrintLookupResultTellsTheWay: the lines before the document say how
// the actor was found, a WebFinger answer naming another account included.
func TestPrintLookupResultTellsTheWay(t *testing.T) {
	self := func(subject, href string) *apclient.JRD {
		return &apclient.JRD{Subject: subject, Links: []apclient.Link{{Rel: apclient.RelSelf, Type: "application/activity+json", Href: href}}}
	}
	for _, c := range []struct {
		name string
		res  adminapi.LookupResult
		want string
	}{
		// The account's own answer.
		{"direct", adminapi.LookupResult{Resource: "acct:bob@sut.test", WebFinger: self("acct:bob@sut.test", "https://sut.test/users/bob")},
			"WebFinger acct:bob@sut.test → https://sut.test/users/bob\n"},
		// A vanity account: its answer names bob, whose answer has the self link.
		{"asked in turn", adminapi.LookupResult{Resource: "acct:me@vanity.test", WebFinger: self("acct:bob@sut.test", "https://sut.test/users/bob"),
			WebFingerRedirect: self("acct:bob@sut.test", "https://sut.test/users/bob")},
			"WebFinger acct:me@vanity.test → subject acct:bob@sut.test, asked in turn\nWebFinger acct:bob@sut.test → https://sut.test/users/bob\n"},
		// An answer with no subject and no actor.
		{"empty answer", adminapi.LookupResult{Resource: "acct:x@sut.test", WebFinger: &apclient.JRD{}},
			"WebFinger (no subject) → (no ActivityPub self link)\n"},
	} {
		var b strings.Builder
		printLookupResult(&b, &c.res)
		if got, _, _ := strings.Cut(b.String(), "no problems"); got != c.want {
			t.Errorf("%s: printed\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}
