package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// reactionsRecord is the part of a run record TestReactionsOncePerActor
// reads.
type reactionsRecord struct {
	Overall struct {
		Counts struct {
			Sent int64 `json:"sent"`
		} `json:"counts"`
	} `json:"overall"`
	Types map[string]struct {
		Tally map[string]int64 `json:"tally"`
	} `json:"types"`
	Deviations struct {
		LikesDiverted     int64 `json:"likes_diverted"`
		AnnouncesDiverted int64 `json:"announces_diverted"`
	} `json:"deviations"`
}

// fedifyReactions is the Fedify SUT's GET /reactions.
type fedifyReactions struct {
	Received []struct {
		Kind, Actor, Object, ID string
		Repeated                bool
	}
	Repeated, Kept int
}

// TestReactionsOncePerActor: a crowd of 20 actors floods one Fedify persona
// with 5 posts with `--mix like=1,announce=1`, twice on the same state, with
// a kill -9 of the crowd between the runs. Across both runs Fedify receives
// no (actor, object, kind) twice, and each run's diverted count is what the
// pairs allow: 20 × 5 = 100 pairs of each kind; a kind is diverted only
// once the pairs left of it are all used, and the second run must divert.
// Fedify verifies about 45 of these a second on 2 cores (a boost of a crowd
// note makes it fetch the note and its author), so both runs go at 50/s:
// the first, 400 sends, draws about 200 Likes and 100 boosts of the posts
// and uses (about) all 100 pairs of each kind; the second, 2 000 sends on
// the state the first left, must divert, by what the pairs left allow.
// It stays serial: at 50/s Fedify is at the edge of what it verifies, and
// beside other tests (CI runs four at a time) it fell a minute behind and
// the flood's sends timed out.
func TestReactionsOncePerActor(t *testing.T) {
	const actors, posts = 20, 5
	runSends := [...]int{400, 2000}
	f := startFederationServing(t, 1, []string{"--origins", "2", "--actors", "10"}, "--posts", fmt.Sprint(posts))
	var personas []struct {
		Posts []string `json:"posts"`
	}
	f.call(t, "GET", fedifyCtl+"/personas", nil, &personas)
	if len(personas) != 1 || len(personas[0].Posts) != posts {
		t.Fatalf("Fedify's personas %+v, want one with %d posts", personas, posts)
	}
	onPost := func(object string) bool { return slices.Contains(personas[0].Posts, object) }

	used := map[string]int{} // by kind: the pairs the runs before used
	seen := map[string]bool{}
	for run := 1; run <= 2; run++ {
		label := fmt.Sprintf("reactions-%d", run)
		out := t.TempDir()
		start := time.Now()
		output, err := f.ns.Command(context.Background(), BuildCrowd(t), "flood", "--rate", "50", "--max-sends", fmt.Sprint(runSends[run-1]),
			"--seconds", "0", "--timeout", "60s", "--mix", "like=1,announce=1", "--seed", fmt.Sprint(20+run),
			"--personas", "load%d@sut.test", "--count", "1", "--admin", "127.0.0.1:9180", "--state", f.state,
			"--out", out, "--label", label, "--log-format", "json").CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: crowd flood: %v\n%s", run, err, output)
		}
		var rec reactionsRecord
		readRecord(t, out, label, &rec)
		var got fedifyReactions
		f.call(t, "GET", fedifyCtl+"/reactions", nil, &got)
		f.call(t, "POST", fedifyCtl+"/stats/reset", nil, nil)

		// Every send was answered 202 and every reaction reached Fedify:
		// the counts below are exact.
		var answered int64
		for _, typ := range rec.Types {
			answered += typ.Tally["202"]
		}
		reactions := rec.Types["Like"].Tally["202"] + rec.Types["Announce"].Tally["202"]
		if answered != rec.Overall.Counts.Sent || int64(len(got.Received)) != reactions {
			t.Fatalf("run %d: %d sent, %d answered 202 (Fedify fell behind?); Fedify received %d reactions, the crowd's 202s %d: %+v",
				run, rec.Overall.Counts.Sent, answered, len(got.Received), reactions, rec.Types)
		}
		onPosts, others := map[string]int{}, 0
		for _, r := range got.Received {
			key := r.Kind + " " + r.Actor + " " + r.Object
			if seen[key] || r.Repeated {
				t.Errorf("run %d: %s of %s by %s again", run, r.Kind, r.Object, r.Actor)
			}
			seen[key] = true
			if onPost(r.Object) {
				onPosts[r.Kind]++
			} else {
				others++
			}
		}
		// What the pairs allow, kind by kind: no more reactions to the posts
		// than the pairs left, and a Create in place of one only once those
		// are all used.
		diverted := map[string]int64{"Like": rec.Deviations.LikesDiverted, "Announce": rec.Deviations.AnnouncesDiverted}
		for _, kind := range []string{"Like", "Announce"} {
			left := actors*posts - used[kind]
			if onPosts[kind] > left || diverted[kind] > 0 && onPosts[kind] != left {
				t.Errorf("run %d: %d %ss of the posts and %d diverted, with %d pairs left", run, onPosts[kind], kind, diverted[kind], left)
			}
			used[kind] += onPosts[kind]
		}
		if sum := int64(onPosts["Like"]+onPosts["Announce"]+others) + diverted["Like"] + diverted["Announce"]; sum != rec.Overall.Counts.Sent {
			t.Errorf("run %d: %d reactions and diverted Creates, %d sent", run, sum, rec.Overall.Counts.Sent)
		}
		if run == 2 && (diverted["Like"] == 0 || diverted["Announce"] == 0 || got.Kept != len(seen)) {
			t.Errorf("run 2 diverted %v, want both kinds; Fedify keeps %d reactions, want the %d distinct ones received", diverted, got.Kept, len(seen))
		}
		t.Logf("run %d in %v: sent %d, reactions to the posts %v, %d boosts of crowd notes, diverted %v",
			run, time.Since(start).Round(time.Millisecond), rec.Overall.Counts.Sent, onPosts, others, diverted)
		if run == 1 {
			// The pairs the crowd recorded survive a kill -9 of it.
			f.crowd.Kill()
			f.crowd = f.startCrowd(t)
		}
	}
	for _, kind := range []string{"Like", "Announce"} {
		if used[kind] != actors*posts {
			t.Errorf("the runs used %d %s pairs, want all %d", used[kind], kind, actors*posts)
		}
	}
}
