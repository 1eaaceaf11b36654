package flood

import (
	"bytes"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/crowdfed/crowd/flood/record"
)

// maxLimitSpan bounds a window or reset a SUT may state (a year): anything
// longer is taken as garbage, and keeps time.Duration from overflowing.
const maxLimitSpan = 365 * 24 * time.Hour

// epochThreshold tells an epoch reset from a delta one: no window lasts
// 30 years, and no epoch time is that small.
const epochThreshold = 1e9

// parseRateLimit reads what an answer says of the SUT's rate limit, once
// per answer: X-RateLimit-* and RateLimit-* (Mastodon, GoToSocial and the
// draft's early form; Reset as an ISO 8601 time, epoch seconds or seconds
// from now), the IETF RateLimit and RateLimit-Policy structured fields
// (draft-ietf-httpapi-ratelimit-headers, RFC 8941 syntax, either of the
// draft's shapes), and whether Retry-After came with them. A field it cannot
// read is left out, never guessed. clock tells when the answer came; it is
// read only for an answer that names a reset.
func parseRateLimit(h http.Header, clock func() time.Time) record.RateLimitSample {
	var s record.RateLimitSample
	var now time.Time
	at := func() time.Time {
		if now.IsZero() {
			now = clock()
		}
		return now
	}
	if _, ok := h["Retry-After"]; ok {
		s.Said |= record.SaidRetryAfter
	}
	// Keys as net/http stores them (canonical), read by index: this runs on
	// every answer, and most carry none of them.
	for _, keys := range [...][3]string{
		{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
		{"Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset"},
	} {
		if v, ok := count(first(h, keys[0])); ok && s.Said&record.SaidLimit == 0 {
			s.Limit, s.Said = v, s.Said|record.SaidLimit
		}
		if v, ok := count(first(h, keys[1])); ok && s.Said&record.SaidRemaining == 0 {
			s.Remaining, s.Said = v, s.Said|record.SaidRemaining
		}
		if v := first(h, keys[2]); v != "" && s.Said&record.SaidReset == 0 {
			if reset, ok := resetTime(v, at()); ok {
				setReset(&s, reset, at())
			}
		}
	}
	if v, ok := h["Ratelimit"]; ok {
		ietfLimit(&s, v, at())
	}
	if v, ok := h["Ratelimit-Policy"]; ok {
		ietfPolicy(&s, v)
	}
	return s
}

// first is the first value of the header stored under the canonical key.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// count reads a non-negative integer, the first member of a list ("300" or
// "300, 300;w=300" as some servers send the draft's early form).
func count(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	if i := strings.IndexAny(v, ",;"); i >= 0 {
		v = v[:i]
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil && n >= 0
}

// resetTime reads a reset: an ISO 8601 time (Mastodon), epoch seconds
// (GoToSocial, GitHub) or seconds from now (the draft, most others).
func resetTime(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if strings.ContainsAny(v, "T-:") {
		at, err := time.Parse(time.RFC3339Nano, v)
		return at, err == nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return time.Time{}, false
	}
	if f >= epochThreshold {
		if f > 1e11 { // past the year 5000: no epoch a server means
			return time.Time{}, false
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)), true
	}
	d, ok := seconds(f)
	return now.Add(d), ok
}

// seconds converts a count of seconds a SUT stated, refusing what no limit
// means (negative, or past maxLimitSpan).
func seconds(f float64) (time.Duration, bool) {
	if f < 0 || f > maxLimitSpan.Seconds() || math.IsNaN(f) {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// setReset files a reset at time at; one already past resets now. A reset
// beyond maxLimitSpan is garbage and left out.
func setReset(s *record.RateLimitSample, at, now time.Time) {
	d := max(at.Sub(now), 0)
	if d > maxLimitSpan {
		return
	}
	s.ResetAt, s.ResetIn = now.Add(d), d
	s.Said |= record.SaidReset
}

// ietfLimit reads the IETF RateLimit field: the draft's dictionary shape
// (limit=100, remaining=50, reset=30) or its list shape ("policy";r=50;t=30,
// the most constrained item when there are several).
func ietfLimit(s *record.RateLimitSample, v []string, now time.Time) {
	if d, err := httpsfv.UnmarshalDictionary(v); err == nil {
		said := false
		for key, field := range map[string]record.RateLimitFields{"limit": record.SaidLimit, "remaining": record.SaidRemaining, "reset": record.SaidReset} {
			m, ok := d.Get(key)
			if !ok {
				continue
			}
			it, ok := m.(httpsfv.Item)
			n, isInt := it.Value.(int64)
			if !ok || !isInt || n < 0 {
				continue
			}
			said = true
			setIETF(s, field, n, now)
		}
		if said {
			return
		}
	}
	l, err := httpsfv.UnmarshalList(v)
	if err != nil {
		return
	}
	best := int64(-1)
	var bestItem httpsfv.Item
	for _, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		if r, ok := intParam(it.Params, "r"); ok && (best < 0 || r < best) {
			best, bestItem = r, it
		}
	}
	if best < 0 {
		return
	}
	setIETF(s, record.SaidRemaining, best, now)
	if t, ok := intParam(bestItem.Params, "t"); ok {
		setIETF(s, record.SaidReset, t, now)
	}
}

// ietfPolicy reads the IETF RateLimit-Policy field: items with q (quota)
// and w (window) parameters, or the early drafts' bare quota with w; the
// smallest quota binds.
func ietfPolicy(s *record.RateLimitSample, v []string) {
	l, err := httpsfv.UnmarshalList(v)
	if err != nil {
		return
	}
	best := int64(-1)
	var window int64 = -1
	for _, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		q, ok := intParam(it.Params, "q")
		if n, isInt := it.Value.(int64); !ok && isInt && n >= 0 {
			q, ok = n, true
		}
		if !ok || (best >= 0 && q >= best) {
			continue
		}
		best, window = q, -1
		if w, ok := intParam(it.Params, "w"); ok {
			window = w
		}
	}
	if best < 0 {
		return
	}
	setIETF(s, record.SaidLimit, best, time.Time{})
	if d, ok := seconds(float64(window)); ok && window >= 0 {
		s.Window = d
		s.Said |= record.SaidWindow
	}
}

// setIETF files one fact of the IETF fields; they override the older
// headers' (the newer form is the one a server means).
func setIETF(s *record.RateLimitSample, field record.RateLimitFields, n int64, now time.Time) {
	switch field {
	case record.SaidLimit:
		s.Limit = n
	case record.SaidRemaining:
		s.Remaining = n
	case record.SaidReset:
		d, ok := seconds(float64(n))
		if !ok {
			return
		}
		setReset(s, now.Add(d), now)
	}
	s.Said |= field | record.SaidIETF
}

// intParam is a non-negative integer parameter of an item.
func intParam(p *httpsfv.Params, key string) (int64, bool) {
	if p == nil {
		return 0, false
	}
	v, ok := p.Get(key)
	n, isInt := v.(int64)
	return n, ok && isInt && n >= 0
}

// rateLimitField reports whether an answer's header field name (any case)
// is one parseRateLimit reads: Retry-After, X-RateLimit-*, RateLimit and
// RateLimit-*. The answers the dispatcher reads keep only those
// (h1.Transport.ReadArrived).
func rateLimitField(name []byte) bool {
	return bytes.EqualFold(name, []byte("Retry-After")) || hasPrefixFold(name, "X-RateLimit-") || hasPrefixFold(name, "RateLimit")
}

// hasPrefixFold reports whether b begins with prefix, in any case.
func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}
