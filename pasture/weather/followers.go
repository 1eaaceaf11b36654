package weather

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// FollowersTarget is the selector a rule's target may be instead of a
// share or a list: the origins most of the SUT's followers live on, the
// ones whose outage hurts its deliveries most. "@followers" takes the
// first of them, "@followers:N" the first N; a whole number right after
// the selector is always N (flaky=@followers:1:1 for P = 1).
const FollowersTarget = "@followers"

// parseSelector reads a target that starts with '@': the one selector
// there is, taking one origin until parseRank reads its N.
func (r *Rule) parseSelector(t string) error {
	if t != FollowersTarget {
		return fmt.Errorf("unknown selector %q (the one selector is %s, or %s:N)", t, FollowersTarget, FollowersTarget)
	}
	r.Followers = 1
	return nil
}

// parseRank takes the N of "@followers:N" off the rule's parameters, and
// returns the parameters left for the condition.
func (r *Rule) parseRank(ps []string) ([]string, error) {
	if r.Followers == 0 || len(ps) == 0 {
		return ps, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(ps[0]))
	if err != nil {
		return ps, nil // not a count: the condition's first parameter
	}
	if n < 1 {
		return nil, fmt.Errorf("%s:%d: want 1 or more origins", FollowersTarget, n)
	}
	r.Followers = n
	return ps[1:], nil
}

// NeedsRanking reports whether the spec names origins by @followers: the
// crowd ranks its origins by followers and calls Resolve before Assign.
func (s Spec) NeedsRanking() bool {
	return slices.ContainsFunc(s.Rules, func(r Rule) bool { return r.Followers > 0 })
}

// RankByFollowers orders the origins that have followers (host → how many
// of the crowd's actors there follow the SUT's accounts) most first, ties
// broken by host name, so the same graph gives the same ranking; origins
// with none are left out.
func RankByFollowers(followers map[string]int) []string {
	var out []string
	for h, n := range followers {
		if n > 0 {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(followers[b], followers[a]), strings.Compare(a, b))
	})
	return out
}

// ErrNoFollowers marks an @followers rule the ranking cannot fill: too
// few of the crowd's origins have actors following the SUT's accounts.
var ErrNoFollowers = errors.New("too few origins with followers")

// Resolve turns each @followers rule of spec into the origins it names:
// the first N of ranking (RankByFollowers) that no listed rule and no
// earlier @followers rule took, in the spec's order. The spec returned
// lists those origins, so Assign (and a later restore) gives the same
// forecast without the ranking. It fails, wrapping ErrSpec and
// ErrNoFollowers, when the ranking has too few.
func Resolve(spec Spec, ranking []string) (Spec, error) {
	if !spec.NeedsRanking() {
		return spec, nil
	}
	taken := map[string]bool{}
	for _, r := range spec.Rules {
		for _, h := range r.Origins {
			taken[h] = true
		}
	}
	out := Spec{Rules: make([]Rule, len(spec.Rules))}
	for i, r := range spec.Rules {
		out.Rules[i] = r
		if r.Followers == 0 {
			continue
		}
		var got []string
		for _, h := range ranking {
			if len(got) == r.Followers {
				break
			}
			if !taken[h] {
				taken[h] = true
				got = append(got, h)
			}
		}
		if len(got) < r.Followers {
			return Spec{}, fmt.Errorf("%w: %s: %w: it names %d, and %d origin(s) of the crowd are left with actors that follow the SUT's accounts (Follows in the mix, or crowd run's audience, make them)",
				ErrSpec, r, ErrNoFollowers, r.Followers, len(got))
		}
		out.Rules[i].Followers, out.Rules[i].Origins = 0, got
	}
	return out, nil
}
