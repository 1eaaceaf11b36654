package main

import (
	"strings"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

// TestSendSignatureRFC9421: `crowd send --signature rfc9421` signs the
// activity with RFC 9421 (Signature-Input, Signature, Content-Digest, no
// Digest); bob's inbox verifies it as Mastodon would and answers 202. A
// scheme the flag does not know is a usage error naming it.
func TestSendSignatureRFC9421(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	const bob = "https://flood2.test/users/bob"
	code, out, errOut := runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Create", "--to", bob, "--signature", "rfc9421")
	if code != 0 || !strings.Contains(out, "→ 202 Accepted") || !strings.Contains(out, "signed RFC 9421") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	in := c.inbox.Log().Latest(1, adminapi.Filter{Direction: adminapi.DirIn, Type: "Create"})
	if len(in) != 1 || in[0].Status != 202 {
		t.Fatalf("bob's inbox logged %+v", in)
	}
	h := in[0].Headers
	if h.Get("Signature-Input") == "" || h.Get("Content-Digest") == "" || h.Get("Digest") != "" || !strings.HasPrefix(h.Get("Signature"), "sig1=:") {
		t.Errorf("the Create that arrived is not signed RFC 9421 alone: %v", h)
	}

	code, _, errOut = runCLI(t, "send", "--admin", c.admin, "--from", "alice@flood1.test", "--type", "Create", "--to", bob, "--signature", "hs2019")
	if code != 2 || !strings.Contains(errOut, "--signature") {
		t.Errorf("--signature hs2019: exit %d, stderr %s", code, errOut)
	}
}
