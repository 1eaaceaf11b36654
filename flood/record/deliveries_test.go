package record

import (
	"strings"
	"testing"
	"time"
)

// healthyOf is healthy deliveries with n of each phase's latencies at
// base and under.
func healthyOf(t *testing.T, n int, base, under time.Duration) HealthyDeliveries {
	t.Helper()
	b, w := NewHist(), NewHist()
	for range n {
		RecordDuration(b, base)
		RecordDuration(w, under)
	}
	var h HealthyDeliveries
	var err error
	if h.Baseline, err = EncodeHist(b); err != nil {
		t.Fatal(err)
	}
	if h.Weather, err = EncodeHist(w); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestIsolate judges healthy deliveries by the isolation rule.
func TestIsolate(t *testing.T) {
	// answers is the SUT's answers: 10 ms in the clear phase, slower under
	// the weather, over seconds each phase.
	answers := func(slower float64, seconds int) *SUTAnswers {
		return &SUTAnswers{BaselineP50US: 10_000, WeatherP50US: int64(10_000 * slower), BaselineSeconds: seconds, WeatherSeconds: seconds}
	}
	for _, tc := range []struct {
		name         string
		n            int
		base, under  time.Duration
		answers      *SUTAnswers
		want         string
		wantRatioMin float64
	}{
		// 0.4 s to 38 s: blocked.
		{"95 times slower", 10, 400 * time.Millisecond, 38 * time.Second, nil, VerdictBlocking, 90},
		// Three times slower but by milliseconds: jitter, not blocking.
		{"slower by milliseconds", 10, 5 * time.Millisecond, 20 * time.Millisecond, nil, VerdictIsolated, 3.5},
		// A second more but not three times: isolated.
		{"a second more of many", 10, 2 * time.Second, 3 * time.Second, nil, VerdictIsolated, 1.4},
		// The same latency under the weather.
		{"unchanged", 10, 300 * time.Millisecond, 300 * time.Millisecond, nil, VerdictIsolated, 0.99},
		// Four deliveries a phase are too few to judge.
		{"too few", 4, 400 * time.Millisecond, 38 * time.Second, nil, VerdictUnknown, 0},
		// The SUT's answers twice as slow: said beside the verdict, which
		// they do not change (a SUT the weather slowed as a whole is not
		// isolated either).
		{"blocked, the SUT's answers slower", 10, 500 * time.Millisecond, 2 * time.Second, answers(2, 10), VerdictBlocking, 3.9},
		{"isolated, the SUT's answers slower", 10, 300 * time.Millisecond, 300 * time.Millisecond, answers(5, 10), VerdictIsolated, 0.99},
		// Answers in too few seconds of a phase are not compared.
		{"too few seconds of answers", 10, 500 * time.Millisecond, 2 * time.Second, answers(2, 2), VerdictBlocking, 3.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := healthyOf(t, tc.n, tc.base, tc.under)
			h.Answers = tc.answers
			iso := Isolate(h)
			if iso.Verdict != tc.want || iso.Ratio < tc.wantRatioMin || !strings.Contains(iso.Rule, "head-of-line") {
				t.Errorf("Isolate = %+v: want %q, ratio >= %g, the rule printed", iso, tc.want, tc.wantRatioMin)
			}
			if want, _ := tc.answers.Slowdown(); iso.SUTSlowdown != want {
				t.Errorf("SUTSlowdown %g, want %g", iso.SUTSlowdown, want)
			}
		})
	}
}

// TestSummarySaysTheSUTsSlowdown: the summary says how much the SUT's
// own answers slowed beside the deliveries' ratio, when it is known.
func TestSummarySaysTheSUTsSlowdown(t *testing.T) {
	for _, tc := range []struct {
		name     string
		slowdown float64
		want     string
	}{
		// Known: said inside the ratio's parentheses.
		{"known", 2.04, "(95.0×; the SUT's answers 2.0×): head-of-line blocking"},
		// Not known (0): the ratio alone.
		{"not known", 0, "(95.0×): head-of-line blocking"},
	} {
		d := &Deliveries{Isolation: Isolation{Verdict: VerdictBlocking, BaselineP95US: 400_000, WeatherP95US: 38_000_000, Ratio: 95, SUTSlowdown: tc.slowdown}}
		if got := d.Summary(); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q lacks %q", tc.name, got, tc.want)
		}
	}
}

// TestAnswersOf reads the SUT's answers in each phase from a timeline:
// the median of the seconds' medians, warm-up and seconds without
// answers left out, and seconds in neither phase too.
func TestAnswersOf(t *testing.T) {
	timeline := []Tick{
		{T: 1, Span: 1, Warmup: true, LatencyP50: 900_000}, // warm-up: left out
		{T: 2, Span: 1, LatencyP50: 10_000},
		{T: 3, Span: 1, LatencyP50: 12_000},
		{T: 4, Span: 1, LatencyP50: 0}, // no answer that second
		{T: 5, Span: 1, LatencyP50: 11_000},
		{T: 6, Span: 1, LatencyP50: 50_000}, // in neither phase
		{T: 7, Span: 1, LatencyP50: 40_000},
		{T: 8, Span: 1, LatencyP50: 20_000},
		{T: 9, Span: 0.5, LatencyP50: 30_000},
	}
	// Clear until +5 s, a second in between, weather from +6 s.
	phase := func(from, to time.Duration) (bool, bool) {
		switch {
		case to <= 5*time.Second:
			return false, true
		case from >= 6*time.Second:
			return true, true
		}
		return false, false
	}
	got := AnswersOf(timeline, phase)
	want := SUTAnswers{BaselineP50US: 11_000, WeatherP50US: 30_000, BaselineSeconds: 3, WeatherSeconds: 3}
	if *got != want {
		t.Errorf("AnswersOf = %+v, want %+v", *got, want)
	}
	if s, ok := got.Slowdown(); !ok || s < 2.7 || s > 2.8 {
		t.Errorf("Slowdown = %g, %v; want 30/11", s, ok)
	}
	// A timeline with no answer in either phase: none to say.
	if got := AnswersOf(timeline[:1], phase); got != nil {
		t.Errorf("AnswersOf(warm-up alone) = %+v, want nil", got)
	}
}

// TestMergeDeliveries joins two shards' deliveries: their origins, their
// healthy histograms and attempt ticks, and judges the whole again.
func TestMergeDeliveries(t *testing.T) {
	a := &Record{Deliveries: &Deliveries{Origins: []OriginDeliveries{{Host: "flood9.test", Attempts: 3}},
		Healthy:  healthyOf(t, 3, 100*time.Millisecond, 30*time.Second),
		Attempts: []AttemptTick{{T: 1, ByClass: map[string]int{"down": 2}}}}}
	b := &Record{Deliveries: &Deliveries{Origins: []OriginDeliveries{{Host: "flood2.test", Attempts: 4}},
		Healthy:  healthyOf(t, 3, 100*time.Millisecond, 30*time.Second),
		Attempts: []AttemptTick{{T: 1, ByClass: map[string]int{"down": 1, "clear": 5}}, {T: 2, ByClass: map[string]int{"clear": 1}}}}}
	out := &Record{}
	if err := mergeDeliveries(out, []*Record{a, b, {}}); err != nil {
		t.Fatal(err)
	}
	d := out.Deliveries
	if len(d.Origins) != 2 || d.Origins[0].Host != "flood2.test" || d.Origins[1].Host != "flood9.test" {
		t.Errorf("origins %+v: want both shards', by host", d.Origins)
	}
	// Three a shard are too few alone; six together are judged.
	if d.Healthy.Baseline.Count != 6 || d.Isolation.Verdict != VerdictBlocking {
		t.Errorf("healthy %+v, isolation %+v: want 6 deliveries a phase, judged blocking", d.Healthy.Baseline.Quantiles, d.Isolation)
	}
	if len(d.Attempts) != 2 || d.Attempts[0].ByClass["down"] != 3 || d.Attempts[0].ByClass["clear"] != 5 {
		t.Errorf("attempt ticks %+v: want second 1 summed", d.Attempts)
	}
	if l := d.Lines(); len(l) != 4 || !strings.Contains(l[0], "head-of-line blocking") {
		t.Errorf("lines %q: want the summary, a line per origin, the rule", l)
	}
}
