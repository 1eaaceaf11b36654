package actors

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGraphSurvivesRestartAndTornTail(t *testing.T) {
	dir := t.TempDir()
	g, err := OpenGraph(dir)
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

	g, err = OpenGraph(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
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
