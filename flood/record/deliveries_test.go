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
	for _, tc := range []struct {
		name         string
		n            int
		base, under  time.Duration
		want         string
		wantRatioMin float64
	}{
		// 0.4 s to 38 s: blocked.
		{"95 times slower", 10, 400 * time.Millisecond, 38 * time.Second, VerdictBlocking, 90},
		// Three times slower but by milliseconds: jitter, not blocking.
		{"slower by milliseconds", 10, 5 * time.Millisecond, 20 * time.Millisecond, VerdictIsolated, 3.5},
		// A second more but not three times: isolated.
		{"a second more of many", 10, 2 * time.Second, 3 * time.Second, VerdictIsolated, 1.4},
		// The same latency under the weather.
		{"unchanged", 10, 300 * time.Millisecond, 300 * time.Millisecond, VerdictIsolated, 0.99},
		// Four deliveries a phase are too few to judge.
		{"too few", 4, 400 * time.Millisecond, 38 * time.Second, VerdictUnknown, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iso := Isolate(healthyOf(t, tc.n, tc.base, tc.under))
			if iso.Verdict != tc.want || iso.Ratio < tc.wantRatioMin || !strings.Contains(iso.Rule, "head-of-line") {
				t.Errorf("Isolate = %+v: want %q, ratio >= %g, the rule printed", iso, tc.want, tc.wantRatioMin)
			}
		})
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
