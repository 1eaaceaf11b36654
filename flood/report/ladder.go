package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/crowdfed/crowd/flood/record"
)

// LadderHeader returns the header line of the per-rung table (tab-separated;
// see WriteLadder) whose rows LadderRowLine formats.
func LadderHeader() string {
	return "rate\toffered/s\tsent/s\t2xx/s\tdropped\tp50\tp95\tp99\tlate p95\terrors\t429\t\n"
}

// LadderRowLine formats one rung as a tab-separated line; the shoulder is
// marked "shoulder", a generator-bound rung "generator".
func LadderRowLine(r record.RungRow) string {
	rec := r.Record
	o := rec.Overall
	var mark []string
	if r.Shoulder {
		mark = append(mark, "shoulder")
	}
	if rec.Bottleneck.Generator {
		mark = append(mark, "generator-bound")
	}
	if rec.Partial {
		mark = append(mark, "partial")
	}
	return fmt.Sprintf("%g\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n",
		r.Rate, rec.Rates.Offered, rec.Rates.Sent, rec.Rates.Throughput, record.Percent(o.Counts.Dropped, o.Counts.Offered),
		o.Latency.Format(o.Latency.P50), o.Latency.Format(o.Latency.P95), o.Latency.Format(o.Latency.P99), o.Lateness.Format(o.Lateness.P95),
		record.Percent(o.Tally.Errors(), o.Counts.Completed), o.Tally.Classes[record.Class429], strings.Join(mark, " "))
}

// WriteLadder writes the ladder's table (one row per rung), the p95
// latency of each activity type per rung (where load shows first), what
// the rungs changed from what was asked (CHANGED lines, each with the
// rungs it held at) and the seeds that replay them, then the capacity
// verdict and where the ladder stopped.
func WriteLadder(w io.Writer, res record.LadderResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, LadderHeader())
	types := map[string]bool{}
	for _, r := range res.Rows {
		fmt.Fprint(tw, LadderRowLine(r))
		for t := range r.Record.Types {
			types[t] = true
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(types) > 0 {
		fmt.Fprintln(w, "\np95 latency per type and rate:")
		names := make([]string, 0, len(types))
		for t := range types {
			names = append(names, t)
		}
		slices.Sort(names)
		fmt.Fprint(tw, "type\t")
		for _, r := range res.Rows {
			fmt.Fprintf(tw, "%g/s\t", r.Rate)
		}
		fmt.Fprintln(tw)
		for _, t := range names {
			fmt.Fprintf(tw, "%s\t", t)
			for _, r := range res.Rows {
				v := "-"
				if tr, ok := r.Record.Types[t]; ok && tr.Latency.Count > 0 {
					v = record.FormatMicros(tr.Latency.P95)
				}
				fmt.Fprintf(tw, "%s\t", v)
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	// What the rungs changed from what was asked (a type may be missing
	// from the p95 above for it), each change once with the rungs it held
	// at, and the seeds that replay the draws.
	var changes []string
	at := map[string][]string{}
	recs := make([]*record.Record, 0, len(res.Rows))
	for _, r := range res.Rows {
		for _, l := range r.Record.Deviations.Lines() {
			if at[l] == nil {
				changes = append(changes, l)
			}
			at[l] = append(at[l], fmt.Sprintf("%g/s", r.Rate))
		}
		recs = append(recs, r.Record)
	}
	seeds := seedLine(recs...)
	if len(changes) > 0 || seeds != "" {
		fmt.Fprintln(w)
	}
	for _, l := range changes {
		fmt.Fprintf(w, "CHANGED at %s: %s\n", strings.Join(at[l], ", "), l)
	}
	if seeds != "" {
		fmt.Fprintln(w, seeds)
	}
	if len(res.Rows) > 0 {
		c := res.Capacity
		fmt.Fprintf(w, "\ncapacity: %s\n", c.Verdict)
		for _, d := range c.Degraded {
			fmt.Fprintf(w, "  %s\n", d)
		}
		fmt.Fprintf(w, "  rule: %s\n", c.Rule)
	}
	switch {
	case res.Shoulder >= 0:
		fmt.Fprintf(w, "stopped at the shoulder: %g/s\n", res.Rows[res.Shoulder].Rate)
	case res.Partial:
		fmt.Fprintf(w, "stopped early: %s\n", res.Reason)
	default:
		fmt.Fprintln(w, "no shoulder reached")
	}
	return nil
}
