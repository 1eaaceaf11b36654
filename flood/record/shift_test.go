package record_test

import (
	"testing"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// TestJudgeShifts: a figure of crowd run's run section is judged by
// compare's rule, its noise over the independent units its values came
// in, not over the values.
func TestJudgeShifts(t *testing.T) {
	o := record.CompareOptions{MaxRegression: 0.15, ShareFloor: 0.001, LatencyFloor: record.DefaultLatencyFloor}
	base := recordtest.Latency(t, 4000, 300000, 2000000, 3000000)
	slower := recordtest.Latency(t, 4000, 300000, 2400000, 3000000) // p95 +20 %
	unkept := slower
	unkept.HDR = ""
	for _, c := range []struct {
		name       string
		base, head record.LatencySample
		floor      float64
		want       record.Shift // Change not compared
	}{
		// 4000 values, each its own: p95 +20 % is beyond the noise.
		{"values their own", record.LatencySample{Hist: base}, record.LatencySample{Hist: slower}, 0, record.Shift{Verdict: record.VerdictRegressed}},
		// The same values in 400 units (a note read by ten personas):
		// within the noise.
		{"values in units", record.LatencySample{Hist: base, Units: 400}, record.LatencySample{Hist: slower, Units: 400}, 0, record.Shift{Noise: true}},
		// 100 units: 5 lie beyond the p95, too few to judge.
		{"few units", record.LatencySample{Hist: base, Units: 100}, record.LatencySample{Hist: slower, Units: 100}, 0, record.Shift{Few: true}},
		// A move of 400 ms under a floor of a 500 ms probe period.
		{"under the floor", record.LatencySample{Hist: base}, record.LatencySample{Hist: slower}, 500000, record.Shift{Noise: true}},
		// A side without its histogram: shown, not judged.
		{"histogram not kept", record.LatencySample{Hist: base}, record.LatencySample{Hist: unkept}, 0, record.Shift{Unkept: true}},
		// Faster by as much: better.
		{"faster", record.LatencySample{Hist: slower}, record.LatencySample{Hist: base}, 0, record.Shift{Verdict: record.VerdictBetter}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := record.JudgeQuantileShift(c.base, c.head, 95, c.floor, o)
			got.Change = 0
			if !ok || got != c.want {
				t.Errorf("JudgeQuantileShift = %+v, %v; want %+v", got, ok, c.want)
			}
		})
	}
	if _, ok := record.JudgeQuantileShift(record.LatencySample{Hist: base}, record.LatencySample{}, 95, 0, o); ok {
		t.Error("a side with no value was judged")
	}
	for _, c := range []struct {
		name       string
		base, head record.ShareSample
		want       record.Shift
	}{
		// 2 to 40 of 4000 never seen: regressed.
		{"more lost", record.ShareSample{N: 2, Of: 4000}, record.ShareSample{N: 40, Of: 4000}, record.Shift{Verdict: record.VerdictRegressed}},
		// The same over 40 units: within the noise.
		{"in units", record.ShareSample{N: 2, Of: 4000, Units: 40}, record.ShareSample{N: 40, Of: 4000, Units: 40}, record.Shift{Noise: true}},
		// 0.02 % to 0.05 %: beyond 15 %, under the 0.1-point floor.
		{"under the floor", record.ShareSample{N: 1, Of: 5000}, record.ShareSample{N: 2, Of: 4000}, record.Shift{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := record.JudgeShareShift(c.base, c.head, o)
			got.Change = 0
			if !ok || got != c.want {
				t.Errorf("JudgeShareShift = %+v, %v; want %+v", got, ok, c.want)
			}
		})
	}
	if _, ok := record.JudgeShareShift(record.ShareSample{N: 1, Of: 10}, record.ShareSample{}, o); ok {
		t.Error("a share of nothing was judged")
	}
}
