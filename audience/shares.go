package audience

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// CrowdActor is one of the crowd's actors as the audience needs it: its
// ActivityPub id (what a Create names as its actor; "https://flood3.test/users/alice")
// and its acct ("alice@flood3.test", what a client API looks up).
type CrowdActor struct {
	ID   string `json:"id"`
	Acct string `json:"acct"`
}

// host is the actor's host name, lower-case, without a port.
func (a CrowdActor) host() string {
	u, err := url.Parse(a.ID)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// Interleave orders actors origin by origin in turn: the first actor of
// each host, then the second of each, and so on (hosts in the order they
// first appear). Consecutive actors are then on different origins, so a
// block of them spreads a persona's follows (and its followers' inboxes)
// over the crowd.
func Interleave(actors []CrowdActor) []CrowdActor {
	var hosts []string
	by := map[string][]CrowdActor{}
	for _, a := range actors {
		h := a.host()
		if _, ok := by[h]; !ok {
			hosts = append(hosts, h)
		}
		by[h] = append(by[h], a)
	}
	out := make([]CrowdActor, 0, len(actors))
	for i := 0; len(out) < len(actors); i++ {
		for _, h := range hosts {
			if i < len(by[h]) {
				out = append(out, by[h][i])
			}
		}
	}
	return out
}

// blocks gives each of n takers k consecutive items (cyclically) of a list
// of size l: disjoint blocks i*k … when n*k <= l, else blocks starting
// evenly spread (i*l/n), which overlap as little as the numbers allow. It
// returns the indices.
func blocks(n, k, l int) [][]int {
	out := make([][]int, n)
	for i := range out {
		start := i * k
		if n*k > l {
			start = i * l / n
		}
		out[i] = make([]int, k)
		for j := range k {
			out[i][j] = (start + j) % l
		}
	}
	return out
}

// ErrShares: the crowd cannot be shared out as asked (a follows count
// below 0 or above the crowd's size); the error names the flag.
var ErrShares = errors.New("cannot share the crowd out")

// FollowShares has each of personas follow its share of crowd
// (AssignFollows, follows each) through c, and waits within ctx for the
// Accepts (Follow). A share that cannot be made wraps ErrShares.
func FollowShares(ctx context.Context, c *Client, personas []Persona, follows int, crowd []CrowdActor, o FollowOptions) ([]FollowResult, error) {
	shares, err := AssignFollows(len(personas), follows, crowd)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrShares, err)
	}
	plans := make([]FollowPlan, len(personas))
	for i := range personas {
		plans[i] = FollowPlan{Persona: &personas[i], Actors: shares[i]}
	}
	return Follow(ctx, c, plans, o)
}

// AssignFollows gives each of n personas its share of the crowd: follows
// distinct actors, disjoint from the other personas' shares when the crowd
// has n×follows actors or more (then a note from one crowd actor reaches
// exactly one persona's home), else shares spread evenly with the least
// overlap. Actors are taken in Interleave order, so a share spans many
// origins. follows larger than the crowd is an error.
func AssignFollows(n, follows int, actors []CrowdActor) ([][]CrowdActor, error) {
	return assign(n, follows, Interleave(actors), "--follows")
}

// FollowsCovering is the fewest follows each of n personas takes
// (AssignFollows) for every one of a crowd of size actors to be followed
// by at least one of them: a real server keeps a boost only from an
// account a local one follows (or of a local post).
func FollowsCovering(n, size int) int {
	if n <= 0 || size <= 0 {
		return 0
	}
	return (size + n - 1) / n
}

// Followed is how many distinct crowd actors the personas follow, the
// Accepts of res counted.
func Followed(res []FollowResult) int {
	seen := map[string]bool{}
	for _, r := range res {
		for _, a := range r.Accepted {
			seen[a.ID] = true
		}
	}
	return len(seen)
}

// AssignFollowers picks, for each of n personas, k crowd actors that will
// follow it (the persona's posts are delivered to them), in Interleave
// order from the end of the crowd, so they are on k different origins when
// the crowd has that many, and apart from the first personas' follow
// shares when the crowd is big enough.
func AssignFollowers(n, k int, actors []CrowdActor) ([][]CrowdActor, error) {
	il := Interleave(actors)
	rev := make([]CrowdActor, len(il))
	for i, a := range il {
		rev[len(il)-1-i] = a
	}
	return assign(n, k, rev, "--followers")
}

func assign(n, k int, list []CrowdActor, flag string) ([][]CrowdActor, error) {
	switch {
	case n < 0 || k < 0:
		return nil, fmt.Errorf("%s %d for %d personas: want >= 0", flag, k, n)
	case k > len(list):
		return nil, fmt.Errorf("%s %d: the crowd has only %d actors", flag, k, len(list))
	}
	out := make([][]CrowdActor, n)
	if k == 0 {
		return out, nil
	}
	for i, idx := range blocks(n, k, len(list)) {
		out[i] = make([]CrowdActor, len(idx))
		for j, x := range idx {
			out[i][j] = list[x]
		}
	}
	return out, nil
}
