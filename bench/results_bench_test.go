package main

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/crowdfed/crowd/signing"
)

// BenchmarkResultsAtModerateRate prices --results where a flood's sends
// come one at a time: a presigned flood at 1 000/s against the null sink,
// b.N pairs of trials (4 s, 1 s of it warm-up), one without results and
// one writing every send as `crowd flood --results` does, each pair in the
// other order from the one before, after one pair untimed (the sink's and
// the flood's first connections, the heap's first growth). It reports
// what the results side took more a send, the mean over the pairs and
// the lowest and highest pair: the flood process's CPU (µs) and its
// context switches, the wake-ups the results writer's waits cost.
// Against a fast flood's, a moderate rate is where a writer woken often
// pays most, each wake-up serving few lines:
//
//	go test -run '^$' -bench ResultsAtModerateRate -benchtime 3x ./bench
func BenchmarkResultsAtModerateRate(b *testing.B) {
	const rate = 1000
	sink, addr, err := startSink()
	if err != nil {
		b.Fatal(err)
	}
	defer sink.stop()
	world, err := openWorld(b.TempDir(), 20, 2, signing.GoBackend())
	if err != nil {
		b.Fatal(err)
	}
	cfg := defaultConfig()
	gen, err := newGenerator(world, cfg.Mix, sinkTarget(addr))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	pool, _, err := presignPool(ctx, gen, 2048)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Trial, cfg.Warmup = 4*time.Second, time.Second
	cfg.sinkPID = sink.cmd.Process.Pid
	path := filepath.Join(b.TempDir(), "sends.ndjson")
	trial := func(side string, watch trialWatch) outcome {
		runtime.GC()
		o, _ := floodTrial(ctx, side, &cycle{reqs: pool}, rate, cfg, watch)
		o.judge(cfg.LatencyBound, nil, nil)
		return o
	}
	plain := func() outcome { return trial("plain", nil) }
	written := func() outcome { return withResults(path, func(w trialWatch) outcome { return trial("results", w) }) }
	// more is what one pair says the results cost, in the order the
	// pair's index gives.
	more := func(i int) (cpu, switches float64) {
		var without, with outcome
		if i%2 == 0 {
			without, with = plain(), written()
		} else {
			with, without = written(), plain()
		}
		if !without.Pass || !with.Pass || without.CPUPerSend <= 0 || with.CPUPerSend <= 0 {
			b.Fatalf("a trial was not sustained or measured nothing: without %+v, with %+v", without, with)
		}
		return with.CPUPerSend - without.CPUPerSend, with.SwitchesPerSend - without.SwitchesPerSend
	}
	more(1)
	var cpus, switches []float64
	b.ResetTimer()
	for i := range b.N {
		c, s := more(i)
		cpus, switches = append(cpus, c), append(switches, s)
	}
	b.StopTimer()
	report := func(xs []float64, unit string) {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		b.ReportMetric(sum/float64(len(xs)), unit)
		b.ReportMetric(slices.Min(xs), "min-"+unit)
		b.ReportMetric(slices.Max(xs), "max-"+unit)
	}
	report(cpus, "µs-cpu-more/send")
	report(switches, "switches-more/send")
}
