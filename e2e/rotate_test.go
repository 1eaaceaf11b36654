package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKeyRotationRealFedify rotates the keys of flood1.test's actors
// after a real Fedify 1.5.9 has met them (a flood, Follows included), and
// floods again: Fedify is handed each actor's Update(Person) by the
// restarted crowd, and takes every request the rotated actors sign with
// their new keys under the key id they had (#main-key, the default, as
// real servers rotate: Fedify refetches a key that fails) and verifies
// every Update(Person) the crowd queued, signed with the new keys; no key of
// the crowd is refused before it is accepted (security.key_refusals)
// and Fedify rejects nothing.
func TestKeyRotationRealFedify(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 1)
	out := t.TempDir()
	flood := func(label, mix string) []byte {
		cmd := f.ns.Command(context.Background(), BuildCrowd(t), "flood", "--rate", "10", "--seconds", "4", "--timeout", "60s",
			"--mix", mix, "--personas", "load%d@sut.test", "--count", "1", "--admin", "127.0.0.1:9180",
			"--state", f.state, "--out", out, "--label", label, "--log-format", "json")
		output, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("crowd flood (%s): %v\n%s", label, err, output)
		}
		return output
	}
	// Follows mostly: about 27 of the 40 actors follow load0, so some of
	// flood1.test's (the rotated origin's) have a follower to announce
	// their new key to, whatever the draws (at 13 Follows, none of them
	// was one in a run or two of a hundred).
	flood("before", "create=1,follow=2")
	f.crowd.Stop()
	rot, err := exec.Command(BuildCrowd(t), "keys", "rotate", "--state", f.state, "--origins", "4", "--actors", "10",
		"--origin", "flood1.test").CombinedOutput()
	if err != nil || strings.Count(string(rot), "#main-key;") != 10 {
		t.Fatalf("crowd keys rotate: %v\n%s", err, rot)
	}
	t.Logf("%s", rot)
	queued := 0
	for _, l := range strings.Split(string(rot), "\n") {
		var n int
		if _, after, ok := strings.Cut(l, "queued for "); ok {
			fmt.Sscanf(after, "%d", &n)
		}
		queued += n
	}
	f.call(t, "POST", fedifyCtl+"/stats/reset", nil, nil) // before the restarted crowd delivers the Updates
	f.crowd = f.startCrowd(t)
	var stats struct {
		Verified      map[string]int64 `json:"verified"`
		RejectedTotal int64            `json:"rejectedTotal"`
		Rejections    []struct{ Type, Reason, KeyID string }
	}
	output := flood("after", "create=2,follow=1")
	eventually(t, 20*time.Second, "the crowd's deliveries of Update(Person) to be done", func() bool {
		var pending []json.RawMessage
		f.call(t, "GET", crowdAdmin+"/api/deliveries", nil, &pending)
		return len(pending) == 0
	})
	f.call(t, "GET", fedifyCtl+"/stats", nil, &stats)
	var rec struct {
		Security *struct {
			KeyRefusals []struct {
				KeyID    string `json:"key_id"`
				Refused  int64
				Accepted bool
			} `json:"key_refusals"`
		} `json:"security"`
	}
	readRecord(t, out, "after", &rec)
	t.Logf("Fedify after the rotation: verified %v, rejected %d %+v", stats.Verified, stats.RejectedTotal, stats.Rejections)
	if rec.Security != nil && len(rec.Security.KeyRefusals) > 0 {
		t.Errorf("keys refused before accepted: %+v", rec.Security.KeyRefusals)
	}
	if queued == 0 || stats.Verified["Update"] != int64(queued) {
		t.Errorf("%d Update(Person) queued, Fedify verified %d", queued, stats.Verified["Update"])
	}
	if stats.RejectedTotal != 0 {
		t.Errorf("Fedify rejected %d requests after the rotation: %+v", stats.RejectedTotal, stats.Rejections)
	}
	if !strings.Contains(string(output), "record:") {
		t.Errorf("no record:\n%s", output)
	}
}
