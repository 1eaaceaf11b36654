package audience

import "testing"

// TestFollowsCoveringGivesEveryBoosterAFollower: with FollowsCovering's
// share each, the personas follow every crowd actor, so a boost from any
// of them is one a real server keeps; Followed counts them once.
func TestFollowsCoveringGivesEveryBoosterAFollower(t *testing.T) {
	for _, c := range []struct {
		name            string
		personas        int
		origins, actors int
		want            int // follows each persona takes
	}{
		// The crowd splits evenly: disjoint shares.
		{"even", 4, 2, 10, 5},
		// One actor more than the shares hold: each persona takes one more.
		{"uneven", 3, 2, 10, 7},
		// One persona follows the whole crowd.
		{"one persona", 1, 20, 10, 200},
		// More personas than actors: one each, shared.
		{"more personas", 5, 1, 3, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			crowd := crowdOf(c.origins, c.actors)
			k := FollowsCovering(c.personas, len(crowd))
			shares, err := AssignFollows(c.personas, k, crowd)
			if err != nil || k != c.want {
				t.Fatalf("FollowsCovering %d (want %d): %v", k, c.want, err)
			}
			res := make([]FollowResult, len(shares))
			for i, s := range shares {
				res[i].Accepted = append(s, s...) // a repeat counts once
			}
			if n := Followed(res); n != len(crowd) {
				t.Errorf("%d of %d crowd actors followed", n, len(crowd))
			}
		})
	}
	if FollowsCovering(0, 10) != 0 || FollowsCovering(3, 0) != 0 {
		t.Error("no personas or no crowd: want no follows")
	}
}
