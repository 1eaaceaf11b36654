package record

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// RateLimitFields says which rate-limit facts one answer carried.
type RateLimitFields uint8

// The facts an answer may state of the SUT's rate limit.
const (
	SaidLimit      RateLimitFields = 1 << iota // the quota per window
	SaidRemaining                              // what is left of it
	SaidWindow                                 // the window's length (RateLimit-Policy w)
	SaidReset                                  // when the window resets
	SaidIETF                                   // stated in the IETF RateLimit / RateLimit-Policy fields
	SaidRetryAfter                             // the answer also carried Retry-After
)

// RateLimitSample is what one answer said of the SUT's rate limit, in
// X-RateLimit-* (Mastodon, GoToSocial), RateLimit-* or the IETF
// RateLimit / RateLimit-Policy fields. Only the facts in Said are meaningful.
type RateLimitSample struct {
	Said      RateLimitFields
	Limit     int64
	Remaining int64
	Window    time.Duration
	ResetIn   time.Duration // from the answer to the reset (never negative)
	ResetAt   time.Time     // the reset as a wall-clock time
}

// Span is the smallest and largest value seen.
type Span struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// widen returns s widened to v; a nil s becomes {v, v}.
func (s *Span) widen(v int64) *Span {
	if s == nil {
		return &Span{Min: v, Max: v}
	}
	s.Min, s.Max = min(s.Min, v), max(s.Max, v)
	return s
}

// union returns s widened to o (either may be nil); it never aliases o.
func (s *Span) union(o *Span) *Span {
	if o == nil {
		return s
	}
	return s.widen(o.Min).widen(o.Max)
}

// RateLimit is what the answers of one status class advertised of the SUT's
// rate limit. Every field merges exactly: counts add, spans widen, the
// latest reset wins.
type RateLimit struct {
	Answers   int64 `json:"answers"`         // answers of the class carrying any rate-limit field
	IETF      int64 `json:"ietf"`            // of them, stated in the IETF RateLimit / RateLimit-Policy fields
	ResetOnly int64 `json:"reset_only"`      // of them, saying when the limit resets but carrying no Retry-After
	Limit     *Span `json:"limit,omitempty"` // the quota advertised per window
	Remaining *Span `json:"remaining,omitempty"`
	WindowS   *Span `json:"window_s,omitempty"`    // the window advertised, seconds (RateLimit-Policy w)
	ResetInMS *Span `json:"reset_in_ms,omitempty"` // from each answer to the reset it named, ms
	// LastReset is the latest reset time any answer named (UTC).
	LastReset time.Time `json:"last_reset,omitzero"`
}

// add files one answer's sample.
func (r *RateLimit) add(s RateLimitSample) {
	r.Answers++
	if s.Said&SaidIETF != 0 {
		r.IETF++
	}
	if s.Said&SaidLimit != 0 {
		r.Limit = r.Limit.widen(s.Limit)
	}
	if s.Said&SaidRemaining != 0 {
		r.Remaining = r.Remaining.widen(s.Remaining)
	}
	if s.Said&SaidWindow != 0 {
		r.WindowS = r.WindowS.widen(int64(s.Window / time.Second))
	}
	if s.Said&SaidReset != 0 {
		if s.Said&SaidRetryAfter == 0 {
			r.ResetOnly++
		}
		r.ResetInMS = r.ResetInMS.widen(s.ResetIn.Milliseconds())
		if at := s.ResetAt.UTC(); at.After(r.LastReset) {
			r.LastReset = at
		}
	}
}

// merge adds o into r.
func (r *RateLimit) merge(o RateLimit) {
	r.Answers += o.Answers
	r.IETF += o.IETF
	r.ResetOnly += o.ResetOnly
	r.Limit = r.Limit.union(o.Limit)
	r.Remaining = r.Remaining.union(o.Remaining)
	r.WindowS = r.WindowS.union(o.WindowS)
	r.ResetInMS = r.ResetInMS.union(o.ResetInMS)
	if o.LastReset.After(r.LastReset) {
		r.LastReset = o.LastReset
	}
}

// RateLimits are the rate-limit fields the SUT's answers carried, per
// status class (a limit is advertised on 2xx answers too, before it bites).
type RateLimits struct {
	Classes [NumClasses]RateLimit
}

// Add files the sample of one answer of class c; a sample that said
// nothing is not counted.
func (rl *RateLimits) Add(c Class, s RateLimitSample) {
	if s.Said&^SaidRetryAfter == 0 || c >= NumClasses {
		return
	}
	rl.Classes[c].add(s)
}

// Merge adds o into rl, exactly.
func (rl *RateLimits) Merge(o RateLimits) {
	for c := range rl.Classes {
		rl.Classes[c].merge(o.Classes[c])
	}
}

// Answers is the number of answers of any class that carried a rate-limit field.
func (rl RateLimits) Answers() int64 {
	var n int64
	for _, r := range rl.Classes {
		n += r.Answers
	}
	return n
}

// All is every class's RateLimit merged into one.
func (rl RateLimits) All() RateLimit {
	var all RateLimit
	for _, r := range rl.Classes {
		all.merge(r)
	}
	return all
}

// IsZero reports whether no answer carried a rate-limit field (the record
// then leaves the field out).
func (rl RateLimits) IsZero() bool { return rl.Answers() == 0 }

// Advertised states the limit in one phrase, "a limit of 300 per 300 s", or ""
// when no answer advertised one.
func (r RateLimit) Advertised() string {
	if r.Limit == nil {
		return ""
	}
	s := fmt.Sprintf("a limit of %d", r.Limit.Min)
	if r.Limit.Max != r.Limit.Min {
		s = fmt.Sprintf("limits of %d to %d", r.Limit.Min, r.Limit.Max)
	}
	switch {
	case r.WindowS != nil && r.WindowS.Min == r.WindowS.Max:
		s += fmt.Sprintf(" per %d s", r.WindowS.Min)
	case r.WindowS != nil:
		s += fmt.Sprintf(" per %d to %d s", r.WindowS.Min, r.WindowS.Max)
	default:
		s += " per window"
	}
	if r.ResetInMS != nil {
		s += fmt.Sprintf(", resetting within %s", FormatDuration(time.Duration(r.ResetInMS.Max)*time.Millisecond))
	}
	return s
}

// MarshalJSON writes an object keyed by Class.String holding the classes
// whose answers carried a rate-limit field.
func (rl RateLimits) MarshalJSON() ([]byte, error) {
	m := make(map[string]RateLimit)
	for c := Class(0); c < NumClasses; c++ {
		if rl.Classes[c].Answers > 0 {
			m[c.String()] = rl.Classes[c]
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes; an unknown class is an error.
func (rl *RateLimits) UnmarshalJSON(b []byte) error {
	var m map[string]RateLimit
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*rl = RateLimits{}
	for k, v := range m {
		c, ok := classByName(k)
		if !ok {
			return fmt.Errorf("rate limits: unknown status class %q", k)
		}
		rl.Classes[c] = v
	}
	return nil
}

// Summary states, per class whose answers carried rate-limit fields, what
// they advertised: "429: 100 answers, limit 300, remaining 0, reset within
// 5m0s (latest 03:05:00Z), 100 without Retry-After"; "" when none did.
func (rl RateLimits) Summary() string {
	var parts []string
	for c := Class(0); c < NumClasses; c++ {
		r := rl.Classes[c]
		if r.Answers == 0 {
			continue
		}
		s := fmt.Sprintf("%s: %d answers", c, r.Answers)
		if r.IETF > 0 {
			s += fmt.Sprintf(" (%d in the IETF fields)", r.IETF)
		}
		s += spanPhrase(", limit ", r.Limit, "")
		s += spanPhrase(" per ", r.WindowS, " s")
		s += spanPhrase(", remaining ", r.Remaining, "")
		if r.ResetInMS != nil {
			s += fmt.Sprintf(", reset within %s (latest %s)", FormatDuration(time.Duration(r.ResetInMS.Max)*time.Millisecond), r.LastReset.Format(time.RFC3339))
		}
		if r.ResetOnly > 0 {
			s += fmt.Sprintf(", %d without Retry-After", r.ResetOnly)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// spanPhrase is "<pre>N<post>" or "<pre>N-M<post>", "" for no span.
func spanPhrase(pre string, s *Span, post string) string {
	switch {
	case s == nil:
		return ""
	case s.Min == s.Max:
		return fmt.Sprintf("%s%d%s", pre, s.Min, post)
	}
	return fmt.Sprintf("%s%d-%d%s", pre, s.Min, s.Max, post)
}
