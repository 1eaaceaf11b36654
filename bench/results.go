package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/loadrun"
	"github.com/crowdfed/crowd/signing"
)

// resultsSection: what --results costs the flood. Two rows side by side,
// each two searches of the highest rate sustained, their trials
// alternating, then their CPU a send in paired trials (costRow): a
// pipeline-signed flood (target ≥ 0.95 of the same without) and a
// presigned one (≥ 0.9), the results side writing every send as `crowd
// flood --results` does (loadrun.CreateResults: the same Writer and
// ticket description) to an uncompressed file in a temporary directory. A
// results trial that lost a line or failed a write is not sustained.
func (b *bench) resultsSection(ctx context.Context) {
	dir, err := os.MkdirTemp("", "crowd-bench-results-")
	if err != nil {
		b.rep.fail(rowResultsPipeline, nameResultsPipeline, targetResultsPipeline, err)
		b.rep.fail(rowResultsPresigned, nameResultsPresigned, targetResultsPresigned, err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sends.ndjson")
	b.resultsPipelineRow(ctx, path)
	b.resultsPresignedRow(ctx, path)
}

const (
	nameResultsPipeline    = "flood, pipeline signing with --results: its rate beside the same without (null sink)"
	targetResultsPipeline  = "≥ 0.95 × without"
	nameResultsPresigned   = "flood, presigned with --results: its rate beside the same without (null sink)"
	targetResultsPresigned = "≥ 0.9 × without"
)

// withResults runs trial with the results of every send written to path
// (truncated each trial), and fails it when they lost a line or a write.
func withResults(path string, trial func(trialWatch) outcome) outcome {
	w, err := loadrun.CreateResults(path, nil)
	if err != nil {
		return outcome{Side: "results", Why: "the results: " + err.Error()}
	}
	o := trial(func(*flood.Plan) (flood.Collector, func(record.Progress)) {
		return w.Run(record.Settings{Label: "bench"}), nil
	})
	o.Side = "results"
	if err := w.Close(); err != nil {
		o.Pass, o.Why = false, "the results: "+err.Error()
	}
	return o
}

// resultsPipelineRow searches a pipeline-signed flood with and without
// the results.
func (b *bench) resultsPipelineRow(ctx context.Context, path string) {
	gen, signer, start, err := b.pipelineStart(ctx)
	if err != nil {
		b.rep.fail(rowResultsPipeline, nameResultsPipeline, targetResultsPipeline, err)
		return
	}
	plain := func(ctx context.Context, rate float64) outcome {
		b.logf("  without results:")
		o := b.pipelineTrial(ctx, "plain", gen, signer, rate, 0, 0, nil)
		o.Side = "plain"
		return o
	}
	written := func(ctx context.Context, rate float64) outcome {
		b.logf("  with results:")
		return withResults(path, func(watch trialWatch) outcome {
			return b.pipelineTrial(ctx, "results", gen, signer, rate, 0, 0, watch)
		})
	}
	rs := newSearch("results", start, 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
	ps := newSearch("plain", start, 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
	interleave(ctx, rs, ps, written, plain)
	rule := fmt.Sprintf("results side: every send written as --results does (uncompressed, a local temporary file); the pipeline row's rule otherwise; %v trials alternating", b.cfg.Trial)
	b.rep.set(b.costRow(ctx, rowResultsPipeline, nameResultsPipeline, targetResultsPipeline, 0.95, rs, ps, written, plain, rule))
}

// resultsPresignedRow searches a presigned flood with and without the
// results.
func (b *bench) resultsPresignedRow(ctx context.Context, path string) {
	pool, _, err := b.sinkPool(ctx)
	if err != nil {
		b.rep.fail(rowResultsPresigned, nameResultsPresigned, targetResultsPresigned, err)
		return
	}
	presigned := func(ctx context.Context, side string, rate float64, watch trialWatch) outcome {
		runtime.GC()
		o, _ := floodTrial(ctx, side, &cycle{reqs: pool}, rate, b.cfg, watch)
		o.judge(b.cfg.LatencyBound, nil, nil)
		b.logTrial(o)
		return o
	}
	plain := func(ctx context.Context, rate float64) outcome { return presigned(ctx, "plain", rate, nil) }
	written := func(ctx context.Context, rate float64) outcome {
		return withResults(path, func(watch trialWatch) outcome { return presigned(ctx, "results", rate, watch) })
	}
	rs := newSearch("results", b.cfg.StartRate, 1.5, b.cfg.Bracket, b.cfg.Steps, b.cfg.Retries)
	ps := newSearch("plain", b.cfg.StartRate, 1.5, b.cfg.Bracket, b.cfg.Steps, b.cfg.Retries)
	interleave(ctx, rs, ps, written, plain)
	rule := fmt.Sprintf("results side: every send written as --results does (uncompressed, a local temporary file); the presigned row's rule otherwise (%d presigned requests replayed round robin); %v trials alternating", len(pool), b.cfg.Trial)
	b.rep.set(b.costRow(ctx, rowResultsPresigned, nameResultsPresigned, targetResultsPresigned, 0.9, rs, ps, written, plain, rule))
}

// pipelineStart is what a search of pipeline-signed floods beside another
// starts from: the generator, the signer, and a first rate of 0.9 × the
// signing ceiling (one signer per core, as the pipeline row measures it).
func (b *bench) pipelineStart(ctx context.Context) (*traffic.Generator, *signing.Signer, float64, error) {
	gen, err := newGenerator(b.world, b.cfg.Mix, sinkTarget(b.sinkAddr))
	if err != nil {
		return nil, nil, 0, err
	}
	signer := newSigner()
	d, err := gen.Stream().Next()
	if err != nil {
		return nil, nil, 0, err
	}
	runtime.GC()
	return gen, signer, 0.9 * signCeiling(ctx, signer, d, max(b.cfg.Measure/4, 100*time.Millisecond), runtime.GOMAXPROCS(0)), nil
}
