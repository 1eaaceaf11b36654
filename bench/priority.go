package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// The priority section's rows: what a real-time dispatcher thread buys
// the pipeline, beside the normal policy; and what it costs a SUT on the
// same cores above 5 000/s, where --dispatcher-priority auto keeps the
// normal policy.
const (
	rowPipelineRealtime  = "pipeline_realtime_vs_normal"
	rowPresignedRealtime = "presigned_realtime_vs_normal"
)

// presignedRealtimeRate is the rate of the presigned_realtime_vs_normal
// row: above auto's real-time limit of 5 000/s and below 10 000/s, where
// the dispatcher asked to run real-time still has a thread of its own to
// raise. Under the normal policy, dispatchers share the schedule there,
// one a core, as under auto.
const presignedRealtimeRate = 8000

// prioritySection: the real-time dispatcher beside the normal policy,
// for the pipeline's maximum and for a presigned flood's latency above
// auto's real-time limit.
func (b *bench) prioritySection(ctx context.Context) {
	b.pipelineRealtimeRow(ctx)
	b.presignedRealtimeRow(ctx)
}

// pipelineRealtimeRow: the libcrypto pipeline-signed flood's maximum sustained
// rate with the dispatcher's thread under SCHED_DEADLINE (realtime) and under
// the normal policy, the two searches alternating trial by trial, each
// held to the same bounds as the backends section's. What it judges is
// the generator's own lateness: where the kernel leaves the woken
// dispatcher waiting behind other threads, the p99 lateness bound fails
// long before signing runs out.
func (b *bench) pipelineRealtimeRow(ctx context.Context) {
	const name = "flood, pipeline (libcrypto): real-time dispatcher vs normal policy (same run)"
	const target = "reference (what --dispatcher-priority realtime buys)"
	lcWorld, err := b.libcryptoWorld()
	if err != nil {
		b.rep.fail(rowPipelineRealtime, name, target, err)
		return
	}
	side, err := newBackendFlood(signing.BackendLibcrypto, lcWorld, b.sinkAddr)
	if err != nil {
		b.rep.fail(rowPipelineRealtime, name, target, err)
		return
	}
	signer := newSigner()
	runtime.GC()
	ceil := signCeiling(ctx, signer, side.draft, max(b.cfg.Measure/4, 100*time.Millisecond), runtime.NumCPU())
	b.logf("  libcrypto signing alone on %d cores: %.0f/s", runtime.NumCPU(), ceil)
	// Both start where the pipeline rows have sustained (about a third of
	// signing alone) and bracket from there; a trial whose dispatcher did
	// not run as its side asks (refused, or past 10 000/s, where the
	// dispatcher has no thread of its own) fails.
	rt := newSearch(string(flood.PriorityRealtime), 0.35*ceil, 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
	normal := newSearch(string(flood.PriorityNormal), 0.35*ceil, 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
	trial := func(prio flood.Priority) func(context.Context, float64) outcome {
		set := func(p *flood.Plan) (flood.Collector, func(record.Progress)) {
			p.Priority = prio
			return nil, nil
		}
		// Real-time is deadline, or FIFO where the kernel refused deadline
		// (the record then says why, after the policy's name).
		want := []string{"deadline", "fifo"}
		if prio == flood.PriorityNormal {
			want = []string{"other"}
		}
		return func(ctx context.Context, rate float64) outcome {
			o := b.pipelineTrial(ctx, string(prio), side.gen, signer, rate, 0, 0, set)
			if policy := dispatcherPolicy(&o); o.Pass && !slices.Contains(want, policy) {
				// Refused, or a rate past the dispatcher's own thread: not
				// the comparison this row makes.
				o.Pass = false
				o.Why = fmt.Sprintf("the dispatcher ran under %s, not %s", o.Dispatcher, strings.Join(want, " or "))
			}
			return o
		}
	}
	interleave(ctx, rt, normal, trial(flood.PriorityRealtime), trial(flood.PriorityNormal))

	rtBest, rtT := rt.best()
	nBest, nT := normal.best()
	b.rep.Details[rowPipelineRealtime] = map[string]any{"realtime": rt.trials, "normal": normal.trials, "signing_alone": ceil}
	row := Row{Key: rowPipelineRealtime, Name: name, Value: rtBest, Unit: "/s", Ceiling: nBest,
		CeilingName: "the same flood with the dispatcher under the normal policy", Target: target}
	rule := fmt.Sprintf("%s; sustained: achieved ≥ 0.99 × offered, no drops, signers kept up, %s, p99 latency ≤ %v; the two searches alternating",
		b.signersRule(), b.latenessRule(), b.cfg.LatencyBound)
	switch {
	case rtT != nil && nT != nil:
		row.Ratio = rtBest / nBest
		row.Notes = fmt.Sprintf("realtime %s (%.2f × signing alone %s), p99 lateness %.2f ms, dispatcher %s; normal %s (%.2f ×), p99 lateness %.2f ms, dispatcher %s; %s",
			formatValue(rtBest, "/s"), rtBest/ceil, formatValue(ceil, "/s"), rtT.LatenessP99MS, rtT.Dispatcher,
			formatValue(nBest, "/s"), nBest/ceil, nT.LatenessP99MS, nT.Dispatcher, rule)
	default:
		row.Notes = "a side sustained no rate: realtime " + bestOrWhy(rtT, rt.trials) + ", normal " + bestOrWhy(nT, normal.trials) + "; " + rule
	}
	b.rep.set(row)
}

// presignedRealtimeRow: the presigned flood at presignedRealtimeRate on
// the null sink, which shares the bench's cores as a SUT beside the crowd
// does, with the dispatcher under SCHED_DEADLINE and under the normal
// policy, -lateness-trials trials each, alternating. Its figures are the
// medians of the trials' p99 latency, and the notes give their lateness
// and pace: whether a real-time dispatcher's earlier sends are worth the
// later answers of a SUT whose CPUs it takes each time it wakes. A trial
// whose dispatcher did not run as its side asks (no permission for real
// time, one CPU) is left out, and a side with none has no figure.
func (b *bench) presignedRealtimeRow(ctx context.Context) {
	name := fmt.Sprintf("flood, presigned at %s: p99 latency with a real-time dispatcher vs the normal policy (same run)", formatValue(presignedRealtimeRate, "/s"))
	const target = "reference (why --dispatcher-priority auto keeps the normal policy above 5 000/s)"
	pool, _, err := b.sinkPool(ctx)
	if err != nil {
		b.rep.fail(rowPresignedRealtime, name, target, err)
		return
	}
	run := func(prio flood.Priority) outcome {
		set := func(p *flood.Plan) (flood.Collector, func(record.Progress)) {
			p.Priority = prio
			return nil, nil
		}
		runtime.GC()
		o, _ := floodTrial(ctx, string(prio), &cycle{reqs: pool}, presignedRealtimeRate, b.cfg, set)
		o.judge(b.cfg.LatencyBound, nil, nil)
		b.logTrial(o)
		return o
	}
	// A first trial, not counted, takes the sink's and the process's
	// first-use costs (their heaps, the sink's goroutines), which fell on
	// whichever side went first; then each round swaps the order.
	run(flood.PriorityNormal)
	sides := []flood.Priority{flood.PriorityRealtime, flood.PriorityNormal}
	trials := map[flood.Priority][]outcome{}
	for i := 0; i < max(1, b.cfg.LatenessTrials) && ctx.Err() == nil; i++ {
		for _, prio := range sides {
			trials[prio] = append(trials[prio], run(prio))
		}
		slices.Reverse(sides)
	}
	if ctx.Err() != nil {
		b.rep.fail(rowPresignedRealtime, name, target, ctx.Err())
		return
	}
	b.rep.Details[rowPresignedRealtime] = map[string]any{"realtime": trials[flood.PriorityRealtime], "normal": trials[flood.PriorityNormal]}
	type side struct {
		latency, lateness, achieved float64
		dropped                     int64
		why                         string // why a trial was left out; kept only where none counts
	}
	summary := func(prio flood.Priority) side {
		want := []string{"deadline", "fifo"}
		if prio == flood.PriorityNormal {
			want = []string{"other", sharedPolicy} // one thread, or one a core
		}
		var lat, late, pace []float64
		var sd side
		for _, o := range trials[prio] {
			switch {
			case o.Completed == 0:
				sd.why = "nothing completed: " + o.Why
				continue
			case !slices.Contains(want, dispatcherPolicy(&o)):
				sd.why = fmt.Sprintf("the dispatcher ran under %s, not %s", o.Dispatcher, strings.Join(want, " or "))
				continue
			}
			lat, late, pace = append(lat, o.LatencyP99MS), append(late, o.LatenessP99MS), append(pace, o.Achieved)
			sd.dropped += o.Dropped
		}
		if len(lat) > 0 {
			sd.latency, sd.lateness, sd.achieved, sd.why = median(lat), median(late), median(pace), ""
		}
		return sd
	}
	rt, normal := summary(flood.PriorityRealtime), summary(flood.PriorityNormal)
	row := Row{Key: rowPresignedRealtime, Name: name, Value: rt.latency, Unit: "ms", Ceiling: normal.latency,
		CeilingName: "the same flood under the normal policy (dispatchers sharing the schedule, one a core, where the crowd may use two)", Target: target}
	how := fmt.Sprintf("a pool of %d presigned requests on the null sink (a separate process on the same cores), %v trials after a %v warm-up, %d of each alternating (the first of each round swapped) after one discarded; medians of the trials' p99",
		len(pool), b.cfg.Trial, b.cfg.Warmup, max(1, b.cfg.LatenessTrials))
	switch {
	case rt.latency > 0 && normal.latency > 0:
		row.Ratio = rt.latency / normal.latency
		row.Notes = fmt.Sprintf("p99 latency realtime %.2f ms, normal %.2f ms; p99 lateness realtime %.2f ms, normal %.2f ms; achieved (median) %s and %s, %d and %d sends dropped; %s",
			rt.latency, normal.latency, rt.lateness, normal.lateness, formatValue(rt.achieved, "/s"), formatValue(normal.achieved, "/s"), rt.dropped, normal.dropped, how)
	default:
		row.Notes = fmt.Sprintf("no comparison on this run: realtime %s, normal %s; %s", orNote(rt.why), orNote(normal.why), how)
	}
	b.rep.set(row)
}

// orNote is why, or "counted" when nothing kept a side's trials out.
func orNote(why string) string {
	if why == "" {
		return "counted"
	}
	return why
}
