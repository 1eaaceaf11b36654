package audience

import (
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/crowdfed/crowd/flood/record"
)

// originUnder is what the SUT did to deliver to host, an origin in weather
// during the run, from its attempts (sorted, refusals grouped).
func (d *Deliveries) originUnder(h WeatherHistory, host string, attempts []Attempt, end time.Time) record.OriginDeliveries {
	o := record.OriginDeliveries{Host: host, Attempts: len(attempts), Activities: []record.ActivityAttempts{}}
	ph := h.phases(host)
	var recovered time.Time
	for i, p := range ph {
		o.Conditions = append(o.Conditions, kindOrCondition(p.condition))
		if o.Class == "" && p.condition != "" {
			o.Class = kindOf(p.condition)
		}
		if recovered.IsZero() && p.condition == "" && i > 0 {
			recovered = p.from
		}
	}
	o.PerHour = perHour(ph, attempts, end)
	owed := d.owedTo(host)
	linked := d.link(owed, attempts, &o)
	var backlog []time.Time
	for _, p := range owed {
		a := activityAttempts(p, linked[p], h.Start, recovered)
		switch a.Outcome {
		case record.OutcomeDelivered:
			o.Delivered++
		case record.OutcomeAfterRecovery:
			o.DeliveredAfterRecovery++
			backlog = append(backlog, p.created.Add(time.Duration(a.Attempts[a.DeliveredOn-1].AtS*float64(time.Second))))
		default:
			o.Undelivered++
		}
		o.EarlyRetries += earlyRetries(linked[p])
		if len(o.Activities) < record.ActivitiesKept {
			o.Activities = append(o.Activities, a)
		}
	}
	if !recovered.IsZero() {
		o.Recovery = recovery(h.Start, recovered, backlog)
	}
	return o
}

// kindOrCondition is a condition as the record lists it: "clear" for none.
func kindOrCondition(c string) string {
	if c == "" {
		return "clear"
	}
	return c
}

// link ties host's attempts to the posts owed to it: by the activity's id,
// or, for an attempt refused before its request was read, to the one post
// owed and not yet delivered then (left unlinked when there were several).
func (d *Deliveries) link(owed []*post, attempts []Attempt, o *record.OriginDeliveries) map[*post][]linkedAttempt {
	out := map[*post][]linkedAttempt{}
	delivered := map[*post]bool{}
	for _, a := range attempts {
		if a.ID != "" {
			p := d.postOf(a)
			if p == nil {
				o.Unlinked++
				continue
			}
			out[p] = append(out[p], linkedAttempt{a, "id"})
			delivered[p] = delivered[p] || a.Accepted
			continue
		}
		var only *post
		n := 0
		for _, p := range owed {
			if !p.created.After(a.Time) && !delivered[p] {
				only, n = p, n+1
			}
		}
		if n != 1 {
			o.Unlinked++
			continue
		}
		out[only] = append(out[only], linkedAttempt{a, "origin"})
	}
	return out
}

// linkedAttempt is an attempt and how it was tied to its activity.
type linkedAttempt struct {
	Attempt
	by string
}

// activityAttempts is one post's attempts at an origin, and its outcome:
// delivered on attempt n, delivered after the origin recovered (when the
// accepted attempt came after recovered, for a post made before), or not.
func activityAttempts(p *post, linked []linkedAttempt, start, recovered time.Time) record.ActivityAttempts {
	a := record.ActivityAttempts{ID: p.uri, PostedS: seconds(p.created.Sub(start)), Attempts: []record.Attempt{},
		IntervalsS: []float64{}, Outcome: record.OutcomeUndelivered, Linked: "id"}
	for i, l := range linked {
		a.Attempts = append(a.Attempts, record.Attempt{AtS: seconds(l.Time.Sub(p.created)), Status: l.Status, Weather: l.Weather})
		if i > 0 {
			a.IntervalsS = append(a.IntervalsS, seconds(l.Time.Sub(linked[i-1].Time)))
		}
		if l.by != "id" {
			a.Linked = l.by
		}
		if l.Accepted && a.DeliveredOn == 0 {
			a.DeliveredOn = i + 1
			a.Outcome = record.OutcomeDelivered
			if !recovered.IsZero() && p.created.Before(recovered) && !l.Time.Before(recovered) {
				a.Outcome, a.AfterRecoveryS = record.OutcomeAfterRecovery, seconds(l.Time.Sub(recovered))
			}
		}
	}
	return a
}

// earlyRetries counts the attempts that came before the Retry-After of the
// 429 the crowd answered the one before with (limited:D).
func earlyRetries(linked []linkedAttempt) int {
	n := 0
	for i := 1; i < len(linked); i++ {
		prev := linked[i-1]
		if prev.Status != 429 {
			continue
		}
		_, after, ok := cutKind(prev.Weather, "limited")
		if !ok {
			continue
		}
		if wait, err := time.ParseDuration(after); err == nil && linked[i].Time.Sub(prev.Time) < wait {
			n++
		}
	}
	return n
}

// cutKind splits a condition of kind k into its kind and its first
// parameter: "limited:60s" → "limited", "60s".
func cutKind(condition, k string) (string, string, bool) {
	kind, rest, ok := strings.Cut(condition, ":")
	if !ok || kind != k {
		return "", "", false
	}
	param, _, _ := strings.Cut(rest, ":")
	return kind, param, true
}

// perHour is the attempts made while the origin was in weather, per hour
// of that weather (up to end).
func perHour(ph []phase, attempts []Attempt, end time.Time) float64 {
	var bad time.Duration
	n := 0
	for i, p := range ph {
		if p.condition == "" {
			continue
		}
		to := end
		if i+1 < len(ph) && ph[i+1].from.Before(end) {
			to = ph[i+1].from
		}
		if to.After(p.from) {
			bad += to.Sub(p.from)
		}
		for _, a := range attempts {
			if !a.Time.Before(p.from) && a.Time.Before(to) {
				n++
			}
		}
	}
	if bad <= 0 {
		return 0
	}
	return float64(n) / bad.Hours()
}

// recovery is an origin's backlog after it cleared at recovered: the
// deliveries of posts made before that arrived after, at these times.
func recovery(start, recovered time.Time, backlog []time.Time) *record.Recovery {
	r := &record.Recovery{AtS: seconds(recovered.Sub(start)), Backlog: len(backlog)}
	perSecond := map[int64]int{}
	for _, t := range backlog {
		s := int64(t.Sub(recovered) / time.Second)
		perSecond[s]++
		r.PeakPerS = max(r.PeakPerS, perSecond[s])
		r.DrainS = max(r.DrainS, seconds(t.Sub(recovered)))
	}
	return r
}

// healthy is the deliveries owed to origins never in weather; their
// latency by whether their post was made before any origin had weather or
// while some had (posts made after the weather cleared count in neither).
func (d *Deliveries) healthy(h WeatherHistory, weathered []string) (record.HealthyDeliveries, error) {
	bad := map[string]bool{}
	for _, host := range weathered {
		bad[host] = true
	}
	base, under := record.NewHist(), record.NewHist()
	first := h.firstWeather()
	var out record.HealthyDeliveries
	for _, p := range d.order {
		// A post made after the weather cleared is neither: its
		// deliveries queue behind the recovery's backlog.
		var hist *hdr.Histogram
		switch {
		case p.created.Before(first):
			hist = base
		case h.anyAt(p.created):
			hist = under
		}
		for _, f := range p.expected {
			if bad[f.host()] {
				continue
			}
			out.Expected++
			if at, ok := p.reached[f.ID]; ok {
				out.Reached++
				if hist != nil {
					record.RecordDuration(hist, at.Sub(p.created))
				}
			}
		}
	}
	var err error
	if out.Baseline, err = record.EncodeHist(base); err != nil {
		return out, err
	}
	out.Weather, err = record.EncodeHist(under)
	return out, err
}

// maxAttemptTicks bounds the seconds of the attempts plot.
const maxAttemptTicks = 24 * 3600

// attemptTicks counts the attempts per second from start to end, by the
// kind of the weather they met.
func attemptTicks(start, end time.Time, attempts []Attempt) []record.AttemptTick {
	var out []record.AttemptTick
	for _, a := range attempts {
		if a.Time.Before(start) || a.Time.After(end) {
			continue
		}
		t := int(a.Time.Sub(start)/time.Second) + 1
		if t > maxAttemptTicks {
			break
		}
		if len(out) == 0 || out[len(out)-1].T != t {
			out = append(out, record.AttemptTick{T: t, ByClass: map[string]int{}})
		}
		out[len(out)-1].ByClass[kindOf(a.Weather)]++
	}
	return out
}
