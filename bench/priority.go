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

// rowPipelineRealtime is the priority section's row: what a real-time
// dispatcher thread buys the pipeline, beside the normal policy.
const rowPipelineRealtime = "pipeline_realtime_vs_normal"

// prioritySection: the libcrypto pipeline-signed flood's maximum sustained
// rate with the dispatcher's thread under SCHED_DEADLINE (realtime) and under
// the normal policy, the two searches alternating trial by trial, each
// held to the same bounds as the backends section's. What it judges is
// the generator's own lateness: where the kernel leaves the woken
// dispatcher waiting behind other threads, the p99 lateness bound fails
// long before signing runs out.
func (b *bench) prioritySection(ctx context.Context) {
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
