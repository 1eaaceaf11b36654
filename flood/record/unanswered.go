package record

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// MaxUnansweredReasons bounds the reasons a record keeps apart (the
// largest counts; the rest under UnansweredOther): a reason is a short
// fixed phrase, but one the flood could not name is an error's own text,
// and a record must not grow with every such text.
const MaxUnansweredReasons = 8

// maxUnansweredCounted bounds the reasons counted apart while a run goes
// on or records merge, before the record keeps its largest: far more than
// a run meets, so the largest are found whatever the order they came in.
const maxUnansweredCounted = 256

// UnansweredOther is the reason the sends past the reasons kept apart are
// counted under.
const UnansweredOther = "other"

// The reasons the flood names a send's lack of an answer by
// (flood.NoAnswerReason): fixed phrases, so that counts of them add up
// across sends, runs and tools. Any other reason is an error's own text.
const (
	NoAnswerTimeout     = "timeout"
	NoAnswerPublic      = "public target refused"
	NoAnswerRefused     = "connection refused"
	NoAnswerReset       = "connection reset"
	NoAnswerBrokenPipe  = "connection closed while sending"
	NoAnswerNoRoute     = "no route to the host"
	NoAnswerNoSource    = "source address not available"
	NoAnswerUnknownCA   = "TLS: certificate signed by an authority not trusted"
	NoAnswerWrongName   = "TLS: certificate not valid for the host"
	NoAnswerExpired     = "TLS: certificate expired or not yet valid"
	NoAnswerInvalidCert = "TLS: certificate invalid"
	NoAnswerNotTLS      = "TLS: the answer is not TLS (plain HTTP on that port?)"
	NoAnswerUnresolved  = "name not resolved"
	NoAnswerClosed      = "connection closed before an answer"
	// NoAnswerTLSAlert begins the reason of a handshake the server
	// refused; the alert it sent follows in parentheses.
	NoAnswerTLSAlert = "TLS: the server refused the handshake"
)

// NamedNoAnswer reports whether reason is one of the flood's phrases (or
// a class's name, as sends of older floods are counted), not an error's
// own text: the phrases are few, the texts are not.
func NamedNoAnswer(reason string) bool {
	switch reason {
	case NoAnswerTimeout, NoAnswerPublic, NoAnswerRefused, NoAnswerReset, NoAnswerBrokenPipe, NoAnswerNoRoute, NoAnswerNoSource,
		NoAnswerUnknownCA, NoAnswerWrongName, NoAnswerExpired, NoAnswerInvalidCert, NoAnswerNotTLS, NoAnswerUnresolved, NoAnswerClosed,
		ClassConnError.String():
		return true
	}
	return strings.HasPrefix(reason, NoAnswerTLSAlert+" (")
}

// Unanswered counts why sends got no answer (ClassTimeout,
// ClassConnError), by the reason the flood named (Delivery.NoAnswer:
// "connection refused", "TLS: certificate signed by an authority not
// trusted", ...). Its counts sum to those two classes' in the same
// Tally. Nil is empty.
type Unanswered map[string]int64

// WhyUnanswered is why t's sends got no answer: its Unanswered, or, in a
// record from before the reasons were kept, its timeouts and connection
// errors by class name, so that every reader (merge, reports, compare)
// counts every such send the one way; nil when every send was answered.
func (t *TypeRecord) WhyUnanswered() Unanswered {
	if t.Unanswered != nil {
		return t.Unanswered
	}
	var u Unanswered
	u.Add(ClassTimeout.String(), t.Tally.Classes[ClassTimeout])
	u.Add(ClassConnError.String(), t.Tally.Classes[ClassConnError])
	return u
}

// Add counts n sends that got no answer for reason.
func (u *Unanswered) Add(reason string, n int64) {
	if n == 0 {
		return
	}
	if *u == nil {
		*u = Unanswered{}
	}
	if _, ok := (*u)[reason]; !ok && len(*u) >= maxUnansweredCounted {
		reason = UnansweredOther
	}
	(*u)[reason] += n
}

// Merge adds o's counts into u.
func (u *Unanswered) Merge(o Unanswered) {
	for _, reason := range slices.Sorted(maps.Keys(o)) {
		u.Add(reason, o[reason])
	}
}

// Kept is u as a record keeps it: its MaxUnansweredReasons largest
// reasons (ties by name), the rest summed under UnansweredOther; nil
// when u is empty.
func (u Unanswered) Kept() Unanswered {
	if len(u) == 0 {
		return nil
	}
	kept, named := Unanswered{}, 0
	for _, r := range u.ordered() {
		if r != UnansweredOther && named < MaxUnansweredReasons {
			kept[r] = u[r]
			named++
		} else {
			kept[UnansweredOther] += u[r]
		}
	}
	return kept
}

// ordered is u's reasons, most sends first, then by name.
func (u Unanswered) ordered() []string {
	return slices.SortedFunc(maps.Keys(u), func(a, b string) int {
		return cmp.Or(cmp.Compare(u[b], u[a]), strings.Compare(a, b))
	})
}

// String is the reasons, most sends first ("connection refused 12, TLS:
// ... 3"), or "" when there are none.
func (u Unanswered) String() string {
	var b strings.Builder
	for i, r := range u.ordered() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r + " " + strconv.FormatInt(u[r], 10))
	}
	return b.String()
}
