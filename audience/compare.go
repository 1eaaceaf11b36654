package audience

import (
	"bytes"
	"fmt"
	"io"
	"math"
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
	Part   string // visibility, drain, home or delivery
	Metric string // p95, never seen, …
	Base   string
	Head   string
	Change string
}

// CompareRuns lines up the figures of two run sections: the visibility
// quantiles with the count of notes they rest on, the notes never seen and
// buried (shares of the accepted ones), the drain, the home timeline
// probes' p95, p99 and errors, the deliveries' p95, p99 and reach. It
// judges none of them: a run section keeps quantiles, not the histograms a
// noise test needs.
func CompareRuns(base, head *RunSection) []RunChange {
	bv, hv := base.Visibility, head.Visibility
	rows := []RunChange{relativeRow("visibility", "seen", seenFigure(bv), seenFigure(hv))}
	rows = append(rows, quantileRows("visibility", bv.Latency, hv.Latency, "p50", "p95", "p99")...)
	rows = append(rows,
		pointsRow("visibility", "never seen", shareFigure(bv.NeverSeen, bv.Accepted, "accepted"), shareFigure(hv.NeverSeen, hv.Accepted, "accepted")),
		pointsRow("visibility", "buried", shareFigure(bv.Buried, bv.Accepted, "accepted"), shareFigure(hv.Buried, hv.Accepted, "accepted")),
		relativeRow("drain", "after the flood", drainFigure(base), drainFigure(head)))
	rows = append(rows, quantileRows("home", base.Home.Latency, head.Home.Latency, "p95", "p99")...)
	rows = append(rows, pointsRow("home", "probe errors", shareFigure(base.Home.Errors, base.Home.Probes, "probes"), shareFigure(head.Home.Errors, head.Home.Probes, "probes")))
	rows = append(rows, quantileRows("delivery", base.Delivery.Latency, head.Delivery.Latency, "p95", "p99")...)
	return append(rows, pointsRow("delivery", "reached", reachFigure(base.Delivery), reachFigure(head.Delivery)))
}

// WriteRunComparison writes two run sections side by side (CompareRuns'
// rows) under a heading that says they are shown, not judged, why, and
// what judges them: crowd run's --expect gates, on a run's own section.
func WriteRunComparison(out io.Writer, base, head *RunSection) error {
	var b strings.Builder
	b.WriteString("crowd run: the personas' homes, the drain and the deliveries to the crowd, shown, not judged:\n")
	b.WriteString("  compare's verdict is on the flood's figures; a run section keeps quantiles, not the histograms\n")
	b.WriteString("  its noise test needs, and a visibility latency is an upper bound, late by up to one probe\n")
	fmt.Fprintf(&b, "  period%s. crowd run's --expect gates judge a run's own section,\n", probePeriods(base.ProbeHz, head.ProbeHz))
	b.WriteString("  e.g. crowd run --expect 'visibility.p95<5s'\n\n")
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "part\tmetric\tbase\thead\tchange")
	for _, r := range CompareRuns(base, head) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Part, r.Metric, r.Base, r.Head, r.Change)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.Write(table.Bytes())
	_, err := io.WriteString(out, b.String())
	return err
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
}

// show is the side's text, "-" for nothing measured.
func (f runFigure) show() string {
	if f.text == "" {
		return "-"
	}
	return f.text
}

// quantileRows are the rows of the named quantiles (p50, p95, p99) of two
// latencies.
func quantileRows(part string, base, head record.Quantiles, names ...string) []RunChange {
	pick := func(q record.Quantiles, name string) runFigure {
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
		return runFigure{text: q.Format(v), v: float64(v), ok: true}
	}
	rows := make([]RunChange, 0, len(names))
	for _, n := range names {
		rows = append(rows, relativeRow(part, n, pick(base, n), pick(head, n)))
	}
	return rows
}

// seenFigure is the count of notes the visibility quantiles rest on.
func seenFigure(v VisibilityStats) runFigure {
	if v.Sent == 0 {
		return runFigure{}
	}
	return runFigure{text: fmt.Sprintf("%d of %d owed", v.Latency.Count, v.Sent), v: float64(v.Latency.Count), ok: true}
}

// shareFigure is n of a count of what: "2 of 8460 accepted (0.02%)".
func shareFigure(n, of int64, what string) runFigure {
	if of == 0 {
		return runFigure{}
	}
	s := float64(n) / float64(of)
	return runFigure{text: fmt.Sprintf("%d of %d %s (%s)", n, of, what, record.FormatShare(s)), v: s, ok: true}
}

// reachFigure is the deliveries that reached the crowd; its change is the
// unreached share's, the way --expect 'delivery.unreached<1%' reads it.
func reachFigure(d DeliveryStats) runFigure {
	if d.Expected == 0 {
		return runFigure{}
	}
	s := float64(d.Expected-d.Reached) / float64(d.Expected)
	return runFigure{text: fmt.Sprintf("%d of %d (%s unreached)", d.Reached, d.Expected, record.FormatShare(s)), v: s, ok: true}
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
	return runFigure{text: record.FormatDuration(secs), v: d.Seconds, ok: true}
}

// relativeRow is a row whose change is relative (a duration, a count).
func relativeRow(part, metric string, base, head runFigure) RunChange {
	r := RunChange{Part: part, Metric: metric, Base: base.show(), Head: head.show(), Change: "-"}
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
	r := RunChange{Part: part, Metric: metric, Base: base.show(), Head: head.show(), Change: "-"}
	if base.ok && head.ok {
		r.Change = record.FormatPoints(base.v, head.v)
	}
	return r
}
