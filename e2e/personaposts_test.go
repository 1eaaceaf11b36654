package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestFloodPostsForPersonasWithout: against a Fedify whose personas have
// no post, a flood of Likes given a client-API token for load0 posts for it
// first (through Fedify's Mastodon client API) and likes that post; load1,
// with no token, keeps none and gets no Likes, as the record says. A token
// for a name no persona has (load9) is warned of, not used.
func TestFloodPostsForPersonasWithout(t *testing.T) {
	t.Parallel()
	f := startFederationWith(t, 2, "--posts", "0")
	out := t.TempDir()
	cmd := f.ns.Command(context.Background(), BuildCrowd(t), "flood", "--rate", "10", "--seconds", "2", "--timeout", "60s",
		"--mix", "like=1", "--personas", "load%d@sut.test", "--count", "2", "--admin", "127.0.0.1:9180", "--state", f.state,
		"--post-token", "load0=token-load0", "--post-token", "load9=token-load9", "--out", out, "--label", "posts", "--log-format", "json")
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("crowd flood: %v\n%s", err, output)
	}
	if !strings.Contains(string(output), "--post-token names no persona of this flood") || !strings.Contains(string(output), `"names":["load9"]`) {
		t.Errorf("no warning that load9's token is not used:\n%s", output)
	}
	var rec postsRecord
	readRecord(t, out, "posts", &rec)
	if got := rec.Deviations.PersonasWithoutPosts; !slices.Equal(got, []string{"load1@sut.test"}) {
		t.Errorf("personas without posts %v, want load1 only (load0 posted first)\n%s", got, output)
	}
	var personas []struct {
		Name  string   `json:"name"`
		Posts []string `json:"posts"`
	}
	f.call(t, "GET", fedifyCtl+"/personas", nil, &personas)
	for _, p := range personas {
		if want := map[string]int{"load0": 1, "load1": 0}[p.Name]; len(p.Posts) != want {
			t.Errorf("%s has %d posts on Fedify, want %d", p.Name, len(p.Posts), want)
		}
	}
	var stats struct {
		Verified      map[string]int64 `json:"verified"`
		RejectedTotal int64            `json:"rejectedTotal"`
	}
	f.call(t, "GET", fedifyCtl+"/stats", nil, &stats)
	if stats.Verified["Like"] == 0 || stats.Verified["Like"] != rec.Types["Like"].Tally["202"] || stats.RejectedTotal != 0 {
		t.Errorf("Fedify verified %v, rejected %d; the crowd's Likes %v", stats.Verified, stats.RejectedTotal, rec.Types["Like"].Tally)
	}
}

// TestRunPostsForPersonasWithout: a `crowd run` told to post nothing at
// set-up (--posts 0) against a Fedify whose personas have no post still
// posts one for each (with the audience's tokens) before the flood, so
// every persona gets its Likes and none is recorded without posts.
func TestRunPostsForPersonasWithout(t *testing.T) {
	t.Parallel()
	f := startFederationWith(t, 2, "--posts", "0")
	out := t.TempDir()
	output, err := f.crowdRun(t, out, "--rate", "10", "--seconds", "2", "--timeout", "60s", "--mix", "like=1",
		"--count", "2", "--sut-host", "sut.test", "--tokens-file", f.tokensFile(t), "--posts", "0",
		"--follows", "0", "--followers", "0", "--post-every", "0", "--setup-timeout", "30s", "--drain-timeout", "5s",
		"--label", "run-posts")
	if err != nil {
		t.Fatalf("crowd run: %v\n%s", err, output)
	}
	var rec postsRecord
	readRecord(t, out, "run-posts", &rec)
	if got := rec.Deviations.PersonasWithoutPosts; len(got) != 0 {
		t.Errorf("personas without posts %v, want none\n%s", got, output)
	}
	var personas []struct {
		Name  string   `json:"name"`
		Posts []string `json:"posts"`
	}
	f.call(t, "GET", fedifyCtl+"/personas", nil, &personas)
	for _, p := range personas {
		if len(p.Posts) != 1 {
			t.Errorf("%s has %d posts on Fedify, want the 1 the run made", p.Name, len(p.Posts))
		}
	}
	if rec.Types["Like"].Tally["202"] == 0 {
		t.Errorf("no Like accepted: %v\n%s", rec.Types, output)
	}
}

// postsRecord is the part of a run record these tests read.
type postsRecord struct {
	Types map[string]struct {
		Tally map[string]int64 `json:"tally"`
	} `json:"types"`
	Deviations struct {
		PersonasWithoutPosts []string `json:"personas_without_posts"`
	} `json:"deviations"`
}
