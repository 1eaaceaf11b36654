package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// signCeiling is the machine's RSA-2048 signing ceiling: workers
// goroutines (GOMAXPROCS: the whole machine) calling SignPost on d's body
// and key back to back for dur; signatures per second.
func signCeiling(ctx context.Context, signer *signing.Signer, d traffic.Draft, dur time.Duration, workers int) float64 {
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(dur)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for ctx.Err() == nil && time.Now().Before(deadline) {
				req := &http.Request{Method: http.MethodPost, URL: d.URL, Header: make(http.Header, 8), Host: d.URL.Host, Body: http.NoBody}
				if err := signer.SignPost(req, d.Body, d.Sender.KeyID, d.Sender.SigningKey()); err != nil {
					break
				}
				n++
			}
			total.Add(n)
		}()
	}
	wg.Wait()
	return float64(total.Load()) / time.Since(start).Seconds()
}

// pipelineTrial floods the null sink at rate with a fresh traffic.Pipeline
// (filled first, as `crowd flood` does), cfg.LatenessTrials times, and
// judges the trials pooled: their Stats merged, so p99 lateness is taken
// over all of their sends. One trial's p99 is its few worst sends, and a
// single scheduler stall decides it (one binary's p99 lateness at one rate
// ranged 0.5–2.4 ms over 3 s trials); pooled, it takes as many stalls as
// trials. A trial that did not keep pace fails the rate at once. Beyond
// the common rule, a sustained rate has no drops, p99 lateness within
// cfg.LatenessBound, and signers that kept up: they signed at least 0.99 ×
// rate during every trial (a full buffer alone would carry a rate above
// the ceiling through a short trial). workers signers (0: one per core)
// run under procs GOMAXPROCS (0: traffic.PipelineProcs()) and the GC
// percent `crowd flood` sets (traffic.PipelineRuntime), both put back
// after the trial; watch, when set, watches each flood.
func (b *bench) pipelineTrial(ctx context.Context, side string, gen *traffic.Generator, signer *signing.Signer, rate float64, workers, procs int, watch trialWatch) outcome {
	defer traffic.PipelineRuntime(procs)() // as crowd flood runs a pipeline
	pooled := record.NewStats()
	var (
		o        outcome
		measured time.Duration
		signed   float64 // the slowest trial's signing rate
		floods   []outcome
	)
	for i := range max(1, b.cfg.LatenessTrials) {
		one, res := b.pipelineFlood(ctx, side, gen, signer, rate, workers, watch)
		if res == nil || one.Why != "" {
			one.judge(b.cfg.LatencyBound, nil, nil)
			b.logTrial(one)
			return one
		}
		if pace := pipelinePace(res, one.SignedRate, rate); len(pace) > 0 {
			one.judge(b.cfg.LatencyBound, pace, nil)
			b.logTrial(one)
			return one
		}
		if i == 0 || one.SignedRate < signed {
			signed = one.SignedRate
		}
		pooled.Merge(res.Overall)
		measured += res.Measured
		floods = append(floods, one)
		o = one
	}
	o.meanCosts(floods)
	o.take(pooled, measured)
	o.SignedRate = signed
	var timing []string
	if o.LatenessP99MS > ms(b.cfg.LatenessBound) {
		timing = append(timing, fmt.Sprintf("p99 lateness %.2f ms > %v", o.LatenessP99MS, b.cfg.LatenessBound))
	}
	o.judge(b.cfg.LatencyBound, nil, timing)
	b.logTrial(o)
	return o
}

// meanCosts sets o's per-send figures (the flood's CPU and its kernel
// share, the sink's, the idle and whole time of the CPUs, the kernel
// entries) to their means over floods, floods of one rate and length
// pooled as one trial: what its sends cost, every flood counted.
func (o *outcome) meanCosts(floods []outcome) {
	if len(floods) == 0 {
		return
	}
	var m outcome
	var kernel float64
	for _, f := range floods {
		m.CPUPerSend += f.CPUPerSend
		kernel += f.KernelShare * f.CPUPerSend
		m.SinkCPUPerSend += f.SinkCPUPerSend
		m.IdlePerSend += f.IdlePerSend
		m.CoresPerSend += f.CoresPerSend
		m.FaultsPerSend += f.FaultsPerSend
		m.SwitchesPerSend += f.SwitchesPerSend
		m.SinkFaultsPerSend += f.SinkFaultsPerSend
		m.SinkSwitchesPerSend += f.SinkSwitchesPerSend
	}
	if m.CPUPerSend > 0 {
		o.KernelShare = kernel / m.CPUPerSend
	}
	n := float64(len(floods))
	o.CPUPerSend, o.SinkCPUPerSend = m.CPUPerSend/n, m.SinkCPUPerSend/n
	o.IdlePerSend, o.CoresPerSend = m.IdlePerSend/n, m.CoresPerSend/n
	o.FaultsPerSend, o.SwitchesPerSend = m.FaultsPerSend/n, m.SwitchesPerSend/n
	o.SinkFaultsPerSend, o.SinkSwitchesPerSend = m.SinkFaultsPerSend/n, m.SinkSwitchesPerSend/n
}

// signersRule states the nice value the pipeline rows' signers ran at.
func (b *bench) signersRule() string {
	if n := b.cfg.SignerNice; n != traffic.NiceAuto {
		return fmt.Sprintf("signers at nice %d (crowd flood --signer-nice %d)", n, n)
	}
	return "signers at crowd flood --signer-nice auto (nice 0 beside a real-time dispatcher, 19 beside any other)"
}

// latenessRule states how a pipeline rate's lateness is judged.
func (b *bench) latenessRule() string {
	return fmt.Sprintf("p99 lateness ≤ %v over %d trials of %v pooled", b.cfg.LatenessBound, b.cfg.LatenessTrials, b.cfg.Trial)
}

// pipelineFlood is one flood of a pipeline trial: a fresh pipeline, filled,
// then floodTrial; the outcome's SignedRate is its signers' rate during the
// flood. A nil Result means the flood did not run (the outcome says why).
func (b *bench) pipelineFlood(ctx context.Context, side string, gen *traffic.Generator, signer *signing.Signer, rate float64, workers int, watch trialWatch) (outcome, *record.Result) {
	runtime.GC()
	pl := traffic.NewPipeline(gen, signer, traffic.PipelineOptions{Buffer: traffic.PipelineBuffer(rate), Nice: b.cfg.SignerNice, Workers: workers})
	defer pl.Close()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := pl.Fill(fctx)
	cancel()
	if err != nil {
		return outcome{Side: side, Rate: rate, Why: "filling the pipeline: " + err.Error()}, nil
	}
	s0 := pl.Signed()
	o, res := floodTrial(ctx, side, pl, rate, b.cfg, watch)
	o.SignedRate = float64(pl.Signed()-s0) / b.cfg.Trial.Seconds()
	return o, res
}

// markSlow marks a failed o Slow when the machine was slow around it: its
// section's ceiling sampled before and after it, beside samples, all of
// that ceiling's so far (slowAround); logged, so the log says why the rate
// comes again. A pass is never marked: it counts however slow the machine.
func (b *bench) markSlow(o outcome, before, after float64, samples []float64) outcome {
	if o.Pass {
		return o
	}
	if o.Slow = slowAround(before, after, samples); o.Slow != "" {
		b.logf("  the machine was slow around that trial (%s): its rate is tried again, uncounted, if the search has tries of that kind left", o.Slow)
	}
	return o
}

// pipelinePace is why a pipeline flood did not keep pace at rate: drops,
// or signers slower than 0.99 × rate; none when it did.
func pipelinePace(res *record.Result, signedRate, rate float64) []string {
	var pace []string
	if c := res.Overall.Counts; c.Dropped > 0 {
		pace = append(pace, fmt.Sprintf("%d dropped", c.Dropped))
	}
	if signedRate < 0.99*rate {
		pace = append(pace, fmt.Sprintf("signers kept %.0f/s < 0.99 × offered", signedRate))
	}
	return pace
}

func (b *bench) logTrial(o outcome) {
	verdict := "sustained"
	if !o.Pass {
		verdict = "not sustained: " + o.Why
	}
	late := ""
	if o.LatenessP99MS > 0 {
		late = fmt.Sprintf(", lateness p99 %.2f ms", o.LatenessP99MS)
	}
	b.logf("  %-8s %7.0f/s → %7.0f/s ok, latency p99 %.2f ms%s: %s", o.Side, o.Rate, o.Achieved, o.LatencyP99MS, late, verdict)
}

// pipelineSection: the signing ceiling, sampled before the search and
// after each of its trials (so the two alternate), against the highest
// rate the pipeline-signed flood sustains.
func (b *bench) pipelineSection(ctx context.Context) {
	const name = "flood, pipeline signing: max sustained rate (null sink)"
	const target = "≥ 0.9 × ceiling"
	gen, err := newGenerator(b.world, b.cfg.Mix, sinkTarget(b.sinkAddr))
	if err != nil {
		b.rep.fail(rowPipeline, name, target, err)
		return
	}
	signer := newSigner()
	d, err := gen.Stream().Next()
	if err != nil {
		b.rep.fail(rowPipeline, name, target, err)
		return
	}
	sampleDur := max(b.cfg.Measure/4, 100*time.Millisecond)
	var ceilings []float64
	sample := func() {
		runtime.GC()
		c := signCeiling(ctx, signer, d, sampleDur, runtime.GOMAXPROCS(0))
		ceilings = append(ceilings, c)
		b.logf("  ceiling  %7.0f signatures/s", c)
	}
	sample()
	// Shrink by a quarter per bracket step (0.9, 0.72, 0.58, 0.46 … of
	// the ceiling): on a machine where the target is missed, the search
	// still reaches the rate the flood does sustain, and reports it.
	s := newSearch("pipeline", 0.9*ceilings[0], 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
	for rate, ok := s.next(); ok && ctx.Err() == nil; rate, ok = s.next() {
		s.report(b.pipelineTrial(ctx, "pipeline", gen, signer, rate, 0, 0, nil))
		sample()
	}
	ceiling := median(append([]float64(nil), ceilings...))
	best, bt := s.best()
	details := map[string]any{"ceilings": ceilings, "trials": s.trials}
	defer func() { b.rep.Details[rowPipeline] = details }()
	row := Row{Key: rowPipeline, Name: name, Value: best, Unit: "/s", Ceiling: ceiling,
		CeilingName: fmt.Sprintf("RSA-2048 SignPost on %d goroutines, median of %d", runtime.GOMAXPROCS(0), len(ceilings)),
		Target:      target}
	rule := fmt.Sprintf("%s; sustained: achieved ≥ 0.99 × offered, no drops, signers kept up, %s, p99 latency ≤ %v",
		b.signersRule(), b.latenessRule(), b.cfg.LatencyBound)
	// The highest rate kept up with, the latency and lateness bounds aside:
	// on a loaded machine the bounds fail first, and this says how close
	// the signers came.
	paced := keptPace(s.trials)
	// Lateness below the maximum: one more trial at half of it (of the
	// lowest rate tried, when none was sustained).
	low := best
	if bt == nil {
		for _, t := range s.trials {
			if low == 0 || t.Rate < low {
				low = t.Rate
			}
		}
	}
	var notes []string
	if bt != nil {
		row.Ratio = best / ceiling
		row.Met = met(row.Ratio >= 0.9)
		notes = append(notes, fmt.Sprintf("p99 lateness %.2f ms at %s", bt.LatenessP99MS, formatValue(best, "/s")))
	} else {
		row.Met = met(false)
		notes = append(notes, "no rate met every bound ("+lastWhy(s.trials)+")")
	}
	if low > 0 && ctx.Err() == nil {
		half := b.pipelineTrial(ctx, "pipeline", gen, signer, math.Max(1, math.Round(low/2)), 0, 0, nil)
		details["half"] = half
		notes = append(notes, fmt.Sprintf("p99 lateness %.2f ms at %s", half.LatenessP99MS, formatValue(half.Rate, "/s")))
	}
	if paced != nil && paced.Rate > best {
		notes = append(notes, fmt.Sprintf("kept pace (no drops, signers kept up; latency and lateness aside) up to %s = %.2f × ceiling, p99 lateness %.2f ms there",
			formatValue(paced.Rate, "/s"), paced.Rate/ceiling, paced.LatenessP99MS))
	}
	row.Notes = strings.Join(append(notes, rule), "; ")
	b.rep.set(row)
}

// keptPace is the trial of the highest rate that kept pace (no drops,
// signers kept up; the latency and lateness bounds aside), or nil.
func keptPace(trials []outcome) *outcome {
	var paced *outcome
	for i := range trials {
		if t := &trials[i]; t.KeptPace && (paced == nil || t.Rate > paced.Rate) {
			paced = t
		}
	}
	return paced
}

// pacedNote says how close a search came when the timing bounds failed
// first (a loaded machine): "" when nothing kept pace above best.
func pacedNote(trials []outcome, best, ceiling float64) string {
	paced := keptPace(trials)
	if paced == nil || paced.Rate <= best {
		return ""
	}
	return fmt.Sprintf("; kept pace (no drops, signers kept up; latency and lateness aside) up to %s = %.2f × ceiling, p99 lateness %.2f ms there",
		formatValue(paced.Rate, "/s"), paced.Rate/ceiling, paced.LatenessP99MS)
}

// lastWhy is why the lowest rate tried failed (of the trials that
// counted: an Uncounted one was the machine's).
func lastWhy(trials []outcome) string {
	var low *outcome
	for i := range trials {
		if trials[i].Uncounted {
			continue
		}
		if low == nil || trials[i].Rate < low.Rate {
			low = &trials[i]
		}
	}
	if low == nil {
		return "no trial ran"
	}
	return fmt.Sprintf("at %s: %s", formatValue(low.Rate, "/s"), low.Why)
}

// presignedSection: the presigned flood and vegeta, each searching its
// maximum sustained rate on the same null sink with the same requests,
// their trials alternating.
func (b *bench) presignedSection(ctx context.Context) {
	const name = "flood, presigned: max sustained rate (null sink)"
	const target = "≥ 0.8 × vegeta"
	pool, took, err := b.sinkPool(ctx)
	if err != nil {
		b.rep.fail(rowPresigned, name, target, err)
		return
	}
	bodyBytes := 0
	for _, p := range pool {
		bodyBytes += len(p.Body)
	}
	b.logf("  presigned %d requests in %.1f s", len(pool), took.Seconds())
	targets := vegetaTargets(pool)
	floodFn := func(ctx context.Context, rate float64) outcome { return b.presignedTrial(ctx, "flood", pool, rate) }
	vegetaFn := func(ctx context.Context, rate float64) outcome {
		b.sinkQuiet(ctx)
		runtime.GC()
		o := vegetaTrial(ctx, targets, rate, b.cfg)
		o.judge(b.cfg.LatencyBound, nil, nil)
		b.logTrial(o)
		return o
	}
	fs := newSearch("flood", b.cfg.StartRate, 1.5, b.cfg.Bracket, b.cfg.Steps, b.cfg.Retries)
	vs := newSearch("vegeta", b.cfg.StartRate, 1.5, b.cfg.Bracket, b.cfg.Steps, b.cfg.Retries)
	interleave(ctx, fs, vs, floodFn, vegetaFn)
	b.rep.Details[rowPresigned] = map[string]any{"flood": fs.trials, "vegeta": vs.trials}
	fBest, ft := fs.best()
	vBest, vt := vs.best()
	row := Row{Key: rowPresigned, Name: name, Value: fBest, Unit: "/s", Ceiling: vBest,
		CeilingName: "vegeta v12 library, max sustained rate, same sink and requests", Target: target}
	row.Name += fmt.Sprintf(" (%s client)", b.cfg.FloodClient)
	rule := fmt.Sprintf("same %d presigned requests (mean body %d B) replayed round robin by both; sustained: success ≥ 99%%, achieved ≥ 0.99 × offered, p99 latency from the intended send ≤ %v; %v trials alternating",
		len(pool), bodyBytes/max(1, len(pool)), b.cfg.LatencyBound, b.cfg.Trial)
	switch {
	case vt == nil:
		// No reference on this run: the ratio is undefined, not met.
		row.Notes = fmt.Sprintf("no comparison on this run: vegeta sustained no rate tried (%s); flood: %s; %s",
			lastWhy(vs.trials), bestOrWhy(ft, fs.trials), rule)
	case ft == nil:
		row.Met = met(false)
		row.Notes = fmt.Sprintf("flood: %s; %s", bestOrWhy(ft, fs.trials), rule)
	default:
		row.Ratio = fBest / vBest
		row.Met = met(row.Ratio >= 0.8)
		row.Notes = fmt.Sprintf("p99 latency at the max: flood %.2f ms, vegeta %.2f ms; %s", ft.LatencyP99MS, vt.LatencyP99MS, rule)
	}
	b.rep.set(row)
	b.presignedWrkRows(ctx, pool, fs)
}

// presignedTrial is one trial of the presigned row's rule: the flood
// replaying pool round robin at rate, judged by the latency bound alone,
// and logged as side's; it starts once the sink is quiet (sinkQuiet).
func (b *bench) presignedTrial(ctx context.Context, side string, pool []*flood.Prepared, rate float64) outcome {
	b.sinkQuiet(ctx)
	runtime.GC()
	o, _ := floodTrial(ctx, side, &cycle{reqs: pool}, rate, b.cfg, nil)
	o.judge(b.cfg.LatencyBound, nil, nil)
	b.logTrial(o)
	return o
}

func bestOrWhy(best *outcome, trials []outcome) string {
	if best != nil {
		return formatValue(best.Rate, "/s")
	}
	return "no rate sustained (" + lastWhy(trials) + ")"
}

// The sink is quiet when it used less than sinkQuietShare of a core over
// sinkQuietWindow; sinkQuiet waits at most sinkQuietLimit for that.
const (
	sinkQuietWindow = 200 * time.Millisecond
	sinkQuietShare  = 0.1
	sinkQuietLimit  = 15 * time.Second
)

// sinkQuiet waits until the null sink's CPU falls under a tenth of a
// core (see waitQuiet), and logs a wait longer than two windows: a trial
// of the presigned searches starts once the sink has nearly done with
// what the last one left it. After vegeta's trials far above its maximum
// (p99 latency 2-4 s, and its next trials completing nothing) no wait of
// more than 0.4 s was logged in the first run that waited, so what such
// a trial leaves behind is not the sink's work.
func (b *bench) sinkQuiet(ctx context.Context) {
	if b.sink == nil {
		return
	}
	pid := b.sink.cmd.Process.Pid
	used := func() float64 { c := processCPUOf(pid); return c.user + c.sys }
	if waited := waitQuiet(ctx, used, sinkQuietWindow, sinkQuietShare, sinkQuietLimit); waited > 2*sinkQuietWindow {
		b.logf("  (the sink was still busy: waited %.1f s for it)", waited.Seconds())
	}
}

// waitQuiet waits, window by window, until a window in which used (a
// process's CPU seconds so far) grew by less than share of it, or limit
// has passed, or ctx is done; it returns how long it waited.
func waitQuiet(ctx context.Context, used func() float64, window time.Duration, share float64, limit time.Duration) time.Duration {
	start := time.Now()
	prev := used()
	t := time.NewTicker(window)
	defer t.Stop()
	for time.Since(start) < limit {
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-t.C:
		}
		now := used()
		if now-prev < share*window.Seconds() {
			break
		}
		prev = now
	}
	return time.Since(start)
}
