package record

import (
	"fmt"
	"strings"
	"time"
)

// CapacityRule holds the thresholds of a ladder's capacity verdict, as a
// capacity test states them (the SUT sustained a rate, topped out at a
// ceiling, and degraded past it gracefully or not):
//
//   - A rung is sustained when its 2xx answers are at least Track of its
//     offered sends (2xx/s tracks offered/s) and the p95 latency of those
//     2xx answers is within the budget: LatencyFactor × the lowest rung's,
//     and never under LatencyFloor. The SUT sustained the highest rung of
//     the unbroken run of sustained rungs from the bottom.
//   - The ceiling is the highest 2xx/s of any rung.
//   - Past the sustained rung, the SUT degraded gracefully when on every
//     rung it shed load by 429 or 503 answers, at least RetryShare of them
//     saying when to come back (Retry-After, or a rate-limit reset as
//     Mastodon and GoToSocial send instead), while the rest of its failures (other 4xx and 5xx,
//     timeouts, refused or reset connections) stayed at most FailShare of
//     the completed sends and its 2xx p95 within the budget. Anything else
//     is not graceful.
//
// A rung on which the generator was the bottleneck (see BottleneckRule)
// says nothing of the SUT: the verdict judges the rungs below it only.
type CapacityRule struct {
	Track         float64
	LatencyFactor float64
	LatencyFloor  time.Duration
	RetryShare    float64
	FailShare     float64
}

// DefaultCapacityRule is the rule ladders are judged by: 2xx ≥ 95 % of
// offered, 2xx p95 within 10 × the lowest rung's (at least 100 ms), shed
// answers saying when to retry ≥ 90 %, other failures ≤ 1 %.
func DefaultCapacityRule() CapacityRule {
	return CapacityRule{Track: 0.95, LatencyFactor: 10, LatencyFloor: 100 * time.Millisecond, RetryShare: 0.9, FailShare: 0.01}
}

// String states the rule with its thresholds.
func (c CapacityRule) String() string {
	return fmt.Sprintf("sustained: 2xx ≥ %s of offered and 2xx p95 ≤ %g× the lowest rung's (at least %s); "+
		"graceful past it: load shed as 429/503 with Retry-After or a rate-limit reset on ≥ %s of them, other failures (4xx, 5xx, timeouts, refused or reset connections) ≤ %s of completed, 2xx p95 within the same budget",
		FormatPercent(c.Track), c.LatencyFactor, FormatDuration(c.LatencyFloor), FormatPercent(c.RetryShare), FormatPercent(c.FailShare))
}

// Capacity is a ladder's capacity verdict (CapacityRule). Rates are the
// rungs' offered rates (all generators), 2xx rates per second of the
// rung's measured window.
type Capacity struct {
	Sustained   float64  `json:"sustained_rate"`               // highest rung sustained; 0 = none
	SustainedOK float64  `json:"sustained_2xx_per_s"`          // its 2xx/s
	Ceiling     float64  `json:"ceiling_2xx_per_s"`            // highest 2xx/s of the judged rungs
	CeilingRate float64  `json:"ceiling_rate"`                 // the rung it was measured on
	Budget      float64  `json:"budget_us"`                    // the 2xx p95 budget (µs)
	Past        int      `json:"rungs_past"`                   // judged rungs above the sustained one
	Graceful    bool     `json:"graceful"`                     // past it, the SUT degraded gracefully (false when Past is 0)
	Degraded    []string `json:"degraded,omitempty"`           // how each rung past it degraded
	GeneratorAt float64  `json:"generator_bound_at,omitempty"` // the first rung the generator limited (not judged, nor any above)
	Advertised  string   `json:"advertised,omitempty"`         // the rate limit the SUT's answers advertised on the judged rungs (RateLimit.Advertised)
	Verdict     string   `json:"verdict"`                      // the verdict in one sentence
	Rule        string   `json:"rule"`                         // CapacityRule.String
}

// Assess judges the rungs of a ladder (in the order run, rates rising).
// Partial rungs are not judged.
func (c CapacityRule) Assess(rows []RungRow) Capacity {
	v := Capacity{Rule: c.String()}
	var judged []RungRow
	for _, row := range rows {
		if row.Record == nil || row.Record.Partial {
			continue
		}
		if row.Record.Bottleneck.Generator {
			v.GeneratorAt = rungRate(row)
			break
		}
		judged = append(judged, row)
	}
	if len(judged) == 0 {
		v.Verdict = "no rung to judge"
		if v.GeneratorAt > 0 {
			v.Verdict += fmt.Sprintf(": the generator was the bottleneck from %s/s, so the SUT's capacity is unknown", FormatNumber(v.GeneratorAt))
		}
		return v
	}
	var limits RateLimits
	for _, row := range judged {
		limits.Merge(row.Record.Overall.RateLimits)
	}
	v.Advertised = limits.All().Advertised()
	budget := max(c.LatencyFactor*float64(judged[0].Record.Overall.Accepted.P95), float64(c.LatencyFloor/time.Microsecond))
	v.Budget = budget
	within := func(r *Record) bool { return r.Overall.Accepted.Count > 0 && float64(r.Overall.Accepted.P95) <= budget }
	top := -1
	for i, row := range judged {
		r := row.Record
		if r.Rates.Throughput > v.Ceiling {
			v.Ceiling, v.CeilingRate = r.Rates.Throughput, rungRate(row)
		}
		if top == i-1 && float64(r.Overall.Tally.OK()) >= c.Track*float64(r.Overall.Counts.Offered) && within(r) {
			top = i
		}
	}
	if top >= 0 {
		v.Sustained, v.SustainedOK = rungRate(judged[top]), judged[top].Record.Rates.Throughput
	}
	past := judged[top+1:]
	v.Past = len(past)
	v.Graceful = len(past) > 0
	for _, row := range past {
		how, ok := c.pastRung(row, within, budget)
		v.Graceful = v.Graceful && ok
		v.Degraded = append(v.Degraded, how)
	}
	v.Verdict = v.verdict(top >= 0, rungRate(judged[0]))
	return v
}

// pastRung judges a rung past the sustained one: how it degraded, and
// whether gracefully (failures other than shedding within FailShare, shed
// answers saying when to come back, accepted latency within budget).
func (c CapacityRule) pastRung(row RungRow, within func(*Record) bool, budget float64) (how string, graceful bool) {
	r := row.Record
	t := r.Overall.Tally
	shed := t.Classes[Class429] + t.Classes[Class503]
	fail := t.Errors() - shed
	var bad []string
	if n := r.Overall.Counts.Completed; n > 0 && float64(fail) > c.FailShare*float64(n) {
		what := failures(t)
		if why := r.Overall.WhyUnanswered().String(); why != "" {
			what += "; no answer: " + why
		}
		bad = append(bad, fmt.Sprintf("%s of the sends failed other than by shedding (%s)", Percent(fail, n), what))
	}
	rl := r.Overall.RateLimits.Classes
	told := t.RetryAfter + rl[Class429].ResetOnly + rl[Class503].ResetOnly
	if shed > 0 && float64(told) < c.RetryShare*float64(shed) {
		bad = append(bad, fmt.Sprintf("%d shed answers, %d with Retry-After or a rate-limit reset", shed, told))
	}
	if !within(r) {
		bad = append(bad, fmt.Sprintf("2xx p95 %s over the %s budget", FormatMicros(r.Overall.Accepted.P95), FormatMicros(int64(budget))))
	}
	how = fmt.Sprintf("at %s/s: 2xx %.1f/s, shed %d (429/503)", FormatNumber(rungRate(row)), r.Rates.Throughput, shed)
	if len(bad) > 0 {
		return how + ": " + strings.Join(bad, "; "), false
	}
	return how, true
}

// verdict is the one-line summary of an assessed capacity; sustained says
// whether any rung was, lowest is the lowest judged rung's rate.
func (v Capacity) verdict(sustained bool, lowest float64) string {
	var b strings.Builder
	if sustained {
		fmt.Fprintf(&b, "sustained %s/s (2xx %.1f/s)", FormatNumber(v.Sustained), v.SustainedOK)
	} else {
		fmt.Fprintf(&b, "sustained no rung (the lowest, %s/s, already fell short)", FormatNumber(lowest))
	}
	fmt.Fprintf(&b, ", ceiling %.1f 2xx/s (at %s/s)", v.Ceiling, FormatNumber(v.CeilingRate))
	switch {
	case v.Past == 0:
		b.WriteString("; every rung judged was sustained: the limit lies above")
	case v.Graceful:
		b.WriteString("; past it: graceful (shed with 429/503 saying when to retry, accepted latency within budget)")
	default:
		b.WriteString("; past it: not graceful")
	}
	if v.Advertised != "" {
		fmt.Fprintf(&b, "; the SUT advertises %s", v.Advertised)
	}
	if v.GeneratorAt > 0 {
		fmt.Fprintf(&b, "; from %s/s the generator was the bottleneck (not judged)", FormatNumber(v.GeneratorAt))
	}
	return b.String()
}

// rungRate is a rung's offered rate over all its generators.
func rungRate(row RungRow) float64 {
	if row.Record != nil {
		return row.Record.OfferedRate()
	}
	return row.Rate
}

// failures lists the tally's failure classes other than shedding, "5xx=120
// conn_error=3".
func failures(t Tally) string {
	var parts []string
	for cl := Class(0); cl < NumClasses; cl++ {
		if cl.OK() || cl == Class429 || cl == Class503 || t.Classes[cl] == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%d", cl, t.Classes[cl]))
	}
	return strings.Join(parts, " ")
}
