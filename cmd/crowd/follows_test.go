package main

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/inbox"
)

// graphRelations replays the follow graph journal in state: the crowd's
// own Follows (local → remote) as they stand.
func graphRelations(t *testing.T, state string) []actors.Relation {
	t.Helper()
	g, err := actors.OpenGraph(state, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var out []actors.Relation
	seen := map[string]bool{}
	f, err := os.Open(filepath.Join(state, "graph.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e struct {
			Local string `json:"local"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && !seen[e.Local] {
			seen[e.Local] = true
			out = append(out, g.Following(e.Local)...)
		}
	}
	return out
}

// loggedFollows2xx is the ids of the Follows the crowd's inboxes logged as
// received and answered 2xx.
func loggedFollows2xx(t *testing.T, state string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(state, inbox.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e inbox.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("activity log: %v", err)
		}
		if e.Direction == inbox.DirIn && e.Type == "Follow" && e.Status/100 == 2 {
			out[e.ID] = true
		}
	}
	return out
}

// cancelAtFirstCheckpoint cancels the returned context once a record
// checkpoint is in out (the run is well under way), within a minute.
func cancelAtFirstCheckpoint(t *testing.T, out string) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(out, "*.json")); len(m) > 0 {
				break
			}
		}
		cancel()
	}()
	return ctx
}

// TestFloodRegistersOnlySentFollows: a pipeline flood whose signers have
// drafted far more than it sends (a buffer of a second at 2000/s, stopped
// after 100 sends; or interrupted) leaves in the crowd's follow graph only
// Follows its inboxes received and answered 2xx: nothing drafted and unsent
// stays pending.
func TestFloodRegistersOnlySentFollows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		args      []string
		interrupt bool
	}{
		// --max-sends ends the run with most of the buffer unsent.
		{"max-sends", []string{"--rate", "2000", "--max-sends", "100", "--seconds", "0"}, false},
		// Ctrl-C: sends in flight are aborted, the buffer is unsent.
		{"interrupted", []string{"--rate", "100", "--seconds", "60"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // its own state
			state, out := t.TempDir(), t.TempDir()
			ctx := context.Background()
			if c.interrupt {
				ctx = cancelAtFirstCheckpoint(t, out)
			}
			args := append([]string{"flood", "--standalone", "--origins", "4", "--actors", "5", "--state", state, "--out", out,
				"--log-level", "error", "--mix", "create=1,follow=1"}, c.args...)
			code, stdout, stderr := runCLIContext(t, ctx, args...)
			if want := map[bool]int{false: 0, true: exitInterrupted}[c.interrupt]; code != want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
			}
			rec := records(t, out)[0]
			follow := rec.Types["Follow"]
			if follow == nil || follow.Tally.OK() == 0 {
				t.Fatalf("no Follow answered 2xx: %v", rec.TypeNames())
			}
			received := loggedFollows2xx(t, state)
			rels := graphRelations(t, state)
			if len(rels) == 0 {
				t.Fatal("no Follow reached the follow graph")
			}
			pending := 0
			for _, r := range rels {
				if !received[r.FollowID] {
					t.Errorf("%s %s → %s: Follow %s was never received and answered 2xx", r.State, r.Local, r.Remote, r.FollowID)
				}
				if r.State == actors.StatePending {
					pending++
				}
			}
			t.Logf("%d Follows answered 2xx in the record (%d warm-up), %d logged, %d relations (%d pending)",
				follow.Tally.OK(), rec.Warmup.Sent, len(received), len(rels), pending)
		})
	}
}

// TestFloodSeed: a run without --seed draws a fresh seed, prints it first
// and records it; --seed N draws the same activities again.
func TestFloodSeed(t *testing.T) {
	t.Parallel()
	// draws runs a 1 s self-flood on a fresh state and returns its seed
	// and what the crowd's inboxes received: type, sender and recipient of
	// each activity, sorted (concurrent sends may arrive in any order).
	draws := func(more ...string) (uint64, []string) {
		t.Helper()
		state, out := t.TempDir(), t.TempDir()
		code, stdout, stderr := runCLI(t, standalone(state, out, append([]string{"--seconds", "1", "--rate", "30", "--signing", "jit"}, more...)...)...)
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		rec := records(t, out)[0]
		seed := rec.Parts[0].Seed
		if !strings.Contains(stderr, "\nseed "+itoa(seed)+" (--seed "+itoa(seed)+" replays the draws)\n") && !strings.HasPrefix(stderr, "seed ") {
			t.Errorf("stderr does not start the flood with its seed %d:\n%s", seed, stderr)
		}
		if !strings.Contains(stdout, "seed "+itoa(seed)) {
			t.Errorf("the table does not show seed %d:\n%s", seed, stdout)
		}
		f, err := os.ReadFile(filepath.Join(state, inbox.LogFile))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for line := range strings.Lines(string(f)) {
			var e inbox.Entry
			if json.Unmarshal([]byte(line), &e) == nil && e.Direction == inbox.DirIn && e.Type != "Accept" {
				got = append(got, e.Type+" "+e.Actor+" → "+e.Local)
			}
		}
		slices.Sort(got)
		return seed, got
	}
	s1, d1 := draws()
	s2, d2 := draws()
	if s1 == 0 || s2 == 0 || s1 == s2 {
		t.Errorf("two runs without --seed recorded seeds %d and %d; want two fresh ones", s1, s2)
	}
	if slices.Equal(d1, d2) {
		t.Error("two runs with fresh seeds drew the same activities")
	}
	s3, d3 := draws("--seed", itoa(s1))
	if s3 != s1 || !slices.Equal(d3, d1) {
		t.Errorf("--seed %d recorded %d and drew\n%v\nnot the same as\n%v", s1, s3, d3, d1)
	}
}

// TestFloodSeedReplaysOnAChangedState: the same --seed on a state that the
// first run changed (its Follows registered, so some drawn senders follow
// their persona already) draws the same types: a Follow finds another sender
// or goes out as a Create, counted as diverted, and no later draw shifts.
func TestFloodSeedReplaysOnAChangedState(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	types := func(seed string) map[string]int64 {
		t.Helper()
		out := t.TempDir()
		code, stdout, stderr := runCLI(t, "flood", "--standalone", "--origins", "4", "--actors", "3", "--state", state, "--out", out,
			"--log-level", "error", "--signing", "jit", "--max-sends", "60", "--seconds", "0", "--rate", "100", "--seed", seed)
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		rec := records(t, out)[0]
		got := map[string]int64{}
		for name, tr := range rec.Types {
			got[name] = tr.Counts.Sent
		}
		// A diverted Follow was drawn a Follow.
		got["Follow"] += rec.Deviations.FollowsDiverted
		got["Create"] -= rec.Deviations.FollowsDiverted
		return got
	}
	first, second := types("7"), types("7")
	if first["Follow"] == 0 {
		t.Fatalf("the first run drew no Follow (%v): nothing for the second to meet", first)
	}
	if !maps.Equal(first, second) {
		t.Errorf("--seed 7 drew %v on a fresh state and %v on the state the first run left", first, second)
	}
}

// TestRepeatedSelfFloodsDivertNoFollowWhileFreePairsRemain: repeated floods
// on one state send their Follows to pairs not yet following; a Follow
// becomes a Create only for a persona every other actor already follows.
// Four runs of 15 take the 60 pairs ten runs of 6 took: each run still
// starts on the graph every run before it left.
func TestRepeatedSelfFloodsDivertNoFollowWhileFreePairsRemain(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	const actorsN = 12 // 4 origins × 3: 132 pairs, 60 Follows in all
	const runs, follows = 4, 15
	for run := 1; run <= runs; run++ {
		out := t.TempDir()
		code, stdout, stderr := runCLI(t, "flood", "--standalone", "--origins", "4", "--actors", "3", "--state", state, "--out", out,
			"--log-level", "error", "--mix", "follow=1", "--max-sends", itoa(follows), "--seconds", "0", "--rate", "50")
		if code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", run, code, stdout, stderr)
		}
		rec := records(t, out)[0]
		// A pair is taken when its Follow was received: a relation the
		// crowd registered for a Follow never sent does not count.
		received := loggedFollows2xx(t, state)
		followers := map[string]int{}
		for _, r := range graphRelations(t, state) {
			if r.State != actors.StateRejected && received[r.FollowID] {
				followers[r.Remote]++
			}
		}
		full := false
		for _, n := range followers {
			full = full || n == actorsN-1
		}
		if d := rec.Deviations.FollowsDiverted; d > 0 && !full {
			t.Errorf("run %d diverted %d Follows while every persona had a free follower (%v)", run, d, followers)
		}
		if sent := rec.Types["Follow"]; !full && (sent == nil || sent.Counts.Sent != follows) {
			t.Errorf("run %d: Follows %+v; want %d", run, sent, follows)
		}
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
