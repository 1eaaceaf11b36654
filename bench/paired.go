package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// pairedRateShare is the share of the lower of the two searched maxima a
// with/without row's paired trials run at: a rate both sides sustained
// with room to spare, so that what a trial's sends cost is their work,
// not the contention of a machine at its limit, and so that the machine
// slowing through the section does not fail them (here a pipeline's
// signers kept 1 229/s at 1 249/s half a minute after the search's trials
// sustained 1 602/s).
const pairedRateShare = 0.7

// searchNoise is how far below its bound a with/without row's searched
// ratio may fall while its paired costs meet the bound: the spread of one
// wiring's searched ratio over runs of the bench (the live-metrics row
// 0.83 to 1.06, the pipeline with --results 0.92 to 1.09, their searches
// bound by a signing rate that drifted with the host). Further below, the
// with side loses rate to something its CPU a send does not show (a
// stall, a lock, lateness), and the row is missed.
const searchNoise = 0.2

// costPairing is what something costs the flood, measured in pairs of
// trials at one rate: the with side and the same flood without it, each
// pair in the other order from the one before (with, without; without,
// with; …), so that a machine drifting through an even number of pairs
// weighs on both sides alike. Each trial's cost is sendCost: the CPU its
// sends took of the machine. The highest rates two searches sustain move
// with the noise at each search's threshold (searchNoise); the costs
// compare one rate on both sides, every send of every trial counted.
type costPairing struct {
	Rate float64 `json:"rate"`
	// With and Without are each side's trials in the order run, a failed
	// try that was tried again marked Uncounted.
	With    []outcome `json:"with"`
	Without []outcome `json:"without"`
	// WithCost and WithoutCost are each side's mean sendCost over its
	// counted trials, in µs of CPU a send; Ratio is WithoutCost /
	// WithCost, the share of the rate without that the machine's CPU
	// allows with.
	WithCost    float64 `json:"with_cost_us,omitempty"`
	WithoutCost float64 `json:"without_cost_us,omitempty"`
	Ratio       float64 `json:"ratio,omitempty"`
	// PairRatios are each pair's own ratio, in the order run: their
	// spread is the pairing's noise.
	PairRatios []float64 `json:"pair_ratios,omitempty"`
	// Why says why there is no Ratio: a trial not sustained in its tries,
	// a cost not measured, or the context ended before every pair ran.
	Why string `json:"why,omitempty"`
}

// sendCost is the CPU a trial's sends took of the machine, in µs a send:
// the bench process's (the flood's) and the null sink's, which share the
// machine's cores as they do in the searches; 0 when the flood's was not
// measured. Where the sink's is not known (outside Linux) it is the
// flood's alone.
func sendCost(o outcome) float64 {
	if o.CPUPerSend <= 0 {
		return 0
	}
	return o.CPUPerSend + o.SinkCPUPerSend
}

// pairSide is one side of a pairing: its name, its trial, and where its
// trials go.
type pairSide struct {
	name   string
	trial  func(context.Context, float64) outcome
	trials *[]outcome
}

// costOf runs side's trial at rate, trying a failed one again up to
// retries times (another tenant can fail a trial, none can pass one), and
// returns its cost, or why there is none.
func (s pairSide) costOf(ctx context.Context, rate float64, retries int) (float64, string) {
	for try := 0; ; try++ {
		o := s.trial(ctx, rate)
		*s.trials = append(*s.trials, o)
		if c := sendCost(o); o.Pass && c > 0 {
			return c, ""
		} else if o.Pass {
			return 0, fmt.Sprintf("%s: no CPU measured at %s", s.name, formatValue(rate, "/s"))
		}
		if try >= retries || ctx.Err() != nil {
			return 0, fmt.Sprintf("%s: not sustained at %s (%s)", s.name, formatValue(rate, "/s"), o.Why)
		}
		(*s.trials)[len(*s.trials)-1].Uncounted = true
	}
}

// pairCosts runs pairs pairs of trials at rate, with first in the even
// pairs and without first in the odd ones, and compares their costs; a
// failed trial is tried again up to retries times. It stops at a trial
// still not sustained or not costed, and when ctx ends (the pairing then
// says why).
func pairCosts(ctx context.Context, rate float64, pairs, retries int, with, without func(context.Context, float64) outcome) costPairing {
	p := costPairing{Rate: rate}
	sides := [2]pairSide{{"with", with, &p.With}, {"without", without, &p.Without}}
	var sums [2]float64
	for i := 0; i < pairs; i++ {
		if ctx.Err() != nil {
			p.Why = fmt.Sprintf("ended after %d pairs of %d: %v", i, pairs, ctx.Err())
			return p
		}
		var pair [2]float64
		for k := range 2 {
			side := k
			if i%2 == 1 {
				side = 1 - k
			}
			c, why := sides[side].costOf(ctx, rate, retries)
			if why != "" {
				p.Why = why
				return p
			}
			pair[side] = c
			sums[side] += c
		}
		p.PairRatios = append(p.PairRatios, pair[1]/pair[0])
	}
	if pairs < 1 {
		p.Why = "no pair asked for"
		return p
	}
	n := float64(pairs)
	p.WithCost, p.WithoutCost = sums[0]/n, sums[1]/n
	p.Ratio = p.WithoutCost / p.WithCost
	return p
}

// capacity is the rate the machine's CPUs allow at cost µs of CPU a send:
// what a pairing's costs say each side could reach, for the row's table.
func capacity(cost float64) float64 {
	if cost <= 0 {
		return 0
	}
	return float64(runtime.NumCPU()) * 1e6 / cost
}

// String is the pairing as a row's notes give it.
func (p costPairing) String() string {
	if p.Why != "" {
		return fmt.Sprintf("paired trials at %s: none compared (%s)", formatValue(p.Rate, "/s"), p.Why)
	}
	ratios := make([]string, len(p.PairRatios))
	for i, r := range p.PairRatios {
		ratios[i] = fmt.Sprintf("%.3f", r)
	}
	return fmt.Sprintf("%d pairs of trials at %s, each pair's order the other's: CPU a send (flood + sink) with %.1f µs, without %.1f µs = %.3f (pairs %s; p99 lateness up to %.2f ms with, %.2f ms without)",
		len(p.PairRatios), formatValue(p.Rate, "/s"), p.WithCost, p.WithoutCost, p.Ratio, strings.Join(ratios, ", "),
		worstLateness(p.With), worstLateness(p.Without))
}

// worstLateness is the highest p99 lateness of the counted trials, in ms.
func worstLateness(trials []outcome) float64 {
	worst := 0.0
	for _, t := range trials {
		if !t.Uncounted {
			worst = max(worst, t.LatenessP99MS)
		}
	}
	return worst
}

// costRow is the row of a flood with something on (with) beside the same
// without, whose searches have run, their trials alternating: the
// searched maxima (searchedRow), then, when both sustained a rate and
// b.cfg.CostPairs asks for pairs, their costs compared in pairs of trials
// at pairedRateShare × the lower maximum (withTrial's and withoutTrial's,
// a pipeline trial one flood; judgedByCosts). On a loaded machine, where
// the timing bounds fail first, the notes also give the highest rates
// each side kept pace at.
func (b *bench) costRow(ctx context.Context, key, name, target string, bound float64, with, without *search,
	withTrial, withoutTrial func(context.Context, float64) outcome, rule string) Row {
	details := map[string]any{with.side: with.trials, without.side: without.trials}
	b.rep.Details[key] = details
	row, searched, compared := searchedRow(key, name, target, bound, with, without)
	row.Notes = joinNotes(searched, rule)
	if compared && b.cfg.CostPairs > 0 && ctx.Err() == nil {
		// A paired trial measures cost, not lateness: a pipeline trial is
		// one flood, so that the two sides of a pair run seconds apart,
		// not tens of seconds, on a host whose speed drifts.
		defer func(floods int) { b.cfg.LatenessTrials = floods }(b.cfg.LatenessTrials)
		b.cfg.LatenessTrials = 1
		rate := pairedRateShare * min(row.Value, row.Ceiling)
		b.logf("  %d pairs of trials at %s, with and without %s:", b.cfg.CostPairs, formatValue(rate, "/s"), with.side)
		p := pairCosts(ctx, rate, b.cfg.CostPairs, b.cfg.Retries, withTrial, withoutTrial)
		details["paired"] = p
		b.logf("  %s", p)
		var verdict string
		row, verdict = judgedByCosts(row, p, with.side, bound)
		row.Notes = joinNotes(verdict, p.String(), searched, rule)
	}
	if wp, pp := keptPace(with.trials), keptPace(without.trials); wp != nil && pp != nil {
		row.Notes = fmt.Sprintf("kept pace (latency and lateness bounds aside) up to %s with, %s without = %.2f; %s",
			formatValue(wp.Rate, "/s"), formatValue(pp.Rate, "/s"), wp.Rate/pp.Rate, row.Notes)
	}
	return row
}

// searchedRow is the row of two searches' maxima, judged against bound,
// what they found for its notes, and whether both sustained a rate (when
// one did not, the notes say why and the row has no ratio).
func searchedRow(key, name, target string, bound float64, with, without *search) (row Row, notes string, compared bool) {
	wBest, wt := with.best()
	pBest, pt := without.best()
	row = Row{Key: key, Name: name, Value: wBest, Unit: "/s", Ceiling: pBest,
		CeilingName: "the same flood without " + with.side + ": its highest rate sustained, trials alternating", Target: target}
	switch {
	case pt == nil:
		return row, fmt.Sprintf("no comparison on this run: the flood without sustained no rate tried (%s); with: %s",
			lastWhy(without.trials), bestOrWhy(wt, with.trials)), false
	case wt == nil:
		row.Met = met(false)
		return row, "with: " + bestOrWhy(wt, with.trials), false
	}
	row.Ratio = wBest / pBest
	row.Met = met(row.Ratio >= bound)
	return row, fmt.Sprintf("the searches' maxima: with %s, without %s = %.2f (p99 lateness there: with %.2f ms, without %.2f ms)",
		formatValue(wBest, "/s"), formatValue(pBest, "/s"), row.Ratio, wt.LatenessP99MS, pt.LatenessP99MS), true
}

// judgedByCosts is row (the searched maxima's) judged by the pairing p
// when it compared the costs precisely enough: its value and reference
// become the rates the CPUs allow at each side's cost, met when their
// ratio reaches bound and the searched ratio is within searchNoise of it.
// Its own noise is the spread of its pairs' ratios: pairs further apart
// than the margin the ratio must resolve (1 − bound), or on both sides of
// bound, say the host drifted more than the cost sought, and leave row as
// it is, as does a pairing without a comparison (p.Why). The note says
// why the pairing did not decide, or why the searches did.
func judgedByCosts(row Row, p costPairing, side string, bound float64) (Row, string) {
	if p.Why != "" {
		return row, ""
	}
	lo, hi := slices.Min(p.PairRatios), slices.Max(p.PairRatios)
	if hi-lo > 1-bound || lo < bound && hi >= bound {
		return row, fmt.Sprintf("judged on the searches: the paired costs' pairs spread %.3f to %.3f, wider than the %.2f they must resolve or across %.2f, as the host drifted", lo, hi, 1-bound, bound)
	}
	searched := row.Ratio
	row.Value, row.Ceiling, row.Ratio = capacity(p.WithCost), capacity(p.WithoutCost), p.Ratio
	row.CeilingName = "the same flood without " + side + ": the rate the CPUs allow at its CPU a send (flood and sink), in trials paired with the with side's"
	row.Met = met(lo >= bound && searched >= bound-searchNoise)
	if searched < bound-searchNoise {
		return row, fmt.Sprintf("missed on the searches: their maxima's ratio (%.2f) is more than their noise (%.2f) below %.2f, a loss of rate the CPU a send does not show", searched, searchNoise, bound)
	}
	return row, ""
}

// joinNotes joins the notes that are not empty with "; ".
func joinNotes(notes ...string) string {
	var kept []string
	for _, n := range notes {
		if n != "" {
			kept = append(kept, n)
		}
	}
	return strings.Join(kept, "; ")
}
