package audience

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// RunChange is one figure of two run sections side by side, as crowd
// compare shows them after its table: Base and Head formatted as that table
// formats durations and shares, Change relative for a duration or a count
// and in percentage points for a share, "-" when a side has nothing to set
// against the other (no note seen, no delivery expected, a drain not
// complete).
type RunChange struct {
	Part   string `json:"part"`   // visibility, drain, home or delivery
	Metric string `json:"metric"` // p95, never seen, …
	Base   string `json:"base_text"`
	Head   string `json:"head_text"`
	Change string `json:"change_text"`
	// Unit, BaseValue, HeadValue and ChangeValue are the row's figures
	// for a tool: Unit "us", "s", "count" or "share" (a fraction; the
	// delivery row's is the share unreached); a value nil where its text
	// is "-", the change relative (0.2 is +20 %), nil from 0 too.
	Unit        string   `json:"unit"`
	BaseValue   *float64 `json:"base"`
	HeadValue   *float64 `json:"head"`
	ChangeValue *float64 `json:"change"`
	// Verdict is the row's judgement as compare's table writes one:
	// REGRESSED, better, (within noise), (few notes) …; "" when it did not
	// move beyond the threshold, or is shown only (seen, buried, the drain).
	Verdict string `json:"verdict"`
	// Judged says the figure was set against the rule; false when it is
	// shown only, or could not be (few values, no histogram, a side
	// without it).
	Judged bool `json:"judged"`
}

// Regressed reports a figure that moved the wrong way beyond the rule.
func (r RunChange) Regressed() bool { return r.Verdict == string(record.VerdictRegressed) }

// RunComparison is two run sections side by side and judged.
type RunComparison struct {
	// Rows are the figures in the order the table shows them.
	Rows []RunChange `json:"rows"`
	// Notes qualify the verdict: probe periods that differ (the visibility
	// latencies are then not judged).
	Notes []string `json:"notes"`
}

// Regressions are the rows that regressed.
func (c RunComparison) Regressions() []RunChange {
	var out []RunChange
	for _, r := range c.Rows {
		if r.Regressed() {
			out = append(out, r)
		}
	}
	return out
}

// CompareRuns lines up the figures of two run sections and judges them by
// compare's rule (o: its threshold and floors; see record.Shift): the
// visibility quantiles (over the notes, not the homes that read them: a
// note arrives once; by more than a probe period, by which a visibility
// latency may be late, and only when both runs probed at one rate), the
// notes never seen (a share of the accepted ones), the home timeline
// probes' p95, p99 and errors, the deliveries' p95, p99 and the share
// that never arrived (over the posts: a post's deliveries are one queue's
// work). The count seen, the notes buried and the drain are shown, not
// judged. A latency that head measured over a smaller share of what it
// owed (fewer notes seen, fewer deliveries) is never scored better.
func CompareRuns(base, head *RunSection, o record.CompareOptions) RunComparison {
	c := RunComparison{Notes: []string{}}
	bv, hv := base.Visibility, head.Visibility
	period := 0.0
	samePeriod := base.ProbeHz == head.ProbeHz || base.ProbeHz <= 0 || head.ProbeHz <= 0
	if hz := max(base.ProbeHz, head.ProbeHz); hz > 0 {
		period = 1e6 / hz // µs; the runs' one rate, or the one that says (two that differ are not judged)
	}
	if !samePeriod {
		c.Notes = append(c.Notes, fmt.Sprintf("the runs probed the homes at %g/s and %g/s: a visibility latency is late by up to one period, so theirs are shown, not judged", base.ProbeHz, head.ProbeHz))
	}
	vis := latencyJudge{part: "visibility", units: "notes", floor: period, judge: samePeriod,
		base: record.LatencySample{Hist: bv.Latency, Units: bv.Notes}, head: record.LatencySample{Hist: hv.Latency, Units: hv.Notes},
		fewerOwed: shareOf(hv.Seen, hv.Sent) < shareOf(bv.Seen, bv.Sent)-o.ShareFloor}
	c.Rows = append(c.Rows, relativeRow("visibility", "seen", seenFigure(bv), seenFigure(hv)))
	c.Rows = append(c.Rows, vis.rows(o, "p50", "p95", "p99")...)
	neverSeen := pointsRow("visibility", "never seen", shareFigure(bv.NeverSeen, bv.Accepted, "accepted"), shareFigure(hv.NeverSeen, hv.Accepted, "accepted"))
	if bv.Notes > 0 && hv.Notes > 0 {
		neverSeen = judgedShare(neverSeen, record.ShareSample{N: bv.NeverSeen, Of: bv.Accepted, Units: bv.Notes}, record.ShareSample{N: hv.NeverSeen, Of: hv.Accepted, Units: hv.Notes}, o)
	} else if bv.Accepted > 0 && hv.Accepted > 0 {
		// Without the notes, every persona's copy would pass for a note of
		// its own: a test that sure of itself is not the rule.
		neverSeen.Verdict = "(not judged: an older record counts no notes)"
	}
	c.Rows = append(c.Rows, neverSeen,
		pointsRow("visibility", "buried", shareFigure(bv.Buried, bv.Accepted, "accepted"), shareFigure(hv.Buried, hv.Accepted, "accepted")),
		relativeRow("drain", "after the flood", drainFigure(base), drainFigure(head)))
	bh, hh := base.Home, head.Home
	home := latencyJudge{part: "home", units: "probes", judge: true,
		base: record.LatencySample{Hist: bh.Latency}, head: record.LatencySample{Hist: hh.Latency},
		fewerOwed: shareOf(hh.OK, hh.Probes) < shareOf(bh.OK, bh.Probes)-o.ShareFloor}
	c.Rows = append(c.Rows, home.rows(o, "p95", "p99")...)
	c.Rows = append(c.Rows, judgedShare(pointsRow("home", "probe errors", shareFigure(bh.Errors, bh.Probes, "probes"), shareFigure(hh.Errors, hh.Probes, "probes")),
		record.ShareSample{N: bh.Errors, Of: bh.Probes}, record.ShareSample{N: hh.Errors, Of: hh.Probes}, o))
	bd, hd := base.Delivery, head.Delivery
	del := latencyJudge{part: "delivery", units: "posts", judge: true,
		base: record.LatencySample{Hist: bd.Latency, Units: bd.Posts}, head: record.LatencySample{Hist: hd.Latency, Units: hd.Posts},
		fewerOwed: shareOf(hd.Reached, hd.Expected) < shareOf(bd.Reached, bd.Expected)-o.ShareFloor}
	c.Rows = append(c.Rows, del.rows(o, "p95", "p99")...)
	c.Rows = append(c.Rows, judgedShare(pointsRow("delivery", "reached", reachFigure(bd), reachFigure(hd)),
		record.ShareSample{N: bd.Expected - bd.Reached, Of: bd.Expected, Units: bd.Posts},
		record.ShareSample{N: hd.Expected - hd.Reached, Of: hd.Expected, Units: hd.Posts}, o))
	return c
}

// shareOf is n of of, 1 when of is 0 (nothing owed, nothing missing).
func shareOf(n, of int64) float64 {
	if of == 0 {
		return 1
	}
	return float64(n) / float64(of)
}

// latencyJudge judges the quantiles of one part's latency in two runs.
type latencyJudge struct {
	part, units string // the part, and what its independent units are called (notes, probes, posts)
	base, head  record.LatencySample
	floor       float64 // µs: a change smaller is not the server's (a probe period)
	judge       bool    // false: shown only (the runs' probe periods differ)
	fewerOwed   bool    // head measured it over a smaller share of what it owed: never better
}

// rows are the named quantiles' rows (p50, p95, p99), judged.
func (l latencyJudge) rows(o record.CompareOptions, names ...string) []RunChange {
	out := make([]RunChange, 0, len(names))
	for _, n := range names {
		q, _ := strconv.ParseFloat(strings.TrimPrefix(n, "p"), 64)
		r := relativeRow(l.part, n, quantileFigure(l.base.Hist.Quantiles, n), quantileFigure(l.head.Hist.Quantiles, n))
		s, ok := record.JudgeQuantileShift(l.base, l.head, q, l.floor, o)
		switch {
		case !ok || !l.judge:
		case s.Unkept:
			r.Verdict = "(not judged: an older record keeps no histogram)"
		case s.Few:
			r.Verdict = "(few " + l.units + ")"
		case s.Verdict == record.VerdictBetter && l.fewerOwed:
			r.Verdict, r.Judged = "(over fewer: not scored better)", true
		default:
			r.Verdict, r.Judged = shiftVerdict(s), true
		}
		out = append(out, r)
	}
	return out
}

// judgedShare is r judged as a share where up is worse.
func judgedShare(r RunChange, base, head record.ShareSample, o record.CompareOptions) RunChange {
	if s, ok := record.JudgeShareShift(base, head, o); ok {
		r.Verdict, r.Judged = shiftVerdict(s), true
	}
	return r
}

// shiftVerdict writes a judged shift as compare's table does.
func shiftVerdict(s record.Shift) string {
	if s.Noise {
		return "(within noise)"
	}
	return string(s.Verdict)
}

// WriteRunComparisonMarkdown is WriteRunComparison for a pull request's
// comment: the verdict as a heading, the rule in a sentence, a table, the
// notes.
func WriteRunComparisonMarkdown(out io.Writer, base, head *RunSection, o record.CompareOptions) (RunComparison, error) {
	c := CompareRuns(base, head, o)
	var b strings.Builder
	heading := "no regression beyond " + record.FormatPercent(o.MaxRegression) + " and the noise"
	if regs := c.Regressions(); len(regs) > 0 {
		heading = fmt.Sprintf("REGRESSED beyond %s: %d %s", record.FormatPercent(o.MaxRegression), len(regs), record.Plural(len(regs), "figure", "figures"))
	}
	fmt.Fprintf(&b, "#### crowd run: %s\n\n", heading)
	fmt.Fprintf(&b, "The personas' homes, the drain and the deliveries to the crowd, judged by the same rule over independent units "+
		"(a note read by several personas arrived once, a post's deliveries are one queue's work); a visibility latency, late by up to "+
		"one probe period%s, must move by more. Seen, buried and the drain are shown, not judged.\n\n", probePeriods(base.ProbeHz, head.ProbeHz))
	b.WriteString("| part | metric | base | head | change | verdict |\n|---|---|---|---|---|---|\n")
	for _, r := range c.Rows {
		verdict := r.Verdict
		if r.Regressed() {
			verdict = "**" + verdict + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Part, r.Metric, record.EscapeMarkdown(r.Base), record.EscapeMarkdown(r.Head), r.Change, verdict)
	}
	for i, n := range c.Notes {
		if i == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "- note: %s\n", record.EscapeMarkdown(n))
	}
	_, err := io.WriteString(out, b.String())
	return c, err
}

// verdictLine is the run sections' verdict: what regressed, or that
// nothing did, and how many figures were judged.
func (c RunComparison) verdictLine(o record.CompareOptions) string {
	th := record.FormatPercent(o.MaxRegression)
	judged := 0
	for _, r := range c.Rows {
		if r.Judged {
			judged++
		}
	}
	if regs := c.Regressions(); len(regs) > 0 {
		var names []string
		for _, r := range regs {
			names = append(names, r.Part+" "+r.Metric+" "+r.Change)
		}
		return fmt.Sprintf("REGRESSED beyond %s: %d of %d figures judged: %s", th, len(regs), judged, strings.Join(names, ", "))
	}
	return fmt.Sprintf("no regression beyond %s and the noise (%d figures judged, %d shown only)", th, judged, len(c.Rows)-judged)
}

// WriteRunComparison writes two run sections side by side and judged
// (CompareRuns' rows) under a heading that says by what rule, then the
// notes and the verdict's line.
func WriteRunComparison(out io.Writer, base, head *RunSection, o record.CompareOptions) (RunComparison, error) {
	c := CompareRuns(base, head, o)
	var b strings.Builder
	b.WriteString("crowd run: the personas' homes, the drain and the deliveries to the crowd, judged by the same\n")
	b.WriteString("  rule (a quantile: order-statistic intervals; a share: a two-proportion test) over independent\n")
	b.WriteString("  units: a note read by several personas arrived once, a post's deliveries are one queue's work;\n")
	b.WriteString("  no second-to-second spread is kept for them. A visibility latency is an upper bound, late by\n")
	fmt.Fprintf(&b, "  up to one probe period%s: it must move by more.\n", probePeriods(base.ProbeHz, head.ProbeHz))
	b.WriteString("  Seen, buried and the drain are shown, not judged.\n\n")
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "part\tmetric\tbase\thead\tchange\t")
	for _, r := range c.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Part, r.Metric, r.Base, r.Head, r.Change, r.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return c, err
	}
	for line := range strings.Lines(table.String()) {
		b.WriteString(strings.TrimRight(line, " \n") + "\n") // an empty verdict leaves padding
	}
	if len(c.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "note: %s\n", n)
		}
	}
	b.WriteString("\ncrowd run: " + c.verdictLine(o) + "\n")
	_, err := io.WriteString(out, b.String())
	return c, err
}

// probePeriods names the probe period the visibility latencies may be
// late by, each run's when they differ (another --probe-hz moves the
// latency for a reason that is not the server's); "" when not known.
func probePeriods(baseHz, headHz float64) string {
	period := func(hz float64) string {
		return record.FormatDuration(time.Duration(float64(time.Second) / hz))
	}
	switch {
	case baseHz <= 0 || headHz <= 0:
		return ""
	case baseHz == headHz:
		return " (" + period(baseHz) + ")"
	}
	return fmt.Sprintf(" (%s at base, %s at head)", period(baseHz), period(headHz))
}

// runFigure is one side of a RunChange: its text, and the value its change
// is computed from; ok is false when there is nothing to compare. The zero
// runFigure is a side that measured nothing of the figure.
type runFigure struct {
	text string
	v    float64
	ok   bool
	unit string // "us", "s", "count" or "share"
}

// show is the side's text, "-" for nothing measured.
func (f runFigure) show() string {
	if f.text == "" {
		return "-"
	}
	return f.text
}

// quantileFigure is the named quantile (p50, p95, p99) of a latency.
func quantileFigure(q record.Quantiles, name string) runFigure {
	if q.Count == 0 {
		return runFigure{} // no value: a 0 would read as an instant answer
	}
	v := q.P99 // "p99"
	switch name {
	case "p50":
		v = q.P50
	case "p95":
		v = q.P95
	}
	return runFigure{text: q.Format(v), v: float64(v), ok: true, unit: "us"}
}

// seenFigure is the count of notes the visibility quantiles rest on.
func seenFigure(v VisibilityStats) runFigure {
	if v.Sent == 0 {
		return runFigure{}
	}
	return runFigure{text: fmt.Sprintf("%d of %d owed", v.Latency.Count, v.Sent), v: float64(v.Latency.Count), ok: true, unit: "count"}
}

// shareFigure is n of a count of what: "2 of 8460 accepted (0.02%)".
func shareFigure(n, of int64, what string) runFigure {
	if of == 0 {
		return runFigure{}
	}
	s := float64(n) / float64(of)
	return runFigure{text: fmt.Sprintf("%d of %d %s (%s)", n, of, what, record.FormatShare(s)), v: s, ok: true, unit: "share"}
}

// reachFigure is the deliveries that reached the crowd; its change is the
// unreached share's, the way --expect 'delivery.unreached<1%' reads it.
func reachFigure(d DeliveryStats) runFigure {
	if d.Expected == 0 {
		return runFigure{}
	}
	s := float64(d.Expected-d.Reached) / float64(d.Expected)
	return runFigure{text: fmt.Sprintf("%d of %d (%s unreached)", d.Reached, d.Expected, record.FormatShare(s)), v: s, ok: true, unit: "share"}
}

// drainFigure is how long after the flood the last accepted note was
// seen; a drain not complete is only the time waited, a bound, so it has
// no change to show.
func drainFigure(run *RunSection) runFigure {
	d := run.Drain
	secs := time.Duration(d.Seconds * float64(time.Second))
	switch {
	case !d.Complete:
		return runFigure{text: "> " + record.FormatDuration(secs) + " (not complete)"}
	case run.Visibility.Accepted == 0:
		return runFigure{} // no accepted note to wait for
	}
	return runFigure{text: record.FormatDuration(secs), v: d.Seconds, ok: true, unit: "s"}
}

// relativeRow is a row whose change is relative (a duration, a count).
func relativeRow(part, metric string, base, head runFigure) RunChange {
	r := figuresRow(part, metric, base, head)
	switch {
	case !base.ok || !head.ok:
	case base.v != 0:
		r.Change = record.FormatRelative(head.v/base.v - 1)
	case head.v == 0:
		r.Change = record.FormatRelative(0)
	default:
		r.Change = record.FormatRelative(math.Inf(1)) // from zero: no ratio says it
	}
	return r
}

// pointsRow is a row whose change is in percentage points (a share).
func pointsRow(part, metric string, base, head runFigure) RunChange {
	r := figuresRow(part, metric, base, head)
	if base.ok && head.ok {
		r.Change = record.FormatPoints(base.v, head.v)
	}
	return r
}

// figuresRow is the row of base and head without its change's text: their
// texts, and their values for a tool, the change relative.
func figuresRow(part, metric string, base, head runFigure) RunChange {
	r := RunChange{Part: part, Metric: metric, Base: base.show(), Head: head.show(), Change: "-", Unit: cmp.Or(base.unit, head.unit)}
	value := func(f runFigure) *float64 {
		if !f.ok {
			return nil
		}
		return &f.v
	}
	r.BaseValue, r.HeadValue = value(base), value(head)
	if base.ok && head.ok && base.v != 0 {
		change := head.v/base.v - 1
		r.ChangeValue = &change
	} else if base.ok && head.ok && head.v == 0 {
		r.ChangeValue = new(float64)
	}
	return r
}
