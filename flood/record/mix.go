package record

import (
	"math"
	"strconv"
	"strings"
)

// ActivityKind is an activity type the generator sends; its string is the
// ActivityStreams type (Reply and Media: a Create of such a note), the key
// of the record's per-type breakdown.
type ActivityKind string

// The activity kinds of the mix.
const (
	TypeCreate ActivityKind = "Create"
	TypeLike   ActivityKind = "Like"
	TypeFollow ActivityKind = "Follow"
	// TypeAnnounce: a boost of a persona's post or of a crowd note the SUT
	// has not seen.
	TypeAnnounce ActivityKind = "Announce"
	// TypeUndo: the Undo of a Like, Announce or Follow sent earlier in the run.
	TypeUndo ActivityKind = "Undo"
	// TypeDelete: of a note sent earlier in the run, or of a leaver (an
	// account deletion, self-signed).
	TypeDelete ActivityKind = "Delete"
	// TypeUpdate: an edit of a note sent earlier in the run, or a profile
	// change (Update of the Person).
	TypeUpdate ActivityKind = "Update"
	// TypeReply: a Create of a note in reply to a persona's post or a crowd
	// note, at the end of a thread whose crowd parents the SUT must fetch.
	TypeReply ActivityKind = "Reply"
	// TypeMedia: a Create of a note with image attachments the SUT downloads.
	TypeMedia ActivityKind = "Media"
)

// TypeForged is the breakdown key of every forged request (--tamper), of
// any type: no kind of the mix, a row apart so that its latencies and 401s
// stay out of the honest types' (and its refusals out of the errors a gate
// counts over all types).
const TypeForged ActivityKind = "Forged"

// Mix is the weighted mix of activity types (--mix): each send is of a
// kind with probability its weight / sum of weights.
type Mix struct {
	Create, Like, Follow float64
	// The vocabulary beyond the first three (see the kinds above).
	Announce, Undo, Delete, Update, Reply, Media float64
}

// KindWeight is one kind of a Mix and its weight.
type KindWeight struct {
	Name   string // as --mix names it
	Kind   ActivityKind
	Weight float64
}

// Weights lists every kind of the mix with its weight, in --mix order.
func (m Mix) Weights() []KindWeight {
	return []KindWeight{{"create", TypeCreate, m.Create}, {"like", TypeLike, m.Like}, {"follow", TypeFollow, m.Follow},
		{"announce", TypeAnnounce, m.Announce}, {"undo", TypeUndo, m.Undo}, {"delete", TypeDelete, m.Delete},
		{"update", TypeUpdate, m.Update}, {"reply", TypeReply, m.Reply}, {"media", TypeMedia, m.Media}}
}

// Total is the sum of the weights.
func (m Mix) Total() float64 {
	t := 0.0
	for _, k := range m.Weights() {
		t += k.Weight
	}
	return t
}

// weightOf points at the weight of the kind --mix names name; nil for none.
func (m *Mix) weightOf(name string) *float64 {
	for _, p := range []struct {
		n string
		w *float64
	}{{"create", &m.Create}, {"like", &m.Like}, {"follow", &m.Follow}, {"announce", &m.Announce}, {"undo", &m.Undo},
		{"delete", &m.Delete}, {"update", &m.Update}, {"reply", &m.Reply}, {"media", &m.Media}} {
		if p.n == name {
			return p.w
		}
	}
	return nil
}

// DefaultMix is create=6,like=3,follow=1.
func DefaultMix() Mix { return Mix{Create: 6, Like: 3, Follow: 1} }

// maxWeight bounds one weight, so the sum stays an exact, finite float.
const maxWeight = 1e9

// ParseMix reads a --mix: comma-separated type=weight pairs, types create,
// like, follow, announce, undo, delete, update, reply and media (any case, each at most once), weights numbers >= 0 with
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
		p := m.weightOf(name)
		if p == nil {
			return m, usage(s, "unknown activity type %q: want create, like, follow, announce, undo, delete, update, reply or media", name)
		}
		*p = w
	}
	if m.Total() <= 0 {
		return m, usage(s, "every weight is 0")
	}
	return m, nil
}

// String writes the mix as ParseMix reads it, types in a fixed order,
// omitting zero weights.
func (m Mix) String() string {
	var parts []string
	for _, t := range m.Weights() {
		if t.Weight > 0 {
			parts = append(parts, t.Name+"="+strconv.FormatFloat(t.Weight, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}
