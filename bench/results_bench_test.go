package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/signing"
)

// BenchmarkResultsAtModerateRate prices --results where a flood's sends
// come one at a time: a presigned flood at 1 000/s against the null sink,
// b.N pairs of trials (4 s, 1 s of it warm-up), one without results and
// one writing every send as `crowd flood --results` does, alternating. It
// reports what the results side took more a send: the flood process's CPU
// (µs) and its context switches, the wake-ups the results writer's waits
// cost. Against a fast flood's, a moderate rate is where a writer woken
// often pays most, each wake-up serving few lines:
//
//	go test -run '^$' -bench ResultsAtModerateRate -benchtime 4x ./bench
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
	var cpu, switches float64
	b.ResetTimer()
	for range b.N {
		plain, _ := floodTrial(ctx, "plain", &cycle{reqs: pool}, rate, cfg, nil)
		written := withResults(path, func(watch trialWatch) outcome {
			o, _ := floodTrial(ctx, "results", &cycle{reqs: pool}, rate, cfg, watch)
			return o
		})
		if plain.CPUPerSend <= 0 || written.CPUPerSend <= 0 || strings.HasPrefix(written.Why, "the results") {
			b.Fatalf("a trial measured nothing, or the results failed: without %+v, with %+v", plain, written)
		}
		cpu += written.CPUPerSend - plain.CPUPerSend
		switches += written.SwitchesPerSend - plain.SwitchesPerSend
	}
	b.ReportMetric(cpu/float64(b.N), "µs-cpu-more/send")
	b.ReportMetric(switches/float64(b.N), "switches-more/send")
}
