package audience

import (
	"bytes"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// compareDefaults are crowd compare's options by default: 15 %, a share
// by 0.1 percentage point, a latency by 1 ms.
func compareDefaults() record.CompareOptions {
	return record.CompareOptions{MaxRegression: 0.15, ShareFloor: 0.001, LatencyFloor: record.DefaultLatencyFloor}
}

// slowerRun is sampleRecord's run section as a slower server left it:
// notes seen later, more never seen or buried, a drain that ended, more
// probe errors, deliveries later and fewer.
func slowerRun(t testing.TB) *RunSection {
	run := *baseRun(t)
	run.ProbeHz = 2
	run.Visibility.Seen, run.Visibility.NeverSeen, run.Visibility.Buried = 8400, 50, 10
	run.Visibility.Latency = recordtest.Latency(t, 8400, 350000, 3500000, 5200000)
	run.Drain = DrainStats{Seconds: 4.2, Complete: true, Timeout: 60}
	run.Home.Errors, run.Home.OK, run.Home.Latency = 34, 4766, recordtest.Latency(t, 4766, 9000, 30000, 64000)
	run.Delivery.Reached, run.Delivery.Completeness = 470, 470.0/480
	run.Delivery.Latency = recordtest.Latency(t, 470, 90000, 420000, 900000)
	return &run
}

// baseRun is sampleRecord's run section with its latencies' histograms
// kept, as a real run's are, and its notes counted (each owed to both
// personas).
func baseRun(t testing.TB) *RunSection {
	run := sampleRecord().Run
	run.Visibility.Notes = 5370
	run.Visibility.Latency = recordtest.Latency(t, 8455, 310000, 2900000, 4100000)
	run.Home.Latency = recordtest.Latency(t, 4790, 9000, 27000, 64000)
	run.Delivery.Latency = recordtest.Latency(t, 478, 90000, 350000, 600000)
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
		base, head func(testing.TB) *RunSection
		want       map[string][3]string // "part metric": base, head, change
	}{
		// Both measured everything: every figure has its change.
		{"both present", baseRun, slowerRun, map[string][3]string{
			"visibility seen":       {"8455 of 10740 owed", "8400 of 10740 owed", "-0.7%"},
			"visibility p50":        {"310ms", "350ms", "+13.0%"},
			"visibility p95":        {"2.90s", "3.50s", "+20.7%"},
			"visibility p99":        {"4.10s", "5.20s", "+26.8%"},
			"visibility never seen": {"2 of 8460 accepted (0.02%)", "50 of 8460 accepted (0.59%)", "+0.57pp"},
			"visibility buried":     {"3 of 8460 accepted (0.04%)", "10 of 8460 accepted (0.12%)", "+0.08pp"},
			// A drain not complete is only the time waited: no change.
			"drain after the flood": {"> 60.0s (not complete)", "4.20s", "-"},
			"home p95":              {"27.0ms", "30.0ms", "+11.1%"},
			"home p99":              {"63.9ms", "63.9ms", "-0.1%"},
			"home probe errors":     {"10 of 4800 probes (0.21%)", "34 of 4800 probes (0.71%)", "+0.50pp"},
			"delivery p95":          {"349ms", "420ms", "+20.2%"},
			"delivery p99":          {"591ms", "880ms", "+48.9%"},
			"delivery reached":      {"478 of 480 (0.42% unreached)", "470 of 480 (2.08% unreached)", "+1.67pp"},
		}},
		// The head expected no delivery (no crowd follower, no post): its
		// side of the deliveries is "-", and so is their change.
		{"no deliveries in head", baseRun, func(t testing.TB) *RunSection {
			run := slowerRun(t)
			run.Delivery = DeliveryStats{Completeness: 1}
			return run
		}, map[string][3]string{
			"delivery p95":     {"349ms", "-", "-"},
			"delivery p99":     {"591ms", "-", "-"},
			"delivery reached": {"478 of 480 (0.42% unreached)", "-", "-"},
			"visibility p95":   {"2.90s", "3.50s", "+20.7%"},
		}},
		// Neither run owed a note (a delete storm): no visibility, no
		// drain to time, and no share of nothing.
		{"zero notes", func(t testing.TB) *RunSection { return noNotes(baseRun(t)) }, func(t testing.TB) *RunSection { return noNotes(slowerRun(t)) }, map[string][3]string{
			"visibility seen":       {"-", "-", "-"},
			"visibility p50":        {"-", "-", "-"},
			"visibility never seen": {"-", "-", "-"},
			"visibility buried":     {"-", "-", "-"},
			"drain after the flood": {"-", "-", "-"},
			"home p95":              {"27.0ms", "30.0ms", "+11.1%"},
		}},
		// Every note visible before the base's flood ended, the head's
		// 4.2 s after: a change from zero, which no ratio says.
		{"drain from zero", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Drain = DrainStats{Seconds: 0, Complete: true, Timeout: 60}
			return run
		}, slowerRun, map[string][3]string{
			"drain after the flood": {"0", "4.20s", "new"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string][3]string{}
			for _, r := range CompareRuns(c.base(t), c.head(t), compareDefaults()).Rows {
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

// TestJudgeRuns: two run sections' figures are judged by crowd compare's
// rule: beyond the threshold, the floor (for a visibility latency, a probe
// period) and the sampling noise over independent units (notes, posts),
// or shown only, saying why.
func TestJudgeRuns(t *testing.T) {
	t.Parallel()
	same := func(t testing.TB) *RunSection { return baseRun(t) }
	for _, c := range []struct {
		name string
		head func(testing.TB) *RunSection // against baseRun
		want map[string]string            // "part metric": its verdict
	}{
		// The same run twice: nothing moved.
		{"same", same, map[string]string{"visibility p95": "", "visibility never seen": "", "delivery reached": "", "home p99": ""}},
		// Notes seen 40 % later at p95 and p99, over thousands of notes:
		// regressed; the p50, 310 ms to 330 ms, moved by less than a probe
		// period (250 ms) and less than the threshold.
		{"visibility slower", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Visibility.Latency = recordtest.Latency(t, 8455, 330000, 4100000, 5800000)
			return run
		}, map[string]string{"visibility p50": "", "visibility p95": "REGRESSED", "visibility p99": "REGRESSED"}},
		// p50 310 ms to 450 ms: beyond 15 %, not beyond a probe period.
		{"under a probe period", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Visibility.Latency = recordtest.Latency(t, 8455, 450000, 2900000, 4100000)
			return run
		}, map[string]string{"visibility p50": "(within noise)"}},
		// p95 2.9 s to 3.4 s over 300 notes on each side (the same 8455
		// seen, by many personas each): the order-statistic intervals
		// overlap; the p99 has 3 notes beyond it.
		{"few notes", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Visibility.Notes = 300
			run.Visibility.Latency = recordtest.Latency(t, 8455, 310000, 3400000, 4800000)
			return run
		}, map[string]string{"visibility p95": "(within noise)", "visibility p99": "(few notes)"}},
		// The same over thousands of notes: the p95 regressed; the p99's
		// tail is thin enough (1 % of 5370) for 17 % to be noise.
		{"many notes", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Visibility.Latency = recordtest.Latency(t, 8455, 310000, 3400000, 4800000)
			return run
		}, map[string]string{"visibility p95": "REGRESSED", "visibility p99": "(within noise)"}},
		// Faster, but over fewer notes seen (a fifth never): not better.
		{"faster over fewer", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Visibility.Seen, run.Visibility.NeverSeen = 6760, 1700
			run.Visibility.Latency = recordtest.Latency(t, 6760, 100000, 1000000, 2000000)
			return run
		}, map[string]string{"visibility p95": "(over fewer: not scored better)", "visibility never seen": "REGRESSED"}},
		// Faster over as many: better.
		{"faster", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Visibility.Latency = recordtest.Latency(t, 8455, 100000, 1000000, 2000000)
			return run
		}, map[string]string{"visibility p95": "better"}},
		// Another probe rate: the visibility latencies are shown only.
		{"probe periods differ", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.ProbeHz = 2
			run.Visibility.Latency = recordtest.Latency(t, 8455, 330000, 4100000, 5800000)
			return run
		}, map[string]string{"visibility p95": "", "visibility never seen": ""}},
		// A record made before run sections kept histograms and counted
		// notes: its quantiles and its never-seen share are shown, not
		// judged (without the notes, every persona's copy would count as
		// a note); its other shares are judged.
		{"older record", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Visibility.Latency.HDR, run.Visibility.Notes = "", 0
			run.Visibility.NeverSeen = 300
			run.Delivery.Reached = 432
			return run
		}, map[string]string{"visibility p95": "(not judged: an older record keeps no histogram)", "visibility never seen": "(not judged: an older record counts no notes)",
			"delivery reached": "REGRESSED"}},
		// Deliveries: a tenth of 480 unreached where 2 were, over 240 posts.
		{"deliveries lost", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Delivery.Reached = 432
			return run
		}, map[string]string{"delivery reached": "REGRESSED"}},
		// Three more of 480 unreached: beyond 15 % and the floor, within
		// the noise of 240 posts.
		{"deliveries a few more lost", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Delivery.Reached = 475
			return run
		}, map[string]string{"delivery reached": "(within noise)"}},
		// The home timeline's probes slower, and failing more.
		{"home slower", func(t testing.TB) *RunSection {
			run := baseRun(t)
			run.Home.Errors, run.Home.OK = 240, 4560
			run.Home.Latency = recordtest.Latency(t, 4560, 9000, 60000, 120000)
			return run
		}, map[string]string{"home p95": "REGRESSED", "home p99": "REGRESSED", "home probe errors": "REGRESSED"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := baseRun(t)
			if c.name == "few notes" {
				base.Visibility.Notes = 300 // both runs' notes few
			}
			cmp := CompareRuns(base, c.head(t), compareDefaults())
			got := map[string]string{}
			for _, r := range cmp.Rows {
				got[r.Part+" "+r.Metric] = r.Verdict
				if r.Regressed() != (r.Verdict == "REGRESSED") {
					t.Errorf("%s %s: Regressed() %v with verdict %q", r.Part, r.Metric, r.Regressed(), r.Verdict)
				}
			}
			for k, w := range c.want {
				if g, ok := got[k]; !ok || g != w {
					t.Errorf("%s: verdict %q, want %q", k, g, w)
				}
			}
			if differ := c.name == "probe periods differ"; differ != (len(cmp.Notes) == 1 && strings.Contains(cmp.Notes[0], "probed the homes at 4/s and 2/s")) {
				t.Errorf("notes %q: want the probe rates named only when they differ", cmp.Notes)
			}
		})
	}
}

// TestWriteRunComparison: the block crowd compare prints after its
// verdict: the rule, the rows with their verdicts, the notes and the run
// sections' own verdict line.
func TestWriteRunComparison(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	c, err := WriteRunComparison(&b, baseRun(t), slowerRun(t), compareDefaults())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "run-comparison.txt.golden", b.Bytes())
	if len(c.Regressions()) == 0 || !strings.Contains(b.String(), "crowd run: REGRESSED beyond 15%") {
		t.Errorf("the slower run's probe errors and deliveries regressed; the block says:\n%s", b.String())
	}
}
