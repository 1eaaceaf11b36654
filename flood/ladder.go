package flood

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// maxRungs bounds a ladder so a mistyped ramp cannot run for days.
const maxRungs = 1000

// ParseRates parses a --rate list: "300" or "100,300,600" (sends per second,
// each > 0). Errors are *UsageError.
func ParseRates(s string) ([]float64, error) {
	var rates []float64
	for f := range strings.SplitSeq(s, ",") {
		v, err := parseNumber(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, usage(s, "rate %q: want a number > 0 (e.g. --rate=100,300,600)", f)
		}
		rates = append(rates, v)
	}
	if len(rates) > maxRungs {
		return nil, usage(s, "more than %d rungs", maxRungs)
	}
	return rates, nil
}

// ParseRamp parses a --ramp "from:to:step" (e.g. 100:1000:100) into the
// rates from, from+step, ... up to and including to. Errors are *UsageError.
func ParseRamp(s string) ([]float64, error) {
	f := strings.Split(s, ":")
	if len(f) != 3 {
		return nil, usage(s, "want from:to:step, e.g. 100:1000:100")
	}
	var v [3]float64
	for i, x := range f {
		n, err := parseNumber(strings.TrimSpace(x))
		if err != nil || n <= 0 {
			return nil, usage(s, "%q: want a number > 0", x)
		}
		v[i] = n
	}
	from, to, step := v[0], v[1], v[2]
	if to < from {
		return nil, usage(s, "the ramp goes down: from %g to %g", from, to)
	}
	n := math.Floor((to-from)/step+1e-9) + 1
	if n > maxRungs {
		return nil, usage(s, "%g rungs: at most %d", n, maxRungs)
	}
	rates := make([]float64, int(n))
	for i := range rates {
		// From the start each time, so a fractional step does not drift.
		rates[i] = from + float64(i)*step
		if i > 0 && rates[i] <= rates[i-1] {
			return nil, usage(s, "step %g is lost in the rounding of %g", step, from)
		}
	}
	return rates, nil
}

// RungFunc runs one rung at rate sends per second for a measured step of d
// (after discarding the ladder's warm-up, see Ladder.RungPlan) and returns
// its record. An error stops the ladder.
type RungFunc func(ctx context.Context, rate float64, d time.Duration) (*Record, error)

// Ladder runs rungs of increasing rate and stops at the shoulder: after the
// first rung on which any StopWhen expression holds (or cannot be evaluated,
// e.g. nothing completed). The shoulder rung is included in the rows.
type Ladder struct {
	Rates    []float64     // from ParseRates or ParseRamp
	Step     time.Duration // measured length of each rung (--step)
	Warmup   time.Duration // discarded start of each rung (--warmup)
	StopWhen []Gate        // --stop-when, same language as --expect
}

// RungRow is one rung of a ladder.
type RungRow struct {
	Index    int
	Rate     float64 // the rung's target rate
	Record   *Record
	Shoulder bool         // a StopWhen expression held on this rung
	Stop     []GateResult // the StopWhen results
}

// LadderResult is a finished ladder.
type LadderResult struct {
	Rows     []RungRow
	Shoulder int      // index of the shoulder rung, -1 when none was reached
	Partial  bool     // stopped by cancellation or a partial rung
	Reason   string   // why it stopped early, if it did
	Capacity Capacity // the verdict over the rows (DefaultCapacityRule)
}

// RungPlan returns base set up for one rung: pacer p, Warmup from the
// ladder, Duration = Warmup + Step, MaxSends 0.
func (l *Ladder) RungPlan(base Plan, p Pacer) Plan {
	base.Pacer = p
	base.Warmup = l.Warmup
	base.Duration = l.Warmup + l.Step
	base.MaxSends = 0
	return base
}

// Run runs the rungs in order through run, calling onRow (if set) after each
// one, and stops at the shoulder, on a partial rung or when ctx is done.
// Each rung's record carries the capacity verdict over the rungs so far
// (Record.Capacity) when onRow sees it, so the last rung's record holds the
// ladder's verdict. The error is run's or onRow's, wrapped with the rung;
// the rows so far are returned with it.
func (l *Ladder) Run(ctx context.Context, run RungFunc, onRow func(RungRow) error) (LadderResult, error) {
	res := LadderResult{Shoulder: -1}
	if len(l.Rates) == 0 || l.Step <= 0 {
		return res, fmt.Errorf("%w: a ladder needs rates and a step > 0", ErrInvalidPlan)
	}
	for i, rate := range l.Rates {
		if err := ctx.Err(); err != nil {
			res.Partial, res.Reason = true, "interrupted"
			return res, nil
		}
		rec, err := run(ctx, rate, l.Step)
		if err != nil {
			res.Partial, res.Reason = true, err.Error()
			return res, fmt.Errorf("rung %d (%g/s): %w", i+1, rate, err)
		}
		row := RungRow{Index: i, Rate: rate, Record: rec}
		for _, g := range l.StopWhen {
			gr := g.Eval(rec)
			row.Stop = append(row.Stop, gr)
			if gr.Holds || !gr.Known {
				row.Shoulder = true
			}
		}
		res.Rows = append(res.Rows, row)
		res.Capacity = DefaultCapacityRule().Assess(res.Rows)
		verdict := res.Capacity
		rec.Capacity = &verdict
		if onRow != nil {
			if err := onRow(row); err != nil {
				res.Partial, res.Reason = true, err.Error()
				return res, fmt.Errorf("rung %d (%g/s): %w", i+1, rate, err)
			}
		}
		if rec.Partial {
			res.Partial, res.Reason = true, rec.PartialReason
			return res, nil
		}
		if row.Shoulder {
			res.Shoulder = i
			return res, nil
		}
	}
	return res, nil
}

// LadderHeader returns the header line of the per-rung table (tab-separated;
// see WriteLadder) whose rows LadderRowLine formats.
func LadderHeader() string {
	return "rate\toffered/s\tsent/s\t2xx/s\tdropped\tp50\tp95\tp99\tlate p95\terrors\t429\t\n"
}

// LadderRowLine formats one rung as a tab-separated line; the shoulder is
// marked "shoulder", a generator-bound rung "generator".
func LadderRowLine(r RungRow) string {
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
		r.Rate, rec.Rates.Offered, rec.Rates.Sent, rec.Rates.Throughput, pct(o.Counts.Dropped, o.Counts.Offered),
		fmtUS(o.Latency.P50), fmtUS(o.Latency.P95), fmtUS(o.Latency.P99), fmtUS(o.Lateness.P95),
		pct(o.Tally.Errors(), o.Counts.Completed), o.Tally.Classes[Class429], strings.Join(mark, " "))
}

// WriteLadder writes the ladder's table (one row per rung) and then the p95
// latency of each activity type per rung, where load shows first.
func WriteLadder(w io.Writer, res LadderResult) error {
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
					v = fmtUS(tr.Latency.P95)
				}
				fmt.Fprintf(tw, "%s\t", v)
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
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
