package actors

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/internal/journal"
)

func TestGraphSurvivesRestartAndTornTail(t *testing.T) {
	dir := t.TempDir()
	g, err := OpenGraph(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	local := "https://flood1.test/users/alice"
	must(t, g.AddFollower(local, "https://sut.test/users/a", "f1", []byte(`{"type":"Follow"}`)))
	must(t, g.AddFollower(local, "https://sut.test/users/b", "f2", nil))
	if _, err := g.RemoveFollower(local, "https://sut.test/users/a"); err != nil {
		t.Fatal(err)
	}
	must(t, g.AddFollowing(local, "https://sut.test/users/c", "f3"))
	if _, ok, err := g.SetFollowingState("f3", StateAccepted); !ok || err != nil {
		t.Fatalf("SetFollowingState: %v %v", ok, err)
	}
	g.Close()
	// A crash mid-append leaves half a line behind.
	f, _ := os.OpenFile(filepath.Join(dir, "graph.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"op":"follower","local":"https://flood1.te`)
	f.Close()

	core, logs := observer.New(zap.WarnLevel)
	g, err = OpenGraph(dir, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// The drop is logged, naming the file and the line.
	if w := logs.FilterField(zap.Int("line", 6)).FilterField(zap.String("file", filepath.Join(dir, GraphFile))).All(); len(w) != 1 {
		t.Errorf("torn tail not logged with file and line 6: %v", logs.All())
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"followers after one unfollow", len(g.Followers(local)), 1},
		{"accepted following", len(g.Following(local)), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	if r := g.Following(local)[0]; r.State != StateAccepted {
		t.Errorf("following state %q, want accepted", r.State)
	}
	// The torn tail is gone, so new entries append cleanly.
	must(t, g.AddFollower(local, "https://sut.test/users/d", "f4", nil))
	if n, _ := g.Counts(local); n != 2 {
		t.Errorf("followers = %d, want 2", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRepeatedFollowKeepsAnAcceptedRelation(t *testing.T) {
	g := NewMemoryGraph()
	local, remote := "https://flood1.test/users/alice", "https://sut.test/users/load0"
	must(t, g.AddFollowing(local, remote, "f1"))
	if _, ok, err := g.SetFollowingState("f1", StateAccepted); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// The flood follows the same persona again.
	must(t, g.AddFollowing(local, remote, "f2"))
	if r, _ := g.FollowingByRemote(local, remote); r.State != StateAccepted {
		t.Errorf("a repeated Follow turned an accepted relation %s", r.State)
	}
	// The second Follow's own Accept still finds the relation.
	if r, ok, err := g.SetFollowingState("f2", StateAccepted); !ok || err != nil || r.State != StateAccepted {
		t.Errorf("Accept of the repeated Follow: %+v %v %v", r, ok, err)
	}
	if _, following := g.Counts(local); following != 1 {
		t.Errorf("following = %d, want 1", following)
	}
}

// writeJournal makes a follow-graph journal of n follower lines in a new
// state directory and returns the directory and the journal's bytes.
func writeJournal(t *testing.T, n int) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	g, err := OpenGraph(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		must(t, g.AddFollower("https://flood1.test/users/alice", fmt.Sprintf("https://sut.test/users/u%d", i), fmt.Sprint("f", i), nil))
	}
	g.Close()
	data, err := os.ReadFile(filepath.Join(dir, GraphFile))
	if err != nil {
		t.Fatal(err)
	}
	return dir, data
}

// A damaged line anywhere but at the torn end refuses the opening with
// file:line and how to repair, and leaves the journal byte-identical: cutting
// it at the bad line would silently lose every later follow.
func TestGraphRefusesADamagedLine(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(lines [][]byte) // changes line 5 (index 4)
		why    string
	}{
		// Bytes overwritten inside the line: not JSON any more.
		{"garbled", func(l [][]byte) { copy(l[4][3:], "###") }, "not a journal entry"},
		// JSON, but not an entry the graph knows.
		{"unknown op", func(l [][]byte) { l[4] = []byte(`{"op":"befriend","local":"a","remote":"b"}`) }, `unknown op "befriend"`},
		// An entry that names no actor.
		{"no actors", func(l [][]byte) { l[4] = []byte(`{"op":"follower"}`) }, "no local"},
		// A blank line is damage too.
		{"blank", func(l [][]byte) { l[4] = nil }, "not a journal entry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, data := writeJournal(t, 9)
			lines := bytes.SplitAfter(data, []byte("\n"))
			for i := range lines {
				lines[i] = bytes.TrimSuffix(lines[i], []byte("\n"))
			}
			lines = lines[:9]
			c.damage(lines)
			damaged := append(bytes.Join(lines, []byte("\n")), '\n')
			path := filepath.Join(dir, GraphFile)
			os.WriteFile(path, damaged, 0o600)
			g, err := OpenGraph(dir, nil)
			if err == nil {
				g.Close()
				t.Fatal("a damaged journal opened")
			}
			for _, want := range []string{path + ":5", c.why, "sed -i '5d'"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if !errors.Is(err, ErrGraph) || !errors.Is(err, journal.ErrDamaged) {
				t.Errorf("error %v does not wrap ErrGraph and journal.ErrDamaged", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
				t.Errorf("the damaged journal was changed: %d bytes → %d", len(damaged), len(after))
			}
		})
	}
}

// TestFollowingRegisteredAfterItsAnswer: a flood registers a Follow once the
// SUT answered it, and the SUT's Accept or Reject may be recorded first (from
// the answer itself): registering that same Follow then changes nothing.
func TestFollowingRegisteredAfterItsAnswer(t *testing.T) {
	local, remote := "https://flood1.test/users/alice", "https://sut.test/users/a"
	for _, state := range []string{StateAccepted, StateRejected} {
		g := NewMemoryGraph()
		must(t, g.AddFollowing(local, remote, "f1")) // recorded from the answer …
		if _, _, err := g.SetFollowingState("f1", state); err != nil {
			t.Fatal(err)
		}
		must(t, g.AddFollowing(local, remote, "f1")) // … then registered
		if r, _ := g.FollowingByRemote(local, remote); r.State != state {
			t.Errorf("%s Follow registered again: now %s", state, r.State)
		}
	}
}

// TestPendingBeforeAndRemovePending: stale pending Follows are listed by
// age and removed, but one answered in between is kept.
func TestPendingBeforeAndRemovePending(t *testing.T) {
	g := NewMemoryGraph()
	local := "https://flood1.test/users/alice"
	must(t, g.AddFollowing(local, "https://sut.test/users/a", "fa"))
	must(t, g.AddFollowing(local, "https://sut.test/users/b", "fb"))
	must(t, g.AddFollowing(local, "https://sut.test/users/c", "fc"))
	if _, _, err := g.SetFollowingState("fc", StateAccepted); err != nil {
		t.Fatal(err)
	}
	if got := g.PendingBefore(time.Now().Add(-time.Hour)); len(got) != 0 {
		t.Errorf("pending for over an hour: %v", got)
	}
	stale := g.PendingBefore(time.Now().Add(time.Second))
	if len(stale) != 2 || stale[0].FollowID != "fa" || stale[1].FollowID != "fb" {
		t.Fatalf("pending: %+v, want fa and fb (oldest first)", stale)
	}
	// fb's Accept arrives after it was listed: it stays.
	if _, _, err := g.SetFollowingState("fb", StateAccepted); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		if ok, err := g.RemovePending(stale[i]); ok != want || err != nil {
			t.Errorf("RemovePending(%s) = %v, %v; want %v", stale[i].FollowID, ok, err, want)
		}
	}
	if _, ok := g.FollowingByRemote(local, "https://sut.test/users/a"); ok {
		t.Error("fa still there")
	}
	if r, ok := g.FollowingByRemote(local, "https://sut.test/users/b"); !ok || r.State != StateAccepted {
		t.Errorf("fb: %+v %v", r, ok)
	}
}
