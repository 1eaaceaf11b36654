package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/loopback"
	"github.com/crowdfed/crowd/internal/statedir"
	"github.com/crowdfed/crowd/pasture"
)

// TestFollowsPrune: the crowd's Follows a server never answered are listed
// and cleared, through the running crowd's admin API or on a stopped
// crowd's state; answered ones stay.
func TestFollowsPrune(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	alice := c.world.Origins[0].Person(0).ID
	g := c.world.Graph
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(g.AddFollowing(alice, "https://sut.test/users/never", "https://flood1.test/f/never"))
	must(g.AddFollowing(alice, "https://sut.test/users/answered", "https://flood1.test/f/answered"))
	if _, _, err := g.SetFollowingState("https://flood1.test/f/answered", actors.StateAccepted); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name    string
		args    []string
		say     string // in stdout
		pending bool   // the unanswered Follow is still there after
	}{
		// Pending for less than an hour: not stale yet.
		{"young", nil, "no Follow pending for more than 1h0m0s", true},
		// A dry run lists it and removes nothing.
		{"dry run", []string{"--older-than", "0s", "--dry-run"}, "1 Follows pending for more than 0s (dry run: none removed)", true},
		// Pruned: gone; the accepted Follow stays.
		{"pruned", []string{"--older-than", "0s"}, "1 Follows pending for more than 0s: 1 removed", false},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"follows", "prune", "--admin", c.admin}, step.args...)...)
		if code != 0 || !strings.Contains(stdout, step.say) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", step.name, code, stdout, stderr, step.say)
		}
		if _, ok := g.FollowingByRemote(alice, "https://sut.test/users/never"); ok != step.pending {
			t.Errorf("%s: unanswered Follow present %v, want %v", step.name, ok, step.pending)
		}
		if r, ok := g.FollowingByRemote(alice, "https://sut.test/users/answered"); !ok || r.State != actors.StateAccepted {
			t.Errorf("%s: the accepted Follow is %+v", step.name, r)
		}
	}

	t.Run("stopped crowd's state", func(t *testing.T) {
		state := t.TempDir()
		sg, err := actors.OpenGraph(state, nil)
		must(err)
		must(sg.AddFollowing(alice, "https://sut.test/users/never", "https://flood1.test/f/never"))
		sg.Close()
		code, stdout, stderr := runCLI(t, "follows", "prune", "--state", state, "--older-than", "0s")
		if code != 0 || !strings.Contains(stdout, "1 removed") || !strings.Contains(stdout, "https://sut.test/users/never") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		sg, err = actors.OpenGraph(state, nil)
		must(err)
		defer sg.Close()
		if got := sg.PendingBefore(farFuture()); len(got) != 0 {
			t.Errorf("still pending: %v", got)
		}
	})

	// The state of a crowd that still runs is refused with one piece of
	// advice: prune it through its admin API, or stop it.
	t.Run("running crowd's state", func(t *testing.T) {
		state := t.TempDir()
		lock, err := statedir.Acquire(state)
		must(err)
		defer lock.Release()
		code, _, stderr := runCLI(t, "follows", "prune", "--state", state, "--dry-run")
		want := "pid " + strconv.Itoa(os.Getpid()) + ": that crowd is running: prune it through its admin API, leaving out --state and giving --admin the address it serves its admin API on"
		if code != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "pass another --state") {
			t.Errorf("exit %d, stderr %q; want 1 and only %q", code, stderr, want)
		}
	})

	t.Run("usage", func(t *testing.T) {
		typo := filepath.Join(t.TempDir(), "crowd-stat")
		for _, args := range [][]string{
			{"follows"},
			{"follows", "prune", "--older-than", "-1s", "--admin", c.admin},
			{"follows", "prune", "extra"},
			{"follows", "prune", "--state", typo, "--dry-run"}, // a misspelt state: no crowd's, and not made
		} {
			if code, _, stderr := runCLI(t, args...); code != 2 {
				t.Errorf("%q: exit %d (%s), want 2", args, code, stderr)
			}
		}
		if _, err := os.Stat(typo); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("prune made the misspelt --state %s (%v)", typo, err)
		}
	})
}

// TestFollowsPruneInTheImagesEnvironment: with the variables the image and
// its compose files set for every command (CROWD_STATE, CROWD_ADMIN off
// loopback), a bare `crowd follows prune` asks the running serve, with the
// token from CROWD_STATE's folder: CROWD_STATE is not its --state, which
// would name the state that serve holds.
func TestFollowsPruneInTheImagesEnvironment(t *testing.T) {
	state := t.TempDir()
	_, port, _ := strings.Cut(loopback.Free(t), ":")
	admin := "localhost:" + port // a name: off loopback, so serve wants its token
	t.Setenv("CROWD_STATE", state)
	t.Setenv("CROWD_ADMIN", admin)
	t.Setenv("CROWD_ADMIN_TOKEN", "")
	served := serveInBackground(t, "--origins", "1", "--actors", "1", "--https", loopback.Free(t), "--http", "", "--dns", "", "--log-level", "error")
	waitReady(t, admin, served)
	if _, err := pasture.ReadAdminToken(state); err != nil {
		t.Fatalf("serve made no token in CROWD_STATE: %v", err)
	}
	code, stdout, stderr := runCLI(t, "follows", "prune", "--dry-run")
	if code != 0 || !strings.Contains(stdout, "no Follow pending for more than 1h0m0s") {
		t.Errorf("exit %d, stdout %q, stderr %q; want the running serve's answer", code, stdout, stderr)
	}
}

func farFuture() time.Time { return time.Now().Add(24 * time.Hour) }
