package record

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Signatures is what a run signed its requests with (--signature) and how
// its double knocks went (Record.Signatures; SCHEMA.md, "Signatures").
// Counts are of the measured sends the engine handed to the transport
// (Counts.Sent), warm-up excluded.
type Signatures struct {
	// Scheme is --signature: "cavage", "rfc9421" or "both".
	Scheme string `json:"scheme"`
	// FirstCavage and FirstRFC9421 count sends by the scheme their first
	// attempt was signed with.
	FirstCavage  int64 `json:"first_cavage"`
	FirstRFC9421 int64 `json:"first_rfc9421"`
	// FellBack counts sends whose RFC 9421 first attempt was answered 4xx
	// (not 429) and that were sent again signed draft-cavage (both).
	FellBack int64 `json:"fell_back"`
	// FellForward counts sends whose draft-cavage first attempt (to a host
	// remembered as cavage-first) was answered 4xx (not 429) and that were
	// sent again signed RFC 9421 (both).
	FellForward int64 `json:"fell_forward"`
	// SecondAccepted counts second attempts answered 2xx.
	SecondAccepted int64 `json:"second_accepted"`
	// Triggers are the first answers that caused a second attempt, by
	// status code ("401": n).
	Triggers map[string]int64 `json:"triggers,omitempty"`
	// Resigned counts signatures made at send time, in the sender: every
	// second attempt's, and a first attempt's signed again because its host
	// was remembered with the other scheme after it was signed ahead.
	// ResignSeconds is the time they took. Both are the crowd's own work
	// inside the sends' latency (see SCHEMA.md).
	Resigned      int64   `json:"resigned"`
	ResignSeconds float64 `json:"resign_s"`
	// CavageFirstHosts counts the target hosts remembered as cavage-first
	// when the run ended (both); a merged record sums its generators'.
	CavageFirstHosts int `json:"cavage_first_hosts"`
}

// Fell is how many sends were sent a second time, either way.
func (s *Signatures) Fell() int64 { return s.FellBack + s.FellForward }

// AddTrigger counts a first answer of status code that caused a second
// attempt.
func (s *Signatures) AddTrigger(code int, n int64) {
	if n == 0 {
		return
	}
	if s.Triggers == nil {
		s.Triggers = map[string]int64{}
	}
	s.Triggers[strconv.Itoa(code)] += n
}

// Summary is one line for the table and the report: the scheme, the
// first attempts by scheme, and the second attempts with what caused them.
func (s *Signatures) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "signature %s: first attempts %d rfc9421, %d cavage", s.Scheme, s.FirstRFC9421, s.FirstCavage)
	if s.Scheme == "both" || s.Fell() > 0 {
		fmt.Fprintf(&b, "; fell back to cavage %d", s.FellBack)
		if s.FellForward > 0 {
			fmt.Fprintf(&b, ", knocked again with rfc9421 %d", s.FellForward)
		}
		fmt.Fprintf(&b, ", second attempts accepted %d", s.SecondAccepted)
		if len(s.Triggers) > 0 {
			var parts []string
			for _, code := range slices.Sorted(maps.Keys(s.Triggers)) {
				parts = append(parts, fmt.Sprintf("%s×%d", code, s.Triggers[code]))
			}
			fmt.Fprintf(&b, " (after %s)", strings.Join(parts, ", "))
		}
		fmt.Fprintf(&b, "; %d cavage-first hosts", s.CavageFirstHosts)
	}
	if s.Resigned > 0 {
		fmt.Fprintf(&b, "; %d signed at send time (%.1f ms each)", s.Resigned, 1000*s.ResignSeconds/float64(s.Resigned))
	}
	return b.String()
}

// Sub is s less an earlier snapshot o of the same counters (a ladder's
// rung of a run whose knocker counts from its start); Scheme and
// CavageFirstHosts stay s's.
func (s Signatures) Sub(o Signatures) Signatures {
	s.FirstCavage -= o.FirstCavage
	s.FirstRFC9421 -= o.FirstRFC9421
	s.FellBack -= o.FellBack
	s.FellForward -= o.FellForward
	s.SecondAccepted -= o.SecondAccepted
	s.Resigned -= o.Resigned
	s.ResignSeconds -= o.ResignSeconds
	if len(s.Triggers) > 0 {
		t := maps.Clone(s.Triggers)
		for k, v := range o.Triggers {
			if t[k] -= v; t[k] == 0 {
				delete(t, k)
			}
		}
		s.Triggers = t
	}
	return s
}

// mergeSignatures adds up the generators' sections; nil when none has
// one. Schemes that differ are joined with "+".
func mergeSignatures(recs []*Record) *Signatures {
	var out *Signatures
	for _, r := range recs {
		s := r.Signatures
		if s == nil {
			continue
		}
		if out == nil {
			out = &Signatures{Scheme: s.Scheme}
		} else if !slices.Contains(strings.Split(out.Scheme, "+"), s.Scheme) {
			out.Scheme += "+" + s.Scheme
		}
		out.FirstCavage += s.FirstCavage
		out.FirstRFC9421 += s.FirstRFC9421
		out.FellBack += s.FellBack
		out.FellForward += s.FellForward
		out.SecondAccepted += s.SecondAccepted
		out.Resigned += s.Resigned
		out.ResignSeconds += s.ResignSeconds
		out.CavageFirstHosts += s.CavageFirstHosts
		for code, n := range s.Triggers {
			c, _ := strconv.Atoi(code)
			out.AddTrigger(c, n)
		}
	}
	return out
}
