package main

import (
	"context"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// sideTrials is a with/without pair of trial functions that log each
// call's side and rate in calls and answer with the next of their
// outcomes (the last one again once they run out).
type sideTrials struct {
	calls         []string
	with, without []outcome
	rates         []float64
}

// trial is a trial function of side answering from outs.
func (s *sideTrials) trial(side string, outs *[]outcome) func(context.Context, float64) outcome {
	return func(_ context.Context, rate float64) outcome {
		s.calls = append(s.calls, side)
		s.rates = append(s.rates, rate)
		o := (*outs)[0]
		if len(*outs) > 1 {
			*outs = (*outs)[1:]
		}
		o.Rate = rate
		return o
	}
}

// funcs are the with and the without trial functions.
func (s *sideTrials) funcs() (with, without func(context.Context, float64) outcome) {
	return s.trial("with", &s.with), s.trial("without", &s.without)
}

// costed is a sustained trial whose sends cost flood µs of the bench
// process's CPU and sink µs of the sink's.
func costed(flood, sink float64) outcome {
	return outcome{Pass: true, CPUPerSend: flood, SinkCPUPerSend: sink}
}

func TestPairCosts(t *testing.T) {
	cases := []struct {
		name           string
		pairs, retries int
		with, without  []outcome
		wantCalls      []string
		wantRatio      float64
		wantPairs      []float64
		wantUncounted  int
		wantWhy        string
	}{
		{
			// The order swaps each pair (ABBA…), and the ratio is the
			// means' (without / with), flood and sink counted.
			name: "three pairs", pairs: 3,
			with:      []outcome{costed(90, 10), costed(100, 10), costed(110, 10)},
			without:   []outcome{costed(80, 10), costed(90, 10), costed(100, 10)},
			wantCalls: []string{"with", "without", "without", "with", "with", "without"},
			wantRatio: 300.0 / 330, wantPairs: []float64{90.0 / 100, 100.0 / 110, 110.0 / 120},
		},
		{
			// Without a sink's CPU (outside Linux) the flood's alone counts.
			name: "no sink figure", pairs: 1,
			with: []outcome{costed(125, 0)}, without: []outcome{costed(100, 0)},
			wantCalls: []string{"with", "without"}, wantRatio: 0.8, wantPairs: []float64{0.8},
		},
		{
			// A failed trial is tried again, the failure kept but not
			// counted: the pairing compares the passes.
			name: "a failure tried again", pairs: 1, retries: 1,
			with:      []outcome{{Why: "2 dropped"}, costed(100, 0)},
			without:   []outcome{costed(90, 0)},
			wantCalls: []string{"with", "with", "without"}, wantRatio: 0.9, wantPairs: []float64{0.9}, wantUncounted: 1,
		},
		{
			// A paired trial still not sustained after its tries ends the
			// pairing: no ratio, and the reason names the side and the rate.
			name: "with not sustained", pairs: 2, retries: 1,
			with:      []outcome{costed(100, 10), {Why: "p99 lateness 3.1 ms > 1ms"}},
			without:   []outcome{costed(100, 10)},
			wantCalls: []string{"with", "without", "without", "with", "with"}, wantUncounted: 1,
			wantWhy: "with: not sustained at 1 000/s (p99 lateness 3.1 ms > 1ms)",
		},
		{
			// A trial whose flood CPU was not measured gives no cost to
			// compare, even with the sink's.
			name: "no CPU measured", pairs: 1,
			with: []outcome{costed(100, 10)}, without: []outcome{{Pass: true, SinkCPUPerSend: 10}},
			wantCalls: []string{"with", "without"},
			wantWhy:   "without: no CPU measured at 1 000/s",
		},
		{
			// No pairs: nothing runs, nothing compared.
			name: "no pairs", pairs: 0,
			with: []outcome{costed(1, 0)}, without: []outcome{costed(1, 0)},
			wantWhy: "no pair asked for",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &sideTrials{with: c.with, without: c.without}
			with, without := s.funcs()
			p := pairCosts(context.Background(), 1000, c.pairs, c.retries, with, without)
			if !slices.Equal(s.calls, c.wantCalls) {
				t.Errorf("trials ran %v, want %v", s.calls, c.wantCalls)
			}
			for _, r := range s.rates {
				if r != 1000 {
					t.Errorf("a trial ran at %v/s, want 1000", r)
				}
			}
			if p.Why != c.wantWhy {
				t.Errorf("why %q, want %q", p.Why, c.wantWhy)
			}
			if math.Abs(p.Ratio-c.wantRatio) > 1e-9 {
				t.Errorf("ratio %v, want %v", p.Ratio, c.wantRatio)
			}
			if c.wantWhy == "" && len(p.PairRatios) != len(c.wantPairs) {
				t.Fatalf("pair ratios %v, want %v", p.PairRatios, c.wantPairs)
			}
			for i := range c.wantPairs {
				if math.Abs(p.PairRatios[i]-c.wantPairs[i]) > 1e-9 {
					t.Errorf("pair %d ratio %v, want %v", i, p.PairRatios[i], c.wantPairs[i])
				}
			}
			all := append(slices.Clone(p.With), p.Without...)
			if len(all) != len(c.wantCalls) {
				t.Errorf("the pairing keeps %d trials, want the %d run", len(all), len(c.wantCalls))
			}
			uncounted := 0
			for _, o := range all {
				if o.Uncounted {
					uncounted++
				}
			}
			if uncounted != c.wantUncounted {
				t.Errorf("%d trials uncounted, want %d", uncounted, c.wantUncounted)
			}
		})
	}
}

// TestPairCostsStopsWithItsContext: a pairing whose context ends stops
// before its next pair and says so, with no ratio from the pairs it ran.
func TestPairCostsStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sideTrials{with: []outcome{costed(1, 1)}, without: []outcome{costed(1, 1)}}
	with, without := s.funcs()
	cancelling := func(ctx context.Context, rate float64) outcome {
		o := without(ctx, rate)
		cancel()
		return o
	}
	p := pairCosts(ctx, 1000, 3, 0, with, cancelling)
	if len(s.calls) != 2 || p.Ratio != 0 || !strings.HasPrefix(p.Why, "ended after 1 pairs of 3") {
		t.Errorf("context ended in the first pair: %d trials, ratio %v, why %q; want 2, none, \"ended after 1 pairs of 3…\"", len(s.calls), p.Ratio, p.Why)
	}
}

// searched is a search that is over, its best rate best (none when 0),
// with a failed trial above it.
func searched(side string, best float64) *search {
	s := &search{side: side, done: true, lo: best}
	if best > 0 {
		s.trials = append(s.trials, outcome{Side: side, Rate: best, Pass: true})
	}
	s.trials = append(s.trials, outcome{Side: side, Rate: 2000, Why: "p99 lateness 2.0 ms > 1ms"})
	return s
}

func TestCostRow(t *testing.T) {
	cases := []struct {
		name                 string
		pairs                int
		withBest, plainBest  float64
		with, without        []outcome
		wantRate             float64 // of the paired trials; 0: none ran
		wantValue, wantRatio float64
		wantMet              *bool // nil: no verdict
		wantNote             string
	}{
		{
			// The searches' maxima missed (0.90), within their noise; the
			// paired costs say the with side costs 2 % more: met.
			name: "pairing meets where the maxima missed", pairs: 2, withBest: 900, plainBest: 1000,
			with: []outcome{costed(1010, 10)}, without: []outcome{costed(990, 10)},
			wantRate: 630, wantValue: capacity(1020), wantRatio: 1000.0 / 1020, wantMet: met(true),
			wantNote: "the searches' maxima: with 900/s, without 1 000/s = 0.90",
		},
		{
			// The maxima passed (1.00), the pairing says 10 % more:
			// missed. The side without has the lower maximum here: the
			// pairs run at 0.7 × it.
			name: "pairing misses where the maxima met", pairs: 1, withBest: 1000, plainBest: 800,
			with: []outcome{costed(1100, 0)}, without: []outcome{costed(1000, 0)},
			wantRate: 560, wantValue: capacity(1100), wantRatio: 1000.0 / 1100, wantMet: met(false),
			wantNote: "CPU a send (flood + sink) with 1100.0 µs, without 1000.0 µs = 0.909",
		},
		{
			// On the bound exactly: met.
			name: "pairing on the bound", pairs: 1, withBest: 1000, plainBest: 1000,
			with: []outcome{costed(1000, 0)}, without: []outcome{costed(950, 0)},
			wantRate: 700, wantValue: capacity(1000), wantRatio: 0.95, wantMet: met(true),
		},
		{
			// The costs meet, but the maxima fell further below the bound
			// than the searches' noise: a loss the CPU does not show.
			name: "maxima below their noise", pairs: 1, withBest: 700, plainBest: 1000,
			with: []outcome{costed(1000, 0)}, without: []outcome{costed(1000, 0)},
			wantRate: 490, wantValue: capacity(1000), wantRatio: 1, wantMet: met(false),
			wantNote: "missed on the searches: their maxima's ratio (0.70) is more than their noise (0.20) below 0.95",
		},
		{
			// Pairs close together but on both sides of the bound: the
			// host drifted more than the cost sought, and the maxima judge.
			name: "pairs straddle the bound", pairs: 2, withBest: 900, plainBest: 1000,
			with: []outcome{costed(1000, 0)}, without: []outcome{costed(940, 0), costed(960, 0)},
			wantRate: 630, wantValue: 900, wantRatio: 0.9, wantMet: met(false),
			wantNote: "judged on the searches: the paired costs' pairs spread 0.940 to 0.960",
		},
		{
			// The maxima 0.80, within their noise of the bound: the
			// pairing, which meets it, decides.
			name: "maxima within their noise", pairs: 1, withBest: 800, plainBest: 1000,
			with: []outcome{costed(1000, 0)}, without: []outcome{costed(1000, 0)},
			wantRate: 560, wantValue: capacity(1000), wantRatio: 1, wantMet: met(true),
			wantNote: "the searches' maxima: with 800/s, without 1 000/s = 0.80",
		},
		{
			// Pairs that agree on the side of the bound but lie further
			// apart than the 0.05 the ratio must resolve: the maxima judge.
			name: "pairs too far apart", pairs: 2, withBest: 900, plainBest: 1000,
			with: []outcome{costed(1000, 0), costed(900, 0)}, without: []outcome{costed(960, 0), costed(960, 0)},
			wantRate: 630, wantValue: 900, wantRatio: 0.9, wantMet: met(false),
			wantNote: "judged on the searches: the paired costs' pairs spread 0.960 to 1.067, wider than the 0.05",
		},
		{
			// A paired trial not sustained: the row stays the maxima.
			name: "pairing fails", pairs: 2, withBest: 960, plainBest: 1000,
			with: []outcome{{Why: "2 dropped"}}, without: []outcome{costed(1000, 0)},
			wantRate: 672, wantValue: 960, wantRatio: 0.96, wantMet: met(true),
			wantNote: "none compared (with: not sustained at 672/s (2 dropped))",
		},
		{
			// -cost-pairs 0: the maxima alone, no trial run.
			name: "no pairs asked", pairs: 0, withBest: 900, plainBest: 1000,
			wantValue: 900, wantRatio: 0.9, wantMet: met(false),
		},
		{
			// The with side sustained nothing: missed, nothing paired.
			name: "with sustained nothing", pairs: 2, plainBest: 1000,
			wantMet: met(false), wantNote: "with: no rate sustained",
		},
		{
			// The side without sustained nothing: no comparison at all.
			name: "without sustained nothing", pairs: 2, withBest: 1000,
			wantValue: 1000, wantNote: "no comparison on this run",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &bench{cfg: config{CostPairs: c.pairs, LatenessTrials: 3}, log: io.Discard, rep: &Report{Details: map[string]any{}}}
			s := &sideTrials{with: c.with, without: c.without}
			with, without := s.funcs()
			// A paired pipeline trial is one flood: the trials see
			// -lateness-trials 1, and the searches' 3 again after.
			var floods []int
			seeing := func(trial func(context.Context, float64) outcome) func(context.Context, float64) outcome {
				return func(ctx context.Context, rate float64) outcome {
					floods = append(floods, b.cfg.LatenessTrials)
					return trial(ctx, rate)
				}
			}
			row := b.costRow(context.Background(), "k", "name", "≥ 0.95 × without", 0.95,
				searched("metrics", c.withBest), searched("plain", c.plainBest), seeing(with), seeing(without), "the rule")
			if slices.ContainsFunc(floods, func(n int) bool { return n != 1 }) || b.cfg.LatenessTrials != 3 {
				t.Errorf("paired trials saw -lateness-trials %v, and the bench has %d after; want 1 each, and 3", floods, b.cfg.LatenessTrials)
			}
			if c.wantRate == 0 && len(s.rates) > 0 {
				t.Errorf("%d paired trials ran, want none", len(s.rates))
			}
			for _, r := range s.rates {
				if math.Abs(r-c.wantRate) > 1e-9 {
					t.Errorf("a paired trial ran at %v/s, want %v", r, c.wantRate)
				}
			}
			if math.Abs(row.Value-c.wantValue) > 1e-6 || math.Abs(row.Ratio-c.wantRatio) > 1e-9 {
				t.Errorf("value %v ratio %v, want %v and %v", row.Value, row.Ratio, c.wantValue, c.wantRatio)
			}
			if row.Ceiling > 0 && math.Abs(row.Value/row.Ceiling-row.Ratio) > 1e-9 {
				t.Errorf("ratio %v is not value / ceiling = %v / %v", row.Ratio, row.Value, row.Ceiling)
			}
			switch {
			case (row.Met == nil) != (c.wantMet == nil):
				t.Errorf("met %v, want %v", row.Met, c.wantMet)
			case row.Met != nil && *row.Met != *c.wantMet:
				t.Errorf("met %v, want %v", *row.Met, *c.wantMet)
			}
			if !strings.Contains(row.Notes, c.wantNote) || !strings.Contains(row.Notes, "the rule") {
				t.Errorf("notes %q lack %q or the rule", row.Notes, c.wantNote)
			}
			details := b.rep.Details["k"].(map[string]any)
			if _, paired := details["paired"]; paired != (c.wantRate > 0) {
				t.Errorf("the details hold a pairing: %v, want %v", paired, c.wantRate > 0)
			}
			// The row is the pairing's exactly when its value is not the
			// with side's searched maximum.
			if paired := strings.Contains(row.CeilingName, "paired"); paired != (c.wantRate > 0 && c.wantValue != c.withBest) {
				t.Errorf("ceiling named %q", row.CeilingName)
			}
		})
	}
}

// TestMeanCosts: a pipeline trial's floods pooled give the mean of their
// per-send figures, the kernel's share weighted by each flood's CPU.
func TestMeanCosts(t *testing.T) {
	floods := []outcome{
		{CPUPerSend: 100, KernelShare: 0.5, SinkCPUPerSend: 40, IdlePerSend: 10, CoresPerSend: 200, FaultsPerSend: 1, SwitchesPerSend: 4, SinkFaultsPerSend: 0.2, SinkSwitchesPerSend: 3},
		{CPUPerSend: 300, KernelShare: 0.1, SinkCPUPerSend: 60, IdlePerSend: 30, CoresPerSend: 400, FaultsPerSend: 3, SwitchesPerSend: 6, SinkFaultsPerSend: 0.4, SinkSwitchesPerSend: 5},
	}
	o := outcome{Side: "plain", Rate: 1000, CPUPerSend: 999}
	o.meanCosts(floods)
	want := outcome{Side: "plain", Rate: 1000, CPUPerSend: 200, KernelShare: (50 + 30) / 400.0, SinkCPUPerSend: 50, IdlePerSend: 20,
		CoresPerSend: 300, FaultsPerSend: 2, SwitchesPerSend: 5, SinkFaultsPerSend: 0.3, SinkSwitchesPerSend: 4}
	if math.Abs(o.SinkFaultsPerSend-want.SinkFaultsPerSend) < 1e-12 {
		o.SinkFaultsPerSend = want.SinkFaultsPerSend // 0.6 / 2 in floating point
	}
	if o != want {
		t.Errorf("got %+v\nwant %+v", o, want)
	}
	// No floods: o is left as it was.
	o = outcome{CPUPerSend: 7}
	if o.meanCosts(nil); o.CPUPerSend != 7 {
		t.Errorf("no floods changed the CPU a send to %v", o.CPUPerSend)
	}
}
