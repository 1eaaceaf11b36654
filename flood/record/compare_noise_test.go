//go:build !race

// 240 records of synthetic sends, each encoded and read back: the race
// detector slows the histograms' compression tenfold and has nothing to
// watch (one goroutine per row, sharing nothing); .ci/run runs this file
// without it.

package record_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// noisyRun is a run of n sends per type (Create, Like) whose latencies are
// drawn from one log-normal distribution (median median) with rng: two
// calls with other rngs are two runs of the same SUT.
func noisyRun(t *testing.T, rng *rand.Rand, n int, median time.Duration, errShare float64) *record.Record {
	t.Helper()
	types := map[string]*record.Stats{}
	for _, typ := range []string{"Create", "Like"} {
		lat := make([]time.Duration, n)
		cls := make([]record.Class, n)
		for i := range n {
			lat[i] = time.Duration(float64(median) * math.Exp(0.6*rng.NormFloat64()))
			cls[i] = record.Class202
			if rng.Float64() < errShare {
				cls[i] = record.Class503
			}
		}
		types[typ] = recordtest.Sends(n, func(i int) time.Duration { return lat[i] }, func(i int) record.Class { return cls[i] })
	}
	s := record.Settings{Arrivals: "constant", Mix: "create=1,like=1"}
	return recordtest.RoundTrip(t, recordtest.MustRecord(t, recordtest.Run(t0, 10*time.Second, types), s))
}

// TestCompareIsNoiseAware: runs of one SUT differ only by sampling, and
// their comparison never regresses; a SUT twice as slow, or failing ten
// times as often, does, on the same number of sends. Each row draws its own
// pairs from its own stream, so the rows run side by side.
func TestCompareIsNoiseAware(t *testing.T) {
	ms, err := record.ParseCompareMetrics("p50,p95,p99,errors,rate,throughput")
	if err != nil {
		t.Fatal(err)
	}
	opts := record.CompareOptions{Metrics: ms, MaxRegression: 0.15, ShareFloor: 0.001, LatencyFloor: record.DefaultLatencyFloor}
	for row, c := range []struct {
		name      string
		headScale float64 // head's median latency / base's
		headErr   float64 // head's error share (base: 1 %)
		regressed bool
	}{
		// The same SUT: sampling noise alone, never a regression.
		{"same SUT", 1, 0.01, false},
		// Twice as slow: a regression.
		{"twice as slow", 2, 0.01, true},
		// Ten times the errors: a regression.
		{"errors ×10", 1, 0.10, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(1, uint64(row)))
			for i := range 40 { // 40 pairs of 250-send runs, as a 5 s run at 50/s
				base := noisyRun(t, rng, 125, 4*time.Millisecond, 0.01)
				head := noisyRun(t, rng, 125, time.Duration(c.headScale*float64(4*time.Millisecond)), c.headErr)
				cmp, err := record.Compare(base, head, opts)
				if err != nil {
					t.Fatal(err)
				}
				if cmp.Regressed() != c.regressed {
					var b bytes.Buffer
					cmp.WriteTable(&b)
					t.Fatalf("pair %d: regressed %v, want %v:\n%s", i, cmp.Regressed(), c.regressed, b.String())
				}
			}
		})
	}
}
