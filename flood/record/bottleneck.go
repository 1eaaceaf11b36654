package record

import (
	"fmt"
	"strconv"
	"time"
)

// secs converts seconds to a Duration.
func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Diagnosis says whether the generator, rather than the SUT, limited a run.
// Reasons explain a generator verdict; Notes explain what the SUT caused
// (drops because it held the slots, sends that waited for a connection).
type Diagnosis struct {
	Generator bool     `json:"generator"`
	Reasons   []string `json:"reasons,omitempty"`
	Notes     []string `json:"notes,omitempty"`
	Rule      string   `json:"rule,omitempty"` // the rule and thresholds the verdict applied (BottleneckRule.String)
}

// BottleneckRule holds the thresholds of the generator-bottleneck rule. The
// generator is the bottleneck when any of these holds:
//
//  1. Source starved: more than StarvedShare of the offered sends were late
//     because the Source (signing) had no request ready.
//  2. Dispatch late: the p99 of the generator's own delay (intended time to
//     the moment a worker took the send: timers, CPU, scheduling) is
//     above DispatchP99 AND above DispatchShare of the SUT's service-time
//     p99, so the SUT's time does not dwarf it and latency percentiles are
//     inflated by the crowd itself. Where the dispatcher wrote the sends
//     on time itself (most of them, lateness p99 within DispatchP99), the
//     worker only reads the answer and the verdict says the delay is in
//     the reading. The p99 is judged over MinDispatchSends sends or more,
//     so that some ten lie beyond it: over fewer it is the worst send or
//     two (a garbage collection, a scheduler's hiccup), and a delay past
//     the limits is a note. (Time spent waiting for a pooled
//     connection is lateness too, but the SUT causes it by holding
//     connections: it is reported as a note, not blamed on the generator.)
//  3. Drops with fast service: more than DropShare of the offered sends were
//     dropped for lack of a slot although, by Little's law, the slots needed
//     (offered rate × service p99) are below Headroom × MaxInflight: the SUT
//     answered fast enough, so the crowd failed to recycle its slots. When
//     the SUT's service time does explain the drops, that is a note.
//  4. Schedule not kept: the workers took the last measured send later than
//     the schedule allows: past the due span (first to last due time) divided
//     by KeptShare, plus two send intervals (1/rate) of slack. An offered
//     rate beyond what the crowd can hand out (--rate 1e9) fails here
//     whatever the SUT does: the rate achieved is the generator's limit.
type BottleneckRule struct {
	StarvedShare  float64
	DispatchP99   time.Duration
	DispatchShare float64
	// MinDispatchSends is the fewest sends whose dispatch p99 is judged.
	MinDispatchSends int64
	DropShare        float64
	Headroom         float64
	KeptShare        float64
}

// DefaultBottleneckRule is the rule records are diagnosed with: 0.1 % starved,
// dispatch p99 over 1 ms and over 10 % of service p99, 0.1 % dropped while
// the SUT needed under half the slots.
func DefaultBottleneckRule() BottleneckRule {
	return BottleneckRule{
		StarvedShare:  0.001,
		DispatchP99:   time.Millisecond,
		DispatchShare: 0.1,
		// fewBeyond sends beyond the p99, as compare judges a quantile.
		MinDispatchSends: fewBeyond * 100,
		DropShare:        0.001,
		Headroom:         0.5,
		KeptShare:        0.9,
	}
}

// String states the rule with its thresholds, as the table prints it next
// to the verdict.
func (b BottleneckRule) String() string {
	return fmt.Sprintf("the generator is the bottleneck when starved > %s of offered, or dispatch p99 > %s and > %s of service p99 (over %d sends or more), "+
		"or dropped > %s of offered while offered/s × service p99 < %s of the slots, or the sends took longer than the schedule's span / %s + 2/rate",
		FormatPercent(b.StarvedShare), FormatDuration(b.DispatchP99), FormatPercent(b.DispatchShare), b.MinDispatchSends, FormatPercent(b.DropShare), FormatPercent(b.Headroom), strconv.FormatFloat(b.KeptShare, 'g', -1, 64))
}

// Diagnose applies the rule to a record (all its generators together: the
// slots are MaxInflight × generators).
func (b BottleneckRule) Diagnose(r *Record) Diagnosis {
	d := Diagnosis{Rule: b.String()}
	c := r.Overall.Counts
	if c.Offered == 0 {
		return d
	}
	offered := float64(c.Offered)
	service := time.Duration(r.Overall.Service.P99) * time.Microsecond
	if c.Starved > 0 && float64(c.Starved)/offered > b.StarvedShare {
		d.Generator = true
		d.Reasons = append(d.Reasons, fmt.Sprintf(
			"source starved: %d of %d sends (%s) were late because no signed request was ready; the crowd's signing or generation is the limit",
			c.Starved, c.Offered, Percent(c.Starved, c.Offered)))
	}
	disp := time.Duration(r.Dispatch.P99) * time.Microsecond
	late := time.Duration(r.Overall.Lateness.P99) * time.Microsecond
	switch {
	case disp <= b.DispatchP99 || float64(disp) <= b.DispatchShare*float64(service):
	case r.Dispatch.Count < b.MinDispatchSends:
		d.Notes = append(d.Notes, fmt.Sprintf(
			"dispatch delay p99 %s is past the limit (%s), but over only %d sends, too few for a p99 (one garbage collection or scheduler's hiccup makes it): not judged (the rule judges it over %d sends or more)",
			FormatDuration(disp), FormatDuration(b.DispatchP99), r.Dispatch.Count, b.MinDispatchSends))
	default:
		d.Generator = true
		if 2*c.Written > c.Sent && late <= b.DispatchP99 {
			// The dispatcher wrote the sends on time itself, and a worker
			// took each answer after: the delay is in the reading, which
			// the latency and service time include, not in the sends.
			d.Reasons = append(d.Reasons, fmt.Sprintf(
				"generator late reading answers: the sends left on time (lateness p99 %s), but a worker took the answer up to %s after a send's intended time (dispatch delay p99, limit %s), which latency and service time include, against a SUT service time p99 of %s; the crowd's CPU or scheduling is the limit",
				FormatDuration(late), FormatDuration(disp), FormatDuration(b.DispatchP99), FormatDuration(service)))
		} else {
			d.Reasons = append(d.Reasons, fmt.Sprintf(
				"generator late: its own dispatch delay p99 (from a send's intended time to the worker that sent it) is %s (limit %s) against a SUT service time p99 of %s; the crowd's CPU or scheduling is the limit",
				FormatDuration(disp), FormatDuration(b.DispatchP99), FormatDuration(service)))
		}
	}
	kept := true
	if w, rate := r.Window, r.Settings.Rate; rate > 0 && w.LastSent > 0 {
		due, took := w.LastDue-w.FirstDue, w.LastSent-w.FirstDue
		if allowed := due/b.KeptShare + 2/rate; took > allowed {
			kept = false
			d.Generator = true
			d.Reasons = append(d.Reasons, fmt.Sprintf(
				"schedule not kept: the %d sends due within %s took %s to hand out (allowed %s): %s/s was asked, about %s/s offered; the rate is beyond what the crowd can offer, and the achieved rates are its limit, not the SUT's",
				c.Sent, FormatDuration(secs(due)), FormatDuration(secs(took)), FormatDuration(secs(allowed)), FormatNumber(rate*float64(r.Generators())), Sig3(float64(c.Sent)/max(took, 1e-9))))
		}
	}
	switch {
	case late <= b.DispatchP99 || late <= 2*disp:
	case kept:
		d.Notes = append(d.Notes, fmt.Sprintf(
			"sends waited for a connection: lateness p99 %s against a dispatch delay p99 of %s; the SUT held the connections (latency from the intended time includes this wait)",
			FormatDuration(late), FormatDuration(disp)))
	default:
		// Sends handed out faster than the schedule allows open their
		// connections in one burst: that wait is the generator's doing.
		d.Reasons = append(d.Reasons, fmt.Sprintf(
			"sends were late by up to %s (lateness p99), waiting for connections opened in the burst the schedule asked for", FormatDuration(late)))
	}
	if c.Dropped > 0 {
		slots := float64(r.Settings.MaxInflight * r.Generators())
		needed := r.Rates.Offered * service.Seconds()
		if float64(c.Dropped)/offered > b.DropShare && needed < b.Headroom*slots {
			d.Generator = true
			d.Reasons = append(d.Reasons, fmt.Sprintf(
				"drops with fast service: %d sends (%s) found all %.0f slots busy, yet %.0f/s × service p99 %s needs only about %.0f; the crowd could not recycle its slots",
				c.Dropped, Percent(c.Dropped, c.Offered), slots, r.Rates.Offered, FormatDuration(service), needed))
		} else {
			d.Notes = append(d.Notes, fmt.Sprintf(
				"dropped %d sends (%s): all %.0f slots were busy; %.0f/s × service p99 %s needs about %.0f, so the SUT's slowness filled them (raise --max-inflight to measure a deeper queue)",
				c.Dropped, Percent(c.Dropped, c.Offered), slots, r.Rates.Offered, FormatDuration(service), needed))
		}
	}
	return d
}
