package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// startFlood starts `crowd flood` attached to the federation's crowd,
// flooding Fedify's personas load0..2, writing its record to out with
// label, and returns once it has found the personas and started sending.
func (f *federation) startFlood(t *testing.T, out, label string, extra ...string) *Process {
	t.Helper()
	args := append([]string{"flood", "--personas", "load%d@sut.test", "--count", "3", "--admin", "127.0.0.1:9180",
		"--state", f.state, "--out", out, "--label", label, "--timeout", "3s", "--log-format", "json"}, extra...)
	return StartProcess(t, f.ns.Command(context.Background(), BuildCrowd(t), args...), ReadyOutput(`"msg":"flooding"`))
}

// waitExit waits up to d for p to exit by itself and returns its exit
// status (-1 when a signal ended it).
func waitExit(t *testing.T, p *Process, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("still running after %v:\n%s", d, p.Output())
	}
	return p.Cmd.ProcessState.ExitCode()
}

// answeredLine matches the count of sends answered 2xx in a flood's
// progress line ("t=3s rate=20/s … ok=17 429=0 …").
var answeredLine = regexp.MustCompile(`(?m)^\s*t=\S+ .* ok=(\d+) `)

// waitAnswered waits, up to d, until p's progress lines say at least n
// sends were answered 2xx, and returns the last count it read.
func waitAnswered(p *Process, n int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		got := 0
		if m := answeredLine.FindAllStringSubmatch(p.Output(), -1); len(m) > 0 {
			got, _ = strconv.Atoi(m[len(m)-1][1])
		}
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRobustFloodOutlivesItsSUT stops the SUT (Fedify, SIGTERM) in the
// middle of a flood: `crowd flood` keeps to its schedule, ends by itself,
// writes its whole record (not partial) in which the sends after the stop
// are tallied as connection errors, and exits 0, since no --expect was
// missed: a SUT that falls over is a measurement, not a failure of the
// generator.
func TestRobustFloodOutlivesItsSUT(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	out := t.TempDir()
	fl := f.startFlood(t, out, "sut-stops", "--rate", "20", "--seconds", "12")
	// The SUT stops once it has answered enough to show (its answers came
	// at 4-6/s, not 20, on a busy CI machine), and at the latest 8 s in, so
	// that 80 sends or more are due after the stop.
	answered := waitAnswered(fl, 40, 8*time.Second)
	if answered < 40 {
		t.Logf("the SUT had answered %d sends when it was stopped", answered)
	}
	f.fedify.Stop()
	stopped := time.Now()
	if code := waitExit(t, fl, 60*time.Second); code != 0 {
		t.Fatalf("crowd flood exited %d after its SUT stopped, want 0:\n%s", code, fl.Output())
	}
	t.Logf("the flood ended %v after the SUT stopped", time.Since(stopped).Round(time.Millisecond))
	paths, _ := filepath.Glob(filepath.Join(out, "*-sut-stops.json"))
	if len(paths) != 1 {
		t.Fatalf("records %v\n%s", paths, fl.Output())
	}
	rec, err := record.LoadRecord(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	o := rec.Overall
	t.Logf("counts %+v tally %v", o.Counts, o.Tally)
	if rec.Partial {
		t.Errorf("the record is partial (%s): the run should have kept to its schedule", rec.PartialReason)
	}
	if o.Counts.Sent < 180 || o.Counts.Completed != o.Counts.Sent || o.Tally.Total() != o.Counts.Completed {
		t.Errorf("counts %+v, %d tallied: want about 240 sent, every one completed and tallied", o.Counts, o.Tally.Total())
	}
	// Every answer the progress lines showed before the stop is in the
	// record (at least one: a SUT that answered nothing shows no "before"),
	// and the sends due after it failed to connect. How many came before
	// is the SUT's pace on the machine, not the flood's to hold.
	if ok, conn := o.Tally.OK(), o.Tally.Classes[record.ClassConnError]; ok < int64(max(1, answered)) || conn < 40 {
		t.Errorf("%d answered 2xx (%d before the stop, by the progress lines) and %d connection errors: want every answer before the stop, at least one, and 40 errors after it (tally %v)",
			ok, answered, conn, o.Tally)
	}
	if md, err := os.ReadFile(filepath.Join(out, "runs.md")); err != nil || !strings.Contains(string(md), filepath.Base(paths[0])) {
		t.Errorf("runs.md has no row for the run: %v\n%s", err, md)
	}
}

// crowdRelations returns every relation of the crowd's follow graph
// (GET /api/follows) as "local ← remote follow_id" for followers and
// "local → remote follow_id" for following, mapped to its state.
func (f *federation) crowdRelations(t *testing.T) map[string]string {
	t.Helper()
	type relation struct {
		Local    string `json:"local"`
		Remote   string `json:"remote"`
		FollowID string `json:"follow_id"`
		State    string `json:"state"`
	}
	var list []struct {
		Followers []relation `json:"followers"`
		Following []relation `json:"following"`
	}
	f.call(t, "GET", crowdAdmin+"/api/follows", nil, &list)
	m := map[string]string{}
	for _, a := range list {
		for _, r := range a.Followers {
			m[r.Local+" ← "+r.Remote+" "+r.FollowID] = r.State
		}
		for _, r := range a.Following {
			m[r.Local+" → "+r.Remote+" "+r.FollowID] = r.State
		}
	}
	return m
}

// TestKill9DuringFloodLosesNothing kills, with SIGKILL, both `crowd
// flood` and the `crowd serve` it drives, in the middle of a flood with
// Follows in its mix, while the crowd holds queued Accepts (Fedify's inbox
// refuses Accepts, so the Accepts of Fedify's follows of crowd actors wait
// in the crowd's retry queue, while it answers the flood's Follows, which
// the flood registers once answered). Afterwards: the flood's last checkpoint is a
// readable partial record; restarted on the same state, the crowd serves
// the same public keys byte for byte, every follow it had recorded (Fedify
// following crowd actors, and the flood's own Follows of Fedify's
// personas) is still in its graph, and its queued Accepts reach Fedify.
func TestKill9DuringFloodLosesNothing(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	targets := []string{"https://flood1.test/users/alice", "https://flood2.test/users/bob", "https://flood3.test/users/carol"}
	const load0 = "https://sut.test/users/load0"

	f.call(t, "POST", fedifyCtl+"/inbox/pause", map[string]any{"status": 503, "types": []string{"Accept"}}, nil)
	for _, to := range targets {
		if code := f.call(t, "POST", fedifyCtl+"/follow", map[string]string{"from": "load0", "to": to}, nil); code != 202 {
			t.Fatalf("Fedify /follow %s: %d", to, code)
		}
	}
	eventually(t, 30*time.Second, "the crowd records load0's three follows and queues their Accepts", func() bool {
		var pending []struct {
			Type     string `json:"type"`
			Attempts int    `json:"attempts"`
		}
		f.call(t, "GET", crowdAdmin+"/api/deliveries", nil, &pending)
		accepts := 0
		for _, d := range pending {
			if d.Type == "Accept" && d.Attempts >= 1 {
				accepts++
			}
		}
		followers := 0
		for rel := range f.crowdRelations(t) {
			if strings.Contains(rel, " ← "+load0+" ") {
				followers++
			}
		}
		return accepts == 3 && followers == 3
	})
	keysBefore := worldKeys(t, f.ns, f.state)

	out := t.TempDir()
	fl := f.startFlood(t, out, "kill9", "--rate", "20", "--seconds", "30", "--mix", "create=1,like=1,follow=2")
	var recPath string
	eventually(t, 30*time.Second, "a checkpoint of the flood's record", func() bool {
		paths, _ := filepath.Glob(filepath.Join(out, "*-kill9.json"))
		if len(paths) == 0 {
			return false
		}
		rec, err := record.LoadRecord(paths[0]) // never torn: written by rename
		if err != nil {
			t.Fatalf("a checkpoint that does not read: %v", err)
		}
		recPath = paths[0]
		return rec.Overall.Counts.Sent > 0
	})
	time.Sleep(2 * time.Second) // about 7 s into the run: more Follows registered
	before := f.crowdRelations(t)
	floodFollows := 0
	for rel := range before {
		if strings.Contains(rel, " → https://sut.test/") {
			floodFollows++
		}
	}
	if floodFollows == 0 {
		t.Fatalf("the flood registered no Follow with the crowd before the kill: %v", before)
	}

	fl.Kill()
	f.crowd.Kill()
	if ws, ok := fl.Cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("crowd flood was not killed by SIGKILL: %v\n%s", fl.Cmd.ProcessState, fl.Output())
	}

	t.Run("the killed flood left a readable partial record", func(t *testing.T) {
		paths, _ := filepath.Glob(filepath.Join(out, "*.json"))
		if len(paths) != 1 || paths[0] != recPath {
			t.Fatalf("records %v, want the checkpointed %s", paths, recPath)
		}
		rec, err := record.LoadRecord(recPath)
		if err != nil {
			t.Fatal(err)
		}
		c := rec.Overall.Counts
		t.Logf("left: %s, %+v, tally %v", rec.PartialReason, c, rec.Overall.Tally)
		if !rec.Partial || rec.PartialReason != record.ReasonCheckpoint || c.Sent == 0 || c.Offered != c.Sent+c.Dropped {
			t.Errorf("partial %v (%q), counts %+v: want a partial record in progress with sends", rec.Partial, rec.PartialReason, c)
		}
		if _, ok := rec.Types["Follow"]; !ok {
			t.Errorf("no Follow in the record's types %v", rec.TypeNames())
		}
		if _, err := os.Stat(filepath.Join(out, "runs.md")); !os.IsNotExist(err) {
			t.Errorf("runs.md of a killed run: %v (its row is written at the end)", err)
		}
	})

	// While the crowd is down, Fedify takes deliveries again: only the
	// crowd's queue can still bring the Accepts.
	f.call(t, "POST", fedifyCtl+"/inbox/resume", nil, nil)
	for _, to := range targets {
		if got := f.fedifyFollowing(t, "load0")[to]; got != "pending" {
			t.Fatalf("before the restart Fedify's follow of %s must still be pending, is %q", to, got)
		}
	}
	f.crowd = f.startCrowd(t)

	if after := worldKeys(t, f.ns, f.state); after != keysBefore {
		t.Errorf("the CA or a public key changed across the kill:\nbefore:\n%s\nafter:\n%s", keysBefore, after)
	}
	after := f.crowdRelations(t)
	lost := 0
	for rel := range before {
		if _, ok := after[rel]; !ok {
			t.Errorf("lost in the kill: %s", rel)
			lost++
		}
	}
	t.Logf("%d relations before the kill (%d Follows the flood registered), %d after, %d lost", len(before), floodFollows, len(after), lost)
	eventually(t, 60*time.Second, "the queued Accepts delivered after the restart", func() bool {
		got := f.fedifyFollowing(t, "load0")
		for _, to := range targets {
			if got[to] != "accepted" {
				return false
			}
		}
		return true
	})
}
