package audience

import (
	"fmt"
	"strings"
	"testing"
)

// crowdOf makes a crowd of origins × actors, in world order (origin by
// origin), like actors.World.Actors.
func crowdOf(origins, actors int) []CrowdActor {
	var out []CrowdActor
	for o := 1; o <= origins; o++ {
		for a := 0; a < actors; a++ {
			host := fmt.Sprintf("flood%d.test", o)
			name := fmt.Sprintf("a%d", a)
			out = append(out, CrowdActor{ID: "https://" + host + "/users/" + name, Acct: name + "@" + host})
		}
	}
	return out
}

// TestAssignFollows: shares are disjoint where the crowd is big enough,
// spread evenly otherwise, and span origins.
func TestAssignFollows(t *testing.T) {
	for _, tc := range []struct {
		name              string
		personas, follows int
		origins, actors   int
		maxReaders        int // the most personas following one crowd actor
		err               string
	}{
		// The e2e run: 3 × 12 of 40 actors, disjoint.
		{"disjoint", 3, 12, 4, 10, 1, ""},
		// The reference run: 20 × 50 of 200 actors, each actor followed 5 times.
		{"reference run", 20, 50, 20, 10, 5, ""},
		// Exactly the crowd: every actor once.
		{"exact", 4, 10, 4, 10, 1, ""},
		// Uneven overlap: 3 × 30 of 40: no actor followed by more than 3.
		{"uneven", 3, 30, 4, 10, 3, ""},
		// No follows at all: empty shares.
		{"none", 3, 0, 4, 10, 0, ""},
		// More follows than the crowd has actors.
		{"too many", 2, 41, 4, 10, 0, "--follows 41: the crowd has only 40 actors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shares, err := AssignFollows(tc.personas, tc.follows, crowdOf(tc.origins, tc.actors))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(shares) != tc.personas {
				t.Fatalf("AssignFollows = %d shares, %v", len(shares), err)
			}
			readers := map[string]int{}
			for i, s := range shares {
				if len(s) != tc.follows {
					t.Errorf("persona %d follows %d, want %d", i, len(s), tc.follows)
				}
				seen, hosts := map[string]bool{}, map[string]bool{}
				for _, a := range s {
					if seen[a.ID] {
						t.Errorf("persona %d follows %s twice", i, a.Acct)
					}
					seen[a.ID] = true
					hosts[a.host()] = true
					readers[a.ID]++
				}
				if tc.follows >= tc.origins && len(hosts) != tc.origins {
					t.Errorf("persona %d's share spans %d origins, want all %d", i, len(hosts), tc.origins)
				}
			}
			most := 0
			for _, n := range readers {
				most = max(most, n)
			}
			if most != tc.maxReaders {
				t.Errorf("an actor is followed by up to %d personas, want %d", most, tc.maxReaders)
			}
		})
	}
}

// TestAssignFollowers: each persona's followers are on different origins,
// and apart from the other personas' followers.
func TestAssignFollowers(t *testing.T) {
	fans, err := AssignFollowers(3, 2, crowdOf(4, 10))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]bool{}
	for i, f := range fans {
		if len(f) != 2 || f[0].host() == f[1].host() {
			t.Errorf("persona %d's followers %v: want 2 on different origins", i, f)
		}
		for _, a := range f {
			if all[a.ID] {
				t.Errorf("%s follows two personas", a.Acct)
			}
			all[a.ID] = true
		}
	}
	if fans[0][0].Acct != "a9@flood4.test" {
		t.Errorf("the first follower is %s, want the crowd's last actor a9@flood4.test", fans[0][0].Acct)
	}
	if _, err := AssignFollowers(1, 41, crowdOf(4, 10)); err == nil || !strings.Contains(err.Error(), "--followers 41") {
		t.Errorf("41 followers of a 40-actor crowd: %v", err)
	}
}

// TestInterleave takes one actor of each origin in turn.
func TestInterleave(t *testing.T) {
	got := Interleave(crowdOf(3, 2))
	var accts []string
	for _, a := range got {
		accts = append(accts, a.Acct)
	}
	want := "a0@flood1.test a0@flood2.test a0@flood3.test a1@flood1.test a1@flood2.test a1@flood3.test"
	if strings.Join(accts, " ") != want {
		t.Errorf("Interleave = %v, want %s", accts, want)
	}
}
