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
	var recoveries []time.Time // each return to clear after bad weather
	for i, p := range ph {
		o.Conditions = append(o.Conditions, kindOrCondition(p.condition))
		if o.Class == "" && p.condition != "" {
			o.Class = kindOf(p.condition)
		}
		if i > 0 && p.condition == "" && ph[i-1].condition != "" {
			recoveries = append(recoveries, p.from)
		}
	}
	o.PerHour = perHour(ph, attempts, end)
	backlogs := make([][]time.Time, len(recoveries))
	for _, u := range d.units(host, attempts, &o) {
		a := unitAttempts(u, h.Start, recoveries)
		switch a.Outcome {
		case record.OutcomeDelivered:
			o.Delivered++
		case record.OutcomeAfterRecovery:
			o.DeliveredAfterRecovery++
			i := lastBefore(recoveries, u.accepted())
			backlogs[i] = append(backlogs[i], u.accepted())
		default:
			o.Undelivered++
		}
		o.EarlyRetries += earlyRetries(u.attempts)
		if len(o.Activities) < record.ActivitiesKept {
			o.Activities = append(o.Activities, a)
		}
	}
	for i, r := range recoveries {
		o.Recoveries = append(o.Recoveries, recovery(h.Start, r, backlogs[i]))
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

// unit is one delivery job the SUT owed an origin: a post to one inbox
// there (to the origin, when one follower there is owed the post), with
// the attempts tied to it.
type unit struct {
	p        *post
	inbox    string // "" when tied by origin
	by       string // how its attempts were tied: "id" or "origin"
	attempts []Attempt
	arrived  bool // every follower owed at the origin has it (Arrived), seen or not here
}

// accepted is when the unit's first accepted attempt arrived (zero: none).
func (u *unit) accepted() time.Time {
	for _, a := range u.attempts {
		if a.Accepted {
			return a.Time
		}
	}
	return time.Time{}
}

// units ties host's attempts to the delivery jobs owed to it. A post owed
// to one follower at host is one job, whatever inbox it went to; a post
// owed to several is a job per inbox it was sent to. A refusal (no request
// read) is tied to the one single-follower post owed and not yet accepted
// then, and left unlinked when there were several (or only multi-follower
// posts). Each post owed gets a job even when no attempt came.
func (d *Deliveries) units(host string, attempts []Attempt, o *record.OriginDeliveries) []*unit {
	var order []*unit
	byKey := map[[2]string]*unit{}
	get := func(p *post, inbox string) *unit {
		if followersAt(p, host) == 1 {
			inbox = ""
		}
		k := [2]string{p.uri, inbox}
		if u := byKey[k]; u != nil {
			return u
		}
		u := &unit{p: p, inbox: inbox, by: "id", arrived: reachedAt(p, host)}
		byKey[k] = u
		order = append(order, u)
		return u
	}
	owed := d.owedTo(host)
	for _, a := range attempts {
		if a.ID != "" {
			if p := d.postOf(a); p != nil {
				u := get(p, a.inbox)
				u.attempts = append(u.attempts, a)
			} else {
				o.Unlinked++
			}
			continue
		}
		var only *post
		n := 0
		for _, p := range owed {
			if followersAt(p, host) == 1 && !p.posted.After(a.Time) {
				if u := byKey[[2]string{p.uri, ""}]; u == nil || u.accepted().IsZero() {
					only, n = p, n+1
				}
			}
		}
		if n != 1 {
			o.Unlinked++
			continue
		}
		u := get(only, "")
		u.attempts = append(u.attempts, a)
		u.by = "origin"
	}
	for _, p := range owed {
		if !hasUnit(order, p) {
			get(p, "")
		}
	}
	return order
}

// hasUnit reports whether some unit is p's.
func hasUnit(units []*unit, p *post) bool {
	for _, u := range units {
		if u.p == p {
			return true
		}
	}
	return false
}

// followersAt is how many of p's expected followers live at host.
func followersAt(p *post, host string) int {
	n := 0
	for _, f := range p.expected {
		if f.host() == host {
			n++
		}
	}
	return n
}

// reachedAt reports whether every follower of p at host has it.
func reachedAt(p *post, host string) bool {
	for _, f := range p.expected {
		if _, ok := p.reached[f.ID]; f.host() == host && !ok {
			return false
		}
	}
	return true
}

// lastBefore is the index of the last of times (sorted) at or before t.
func lastBefore(times []time.Time, t time.Time) int {
	i := 0
	for j, r := range times {
		if !r.After(t) {
			i = j
		}
	}
	return i
}

// unitAttempts is one delivery job's attempts and its outcome: delivered
// on attempt n; delivered after the origin recovered (the accepted attempt
// came after a recovery that followed the post); or not delivered. A job
// whose followers all have the post though no accepted attempt was seen
// (entries the stream lost) is delivered on an unknown attempt (0).
func unitAttempts(u *unit, start time.Time, recoveries []time.Time) record.ActivityAttempts {
	p := u.p
	a := record.ActivityAttempts{ID: p.uri, Inbox: u.inbox, PostedS: seconds(p.posted.Sub(start)), Attempts: []record.Attempt{},
		IntervalsS: []float64{}, Outcome: record.OutcomeUndelivered}
	if len(u.attempts) > 0 {
		a.Linked = u.by
	}
	for i, at := range u.attempts {
		a.Attempts = append(a.Attempts, record.Attempt{AtS: seconds(at.Time.Sub(p.posted)), Status: at.Status, Weather: at.Weather})
		if i > 0 {
			a.IntervalsS = append(a.IntervalsS, seconds(at.Time.Sub(u.attempts[i-1].Time)))
		}
		if at.Accepted && a.DeliveredOn == 0 {
			a.DeliveredOn = i + 1
			a.Outcome = record.OutcomeDelivered
			if r := recoveries[:countBefore(recoveries, at.Time)]; len(r) > 0 && p.posted.Before(r[len(r)-1]) {
				a.Outcome, a.AfterRecoveryS = record.OutcomeAfterRecovery, seconds(at.Time.Sub(r[len(r)-1]))
			}
		}
	}
	if a.Outcome == record.OutcomeUndelivered && u.arrived {
		a.Outcome = record.OutcomeDelivered // on an attempt the account did not see
	}
	return a
}

// countBefore is how many of times (sorted) are at or before t.
func countBefore(times []time.Time, t time.Time) int {
	n := 0
	for _, r := range times {
		if !r.After(t) {
			n++
		}
	}
	return n
}

// earlyRetries counts the attempts that came before the Retry-After of the
// 429 the crowd answered the one before with (limited:D), in the whole
// seconds the header says.
func earlyRetries(attempts []Attempt) int {
	n := 0
	for i := 1; i < len(attempts); i++ {
		prev := attempts[i-1]
		if prev.Status != 429 {
			continue
		}
		_, after, ok := cutKind(prev.Weather, "limited")
		if !ok {
			continue
		}
		wait, err := time.ParseDuration(after)
		if err == nil && attempts[i].Time.Sub(prev.Time) < wait.Truncate(time.Second) {
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
func recovery(start, recovered time.Time, backlog []time.Time) record.Recovery {
	r := record.Recovery{AtS: seconds(recovered.Sub(start)), Backlog: len(backlog)}
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
// A delivery that never arrived counts at end (a lower bound), so blocked
// deliveries cannot drop out of the comparison.
func (d *Deliveries) healthy(h WeatherHistory, weathered []string, end time.Time) (record.HealthyDeliveries, error) {
	bad := map[string]bool{}
	for _, host := range weathered {
		bad[host] = true
	}
	base, under := record.NewHist(), record.NewHist()
	first := h.firstWeather()
	var out record.HealthyDeliveries
	for _, p := range d.order {
		var hist *hdr.Histogram
		switch {
		case first.IsZero() || p.posted.Before(first):
			hist = base
		case h.anyAt(p.posted):
			hist = under
		}
		for _, f := range p.expected {
			if bad[f.host()] {
				continue
			}
			out.Expected++
			at, ok := p.reached[f.ID]
			if ok {
				out.Reached++
			} else {
				out.Unreached++
				at = end
			}
			if hist != nil {
				record.RecordDuration(hist, at.Sub(p.created))
			}
		}
	}
	var err error
	if out.Baseline, err = record.EncodeHist(base); err != nil {
		return out, err
	}
	out.Weather, err = record.EncodeHist(under)
	out.NoBaseline = !first.IsZero() && !first.After(h.Start)
	return out, err
}

// maxAttemptTicks bounds the seconds of the attempts plot.
const maxAttemptTicks = 24 * 3600

// attemptTicks counts the attempts per second from start to end, by the
// kind of the weather they met; a second without any is a tick of none, so
// a plot does not bridge it.
func attemptTicks(start, end time.Time, attempts []Attempt) []record.AttemptTick {
	last := min(int(end.Sub(start)/time.Second)+1, maxAttemptTicks)
	if last < 1 {
		return nil
	}
	out := make([]record.AttemptTick, last)
	for i := range out {
		out[i] = record.AttemptTick{T: i + 1, ByClass: map[string]int{}}
	}
	for _, a := range attempts {
		if t := int(a.Time.Sub(start)/time.Second) + 1; t >= 1 && t <= last {
			out[t-1].ByClass[kindOf(a.Weather)]++
		}
	}
	return out
}
