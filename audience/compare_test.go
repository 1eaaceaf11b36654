package audience

import (
	"bytes"
	"testing"
)

// slowerRun is sampleRecord's run section as a slower server left it:
// notes seen later, more never seen or buried, a drain that ended, more
// probe errors, deliveries later and fewer.
func slowerRun() *RunSection {
	run := *sampleRecord().Run
	run.ProbeHz = 2
	run.Visibility.Seen, run.Visibility.NeverSeen, run.Visibility.Buried = 8400, 50, 10
	run.Visibility.Latency.Count, run.Visibility.Latency.P50, run.Visibility.Latency.P95, run.Visibility.Latency.P99 = 8400, 350000, 3500000, 5200000
	run.Drain = DrainStats{Seconds: 4.2, Complete: true, Timeout: 60}
	run.Home.Errors, run.Home.Latency.P95 = 34, 30000
	run.Delivery.Reached, run.Delivery.Completeness = 470, 470.0/480
	run.Delivery.Latency.Count, run.Delivery.Latency.P95, run.Delivery.Latency.P99 = 470, 420000, 900000
	return &run
}

// baseRun is sampleRecord's run section with its deliveries' quantiles
// resting on a count, as a real run's do.
func baseRun() *RunSection {
	run := sampleRecord().Run
	run.Delivery.Latency.Count, run.Delivery.Latency.P99 = 478, 600000
	return run
}

// noNotes is run as a run that owed no note left it (a delete storm):
// nothing to see, no drain to time.
func noNotes(run *RunSection) *RunSection {
	run.Visibility, run.Drain = VisibilityStats{}, DrainStats{Complete: true, Timeout: 60}
	return run
}

// TestCompareRuns: the figures of two run sections side by side, each
// formatted as crowd compare's table formats durations and shares, its
// change relative for a duration or a count and in points for a share;
// "-" where a side measured nothing.
func TestCompareRuns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		base, head func() *RunSection
		want       map[string][3]string // "part metric": base, head, change
	}{
		// Both measured everything: every figure has its change.
		{"both present", baseRun, slowerRun, map[string][3]string{
			"visibility seen":       {"8455 of 10740 owed", "8400 of 10740 owed", "-0.7%"},
			"visibility p50":        {"310ms", "350ms", "+12.9%"},
			"visibility p95":        {"2.90s", "3.50s", "+20.7%"},
			"visibility p99":        {"4.10s", "5.20s", "+26.8%"},
			"visibility never seen": {"2 of 8460 accepted (0.02%)", "50 of 8460 accepted (0.59%)", "+0.57pp"},
			"visibility buried":     {"3 of 8460 accepted (0.04%)", "10 of 8460 accepted (0.12%)", "+0.08pp"},
			// A drain not complete is only the time waited: no change.
			"drain after the flood": {"> 60.0s (not complete)", "4.20s", "-"},
			"home p95":              {"27.0ms", "30.0ms", "+11.1%"},
			"home p99":              {"64.0ms", "64.0ms", "+0.0%"},
			"home probe errors":     {"10 of 4800 probes (0.21%)", "34 of 4800 probes (0.71%)", "+0.50pp"},
			"delivery p95":          {"350ms", "420ms", "+20.0%"},
			"delivery p99":          {"600ms", "900ms", "+50.0%"},
			"delivery reached":      {"478 of 480 (0.42% unreached)", "470 of 480 (2.08% unreached)", "+1.67pp"},
		}},
		// The head expected no delivery (no crowd follower, no post): its
		// side of the deliveries is "-", and so is their change.
		{"no deliveries in head", baseRun, func() *RunSection {
			run := slowerRun()
			run.Delivery = DeliveryStats{Completeness: 1}
			return run
		}, map[string][3]string{
			"delivery p95":     {"350ms", "-", "-"},
			"delivery p99":     {"600ms", "-", "-"},
			"delivery reached": {"478 of 480 (0.42% unreached)", "-", "-"},
			"visibility p95":   {"2.90s", "3.50s", "+20.7%"},
		}},
		// Neither run owed a note (a delete storm): no visibility, no
		// drain to time, and no share of nothing.
		{"zero notes", func() *RunSection { return noNotes(baseRun()) }, func() *RunSection { return noNotes(slowerRun()) }, map[string][3]string{
			"visibility seen":       {"-", "-", "-"},
			"visibility p50":        {"-", "-", "-"},
			"visibility never seen": {"-", "-", "-"},
			"visibility buried":     {"-", "-", "-"},
			"drain after the flood": {"-", "-", "-"},
			"home p95":              {"27.0ms", "30.0ms", "+11.1%"},
		}},
		// Every note visible before the base's flood ended, the head's
		// 4.2 s after: a change from zero, which no ratio says.
		{"drain from zero", func() *RunSection {
			run := baseRun()
			run.Drain = DrainStats{Seconds: 0, Complete: true, Timeout: 60}
			return run
		}, slowerRun, map[string][3]string{
			"drain after the flood": {"0", "4.20s", "new"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string][3]string{}
			for _, r := range CompareRuns(c.base(), c.head()) {
				got[r.Part+" "+r.Metric] = [3]string{r.Base, r.Head, r.Change}
			}
			for k, w := range c.want {
				if g, ok := got[k]; !ok || g != w {
					t.Errorf("%s: got %q, want %q", k, g, w)
				}
			}
		})
	}
}

// TestWriteRunComparison: the block crowd compare prints after its
// verdict, heading (shown, not judged, why, and what judges) and rows.
func TestWriteRunComparison(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteRunComparison(&b, baseRun(), slowerRun()); err != nil {
		t.Fatal(err)
	}
	golden(t, "run-comparison.txt.golden", b.Bytes())
}
