package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

// TestSendTamper forges one Create of each kind from alice@flood1.test to
// bob@flood2.test by hand: the crowd's own inbox verifies them, refuses
// every kind but the replay (exit 0, "refused"), and takes the replay (a
// crowd inbox keeps no ids to refuse it by), which proves nothing (a real
// server answers a duplicate 202 too): exit 0, and no "SECURITY".
func TestSendTamper(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	const bob = "https://flood2.test/users/bob"
	for _, tc := range []struct {
		kind    string
		code    int
		verdict string
	}{
		{"body", 0, adminapi.ForgedRefused},            // the Digest is the signed body's
		{"digest-unsigned", 0, adminapi.ForgedRefused}, // a POST signs its Digest
		{"wrong-key", 0, adminapi.ForgedRefused},       // the key's owner is not alice
		{"date", 0, adminapi.ForgedRefused},            // a day old
		{"created", 0, adminapi.ForgedRefused},         // (created) a day old
		{"target", 0, adminapi.ForgedRefused},          // signed for another inbox
		{"unknown-key", 0, adminapi.ForgedRefused},     // a keyId that answers 404
		{"replay", 0, adminapi.ForgedAccepted},         // the crowd's inbox takes a replay: not a finding
	} {
		t.Run(tc.kind, func(t *testing.T) {
			code, out, errOut := runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Create", "--to", bob,
				"--tamper", tc.kind, "--json")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errOut)
			}
			var res adminapi.SendResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if res.Forged == nil || res.Forged.Kind != tc.kind || res.Forged.Verdict != tc.verdict {
				t.Fatalf("forged %+v, status %d body %s", res.Forged, res.Status, res.Body)
			}
			if tc.kind == "replay" && res.Forged.OriginalStatus != 202 {
				t.Fatalf("replay of a request answered %d", res.Forged.OriginalStatus)
			}
		})
	}
	code, out, errOut := runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Create", "--to", bob, "--tamper", "replay")
	if code != 0 || strings.Contains(out+errOut, "SECURITY") || !strings.Contains(out, "replay answered 2xx: not a finding") {
		t.Fatalf("a replay taken: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Create", "--to", bob, "--tamper", "nope")
	if code != 2 || !strings.Contains(errOut, "--tamper") {
		t.Fatalf("--tamper nope: exit %d\n%s", code, errOut)
	}
	code, _, errOut = runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Follow", "--to", bob, "--tamper", "body")
	if code != 2 || !strings.Contains(errOut, "Create or a Like") {
		t.Fatalf("a forged Follow: exit %d\n%s", code, errOut)
	}
	code, _, errOut = runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Create", "--to", bob, "--tamper", "body", "--signature", "rfc9421")
	if code != 2 || !strings.Contains(errOut, "--signature rfc9421") {
		t.Fatalf("a forged RFC 9421 send: exit %d\n%s", code, errOut)
	}
}
