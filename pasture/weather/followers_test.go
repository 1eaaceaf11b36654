package weather

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseFollowersSelector(t *testing.T) {
	for _, c := range []struct {
		name, in, back string
		want           Rule
	}{
		// The origin most of the SUT's followers live on.
		{"one", "down=@followers", "down=@followers:1", Rule{Condition: Condition{Kind: Down}, Followers: 1}},
		// The three with most.
		{"three", "gone=@followers:3", "", Rule{Condition: Condition{Kind: Gone}, Followers: 3}},
		// The count comes before the condition's parameters.
		{"count then delay", "slow=@followers:2:10s", "slow=@followers:2:10s:0.5",
			Rule{Condition: Condition{Kind: Slow, Delay: 10 * time.Second, DocShare: DefaultSlowDocShare}, Followers: 2}},
		// Without a count, the first parameter is the condition's.
		{"no count", "flaky=@followers:0.25", "flaky=@followers:1:0.25", Rule{Condition: Condition{Kind: Flaky, P: 0.25}, Followers: 1}},
		// A whole number after the selector is always the count.
		{"count is whole", "flaky=@followers:1:1", "", Rule{Condition: Condition{Kind: Flaky, P: 1}, Followers: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSpec(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Rules) != 1 || fmt.Sprint(s.Rules[0]) != fmt.Sprint(c.want) {
				t.Fatalf("ParseSpec(%q) = %+v, want %+v", c.in, s.Rules, c.want)
			}
			back := c.back
			if back == "" {
				back = c.in
			}
			if s.String() != back || !s.NeedsRanking() {
				t.Errorf("String() = %q (needs ranking %v), want %q", s.String(), s.NeedsRanking(), back)
			}
			if again, err := ParseSpec(s.String()); err != nil || fmt.Sprint(again) != fmt.Sprint(s) {
				t.Errorf("%q does not read back: %v %v", s.String(), again, err)
			}
		})
	}
}

func TestParseFollowersSelectorRefuses(t *testing.T) {
	for _, c := range []struct {
		in, names string // the error names this
	}{
		{"down=@followers:0", "want 1 or more"},        // no origin
		{"down=@followers:-2", "want 1 or more"},       // fewer than none
		{"down=@fans", "unknown selector"},             // not the selector
		{"down=@followers:2:5s", "takes no parameter"}, // down has none, after the count
		{"down=a.test+@followers", "host name"},        // a selector is a whole target
	} {
		_, err := ParseSpec(c.in)
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), c.names) {
			t.Errorf("ParseSpec(%q) = %v, want ErrSpec naming %q", c.in, err, c.names)
		}
	}
}

func TestRankByFollowers(t *testing.T) {
	for _, c := range []struct {
		name      string
		followers map[string]int
		want      string
	}{
		// Most followers first.
		{"by count", map[string]int{"flood1.test": 1, "flood2.test": 5, "flood3.test": 3}, "flood2.test,flood3.test,flood1.test"},
		// Ties broken by host name, so a ranking never depends on map order.
		{"ties by name", map[string]int{"flood9.test": 2, "flood10.test": 2, "flood3.test": 2}, "flood10.test,flood3.test,flood9.test"},
		// Origins without followers are not ranked.
		{"none left out", map[string]int{"flood1.test": 0, "flood2.test": 1}, "flood2.test"},
		// No follow graph at all: nothing ranked.
		{"empty", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(RankByFollowers(c.followers), ","); got != c.want {
				t.Errorf("ranking %s, want %s", got, c.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	ranking := []string{"flood4.test", "flood2.test", "flood7.test"}
	for _, c := range []struct {
		name, spec, want string // want: the resolved spec, or the error it names
		fails            bool
	}{
		// The first of the ranking.
		{"top", "down=@followers", "down=flood4.test", false},
		// A second selector takes the next ones.
		{"in order", "down=@followers,slow=@followers:2:5s", "down=flood4.test,slow=flood2.test+flood7.test:5s:0.5", false},
		// A listed origin is not taken again, whatever its rule's place.
		{"listed first", "down=@followers:2,gone=flood4.test", "down=flood2.test+flood7.test,gone=flood4.test", false},
		// Shares are left to Assign.
		{"shares kept", "down=@followers,flaky=10%", "down=flood4.test,flaky=10%:0.5", false},
		// Asking for more origins than have followers.
		{"too few", "down=@followers:4", "left with actors", true},
		// No selector: the spec as it is.
		{"none", "down=flood1.test", "down=flood1.test", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec, err := ParseSpec(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Resolve(spec, ranking)
			if c.fails {
				if !errors.Is(err, ErrSpec) || !errors.Is(err, ErrNoFollowers) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Resolve(%s) = %v, want ErrSpec and ErrNoFollowers naming %q", c.spec, err, c.want)
				}
				return
			}
			if err != nil || got.String() != c.want || got.NeedsRanking() {
				t.Fatalf("Resolve(%s) = %q %v, want %q", c.spec, got, err, c.want)
			}
			if _, err := Assign(got, hosts(20), 1); err != nil {
				t.Errorf("the resolved spec does not assign: %v", err)
			}
		})
	}
}

// TestAssignRefusesAnUnresolvedSelector: Assign does not guess the
// origins a selector names (a share rule would take one at random).
func TestAssignRefusesAnUnresolvedSelector(t *testing.T) {
	spec, err := ParseSpec("down=@followers")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Assign(spec, hosts(20), 1); !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "Resolve") {
		t.Errorf("Assign of an unresolved @followers = %v, want ErrSpec naming Resolve", err)
	}
}
