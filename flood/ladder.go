package flood

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// maxRungs bounds a ladder so a mistyped ramp cannot run for days.
const maxRungs = 1000

// ParseRates parses a --rate list: "300" or "100,300,600" (sends per second,
// each > 0). Errors are *UsageError.
func ParseRates(s string) ([]float64, error) {
	var rates []float64
	for f := range strings.SplitSeq(s, ",") {
		v, err := record.ParseNumber(strings.TrimSpace(f))
		switch {
		case (err != nil || v <= 0) && f == s:
			return nil, usage(s, "want a number > 0, as in --rate=300, or a ladder, as in --rate=100,300,600")
		case err != nil || v <= 0:
			return nil, usage(s, "rung %q: want a number > 0, as in --rate=100,300,600", f)
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
		n, err := record.ParseNumber(strings.TrimSpace(x))
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
type RungFunc func(ctx context.Context, rate float64, d time.Duration) (*record.Record, error)

// Ladder runs rungs of increasing rate and stops at the shoulder: after the
// first rung on which any StopWhen expression holds (or cannot be evaluated,
// e.g. nothing completed). The shoulder rung is included in the rows.
type Ladder struct {
	Rates    []float64     // from ParseRates or ParseRamp
	Step     time.Duration // measured length of each rung (--step)
	Warmup   time.Duration // discarded start of each rung (--warmup)
	StopWhen []record.Gate // --stop-when, same language as --expect
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
func (l *Ladder) Run(ctx context.Context, run RungFunc, onRow func(record.RungRow) error) (record.LadderResult, error) {
	res := record.LadderResult{Shoulder: -1}
	if len(l.Rates) == 0 || l.Step <= 0 {
		return res, fmt.Errorf("%w: a ladder needs rates and a step > 0", ErrInvalidPlan)
	}
	for i, rate := range l.Rates {
		if err := ctx.Err(); err != nil {
			res.Partial, res.Reason = true, record.ReasonInterrupted
			return res, nil
		}
		rec, err := run(ctx, rate, l.Step)
		if err != nil {
			res.Partial, res.Reason = true, record.ReasonError("", err)
			return res, fmt.Errorf("rung %d (%g/s): %w", i+1, rate, err)
		}
		row := record.RungRow{Index: i, Rate: rate, Record: rec}
		for _, g := range l.StopWhen {
			gr := g.Eval(rec)
			row.Stop = append(row.Stop, gr)
			if gr.Holds || !gr.Known {
				row.Shoulder = true
			}
		}
		res.Rows = append(res.Rows, row)
		res.Capacity = record.DefaultCapacityRule().Assess(res.Rows)
		verdict := res.Capacity
		rec.Capacity = &verdict
		if onRow != nil {
			if err := onRow(row); err != nil {
				res.Partial, res.Reason = true, record.ReasonError("", err)
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
