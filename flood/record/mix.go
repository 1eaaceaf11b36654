package record

import (
	"math"
	"strconv"
	"strings"
)

// ActivityKind is an activity type the generator sends; its string is the
// ActivityStreams type, the key of the record's per-type breakdown.
type ActivityKind string

// The activity kinds of the mix.
const (
	TypeCreate ActivityKind = "Create"
	TypeLike   ActivityKind = "Like"
	TypeFollow ActivityKind = "Follow"
)

// Mix is the weighted mix of activity types (--mix): each send is a
// Create, Like or Follow with probability weight / sum of weights.
type Mix struct {
	Create, Like, Follow float64
}

// DefaultMix is create=6,like=3,follow=1.
func DefaultMix() Mix { return Mix{Create: 6, Like: 3, Follow: 1} }

// maxWeight bounds one weight, so the sum stays an exact, finite float.
const maxWeight = 1e9

// ParseMix reads a --mix: comma-separated type=weight pairs, types create,
// like and follow (any case, each at most once), weights numbers >= 0 with
// a positive sum; a type not named has weight 0. Errors are *UsageError.
func ParseMix(s string) (Mix, error) {
	var m Mix
	seen := map[string]bool{}
	if strings.TrimSpace(s) == "" {
		return m, usage(s, "--mix is empty: want e.g. create=6,like=3,follow=1")
	}
	for f := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(f), "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok {
			return m, usage(s, "%q is not type=weight", f)
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(w) || w < 0 || w > maxWeight {
			return m, usage(s, "weight %q of %s: want a number from 0 to %g", val, name, float64(maxWeight))
		}
		if seen[name] {
			return m, usage(s, "%s appears twice", name)
		}
		seen[name] = true
		switch name {
		case "create":
			m.Create = w
		case "like":
			m.Like = w
		case "follow":
			m.Follow = w
		default:
			return m, usage(s, "unknown activity type %q: want create, like or follow", name)
		}
	}
	if m.Create+m.Like+m.Follow <= 0 {
		return m, usage(s, "every weight is 0")
	}
	return m, nil
}

// String writes the mix as ParseMix reads it, types in a fixed order,
// omitting zero weights.
func (m Mix) String() string {
	var parts []string
	for _, t := range []struct {
		name string
		w    float64
	}{{"create", m.Create}, {"like", m.Like}, {"follow", m.Follow}} {
		if t.w > 0 {
			parts = append(parts, t.name+"="+strconv.FormatFloat(t.w, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}
