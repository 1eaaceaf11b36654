package record

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// MaxUnansweredReasons bounds the reasons an Unanswered keeps apart: a
// reason is a short fixed phrase, but one the flood could not name is an
// error's own text, and a record must not grow with every such text.
const MaxUnansweredReasons = 8

// UnansweredOther is the reason the sends past MaxUnansweredReasons
// distinct ones are counted under.
const UnansweredOther = "other"

// Unanswered counts why sends got no answer (ClassTimeout,
// ClassConnError), by the reason the flood named (Delivery.NoAnswer:
// "connection refused", "TLS: certificate signed by an authority not
// trusted", ...). Its counts sum to those two classes' in the same
// Tally. Nil is empty.
type Unanswered map[string]int64

// Add counts n sends that got no answer for reason.
func (u *Unanswered) Add(reason string, n int64) {
	if n == 0 {
		return
	}
	if *u == nil {
		*u = Unanswered{}
	}
	if _, ok := (*u)[reason]; !ok && len(*u) >= MaxUnansweredReasons {
		reason = UnansweredOther
	}
	(*u)[reason] += n
}

// Merge adds o's counts into u, in o's reasons' order, so that the
// reasons kept apart do not depend on a map's iteration.
func (u *Unanswered) Merge(o Unanswered) {
	for _, reason := range slices.Sorted(maps.Keys(o)) {
		u.Add(reason, o[reason])
	}
}

// String is the reasons, most sends first ("connection refused 12, TLS:
// ... 3"), or "" when there are none.
func (u Unanswered) String() string {
	reasons := slices.SortedFunc(maps.Keys(u), func(a, b string) int {
		return cmp.Or(cmp.Compare(u[b], u[a]), strings.Compare(a, b))
	})
	var b strings.Builder
	for i, r := range reasons {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r + " " + strconv.FormatInt(u[r], 10))
	}
	return b.String()
}
