package flood

import (
	"context"
	"math"
	"math/big"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// exactOffset is n/rate seconds in nanoseconds, rounded half up, computed
// with big rationals (independently of the pacer's integer arithmetic).
func exactOffset(n int64, num, den int64) time.Duration {
	r := big.NewRat(n, 1)
	r.Mul(r, big.NewRat(1e9*den, num))
	r.Add(r, big.NewRat(1, 2))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return maxOffset
	}
	return time.Duration(q.Int64())
}

func TestConstantPacerExact(t *testing.T) {
	for _, tc := range []struct{ num, den int64 }{
		{3, 1},     // period 333333333.33ns: a summed period drifts 33µs over 100k sends
		{300, 1},   // the README's rate
		{1000, 1},  // integral period
		{3333, 10}, // non-integral rate 333.3
		{1, 2},     // slower than one a second
		{20000, 1}, // near the engine's ceiling
	} {
		rate := float64(tc.num) / float64(tc.den)
		p := mustConstant(t, rate)
		period := time.Duration(1e9 / rate)
		var naive time.Duration
		for n := int64(0); n <= 100000; n++ {
			got := p.Offset(n)
			// Checked against big rationals for the first 2000 sends and
			// every 97th after (big.Rat is slow under -race).
			if n <= 2000 || n%97 == 0 || n == 100000 {
				if want := exactOffset(n, tc.num, tc.den); got != want {
					t.Fatalf("rate %g: Offset(%d) = %v, want %v", rate, n, got, want)
				}
			}
			if n > 0 && got < p.Offset(n-1) {
				t.Fatalf("rate %g: Offset(%d) went backwards", rate, n)
			}
			naive += period
		}
		t.Logf("rate %g: summing the period would be off by %v after 100000 sends", rate, (naive - p.Offset(100001)).Abs())
		// Far out, still exact to the nanosecond, and saturating past the
		// largest Duration.
		for _, n := range []int64{1e7, 1e9, 4e9, 1e12, math.MaxInt64} {
			if got, want := p.Offset(n), exactOffset(n, tc.num, tc.den); got != want {
				t.Errorf("rate %g: Offset(%d) = %v, want %v", rate, n, got, want)
			}
		}
	}
	// A rate that is no short decimal takes the float path: still within a
	// nanosecond over 100 000 sends.
	oneThird := &ConstantPacer{rate: 1.0 / 3}
	if got, want := oneThird.Offset(100000), 300000*time.Second; (got - want).Abs() > 1 {
		t.Errorf("rate 1/3: Offset(100000) = %v, want %v", got, want)
	}
	// The rate-3 case shows why offsets are computed from n: summing the
	// truncated period loses a third of a nanosecond each send.
	var naive time.Duration
	third := 1e9 / 3.0
	for range 100000 {
		naive += time.Duration(third)
	}
	if drift := exactOffset(100000, 3, 1) - naive; drift < 30*time.Microsecond {
		t.Fatalf("the naive sum drifted only %v: the test above would prove nothing", drift)
	}
}

func TestNewPacerRejects(t *testing.T) {
	for _, rate := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := NewConstantPacer(rate); err == nil {
			t.Errorf("NewConstantPacer(%v) accepted", rate)
		}
		if _, err := NewPoissonPacer(rate, 1); err == nil {
			t.Errorf("NewPoissonPacer(%v) accepted", rate)
		}
	}
	if _, err := NewPacer("uniform", 10, 1); err == nil {
		t.Error("NewPacer accepted an unknown arrivals name")
	}
}

func TestPoissonPacer(t *testing.T) {
	const rate, n = 1000.0, 100000
	p, err := NewPoissonPacer(rate, 42)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sumSq float64
	prev := time.Duration(0)
	offs := make([]time.Duration, n+1)
	for i := int64(1); i <= n; i++ {
		off := p.Offset(i)
		gap := (off - prev).Seconds()
		if gap < 0 {
			t.Fatalf("offset %d went backwards", i)
		}
		sum += gap
		sumSq += gap * gap
		prev = off
		offs[i] = off
	}
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	// Standard error of the mean is 1/rate/sqrt(n) = 0.3 %: 2 % is ~6 sigma.
	if want := 1 / rate; math.Abs(mean-want)/want > 0.02 {
		t.Errorf("mean gap %v, want %v ±2%%", mean, want)
	}
	// Exponential gaps: the standard deviation equals the mean.
	if cv := sd / mean; math.Abs(cv-1) > 0.05 {
		t.Errorf("coefficient of variation %.3f, want 1 ±0.05 (exponential gaps)", cv)
	}
	// Replaying from the seed gives the same schedule, also backwards.
	q, _ := NewPoissonPacer(rate, 42)
	for _, i := range []int64{n, 5, 99999, 1} {
		if got := q.Offset(i); got != offs[i] {
			t.Errorf("replayed Offset(%d) = %v, want %v", i, got, offs[i])
		}
	}
	other, _ := NewPoissonPacer(rate, 43)
	if other.Offset(100) == offs[100] {
		t.Error("another seed gave the same schedule")
	}
}

// TestEngineNoDrift runs 100 000 sends through the engine on synctest's fake
// clock: every send must start exactly at its intended time (zero lateness,
// zero latency from an instant transport), with the last one at 99.999 s.
func TestEngineNoDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100000
		var (
			mu    sync.Mutex
			times []time.Duration
		)
		start := time.Now()
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			times = append(times, time.Since(start))
			mu.Unlock()
			return answer(req, 202, nil), nil
		})
		pacer := mustConstant(t, 1000)
		res := mustRun(t, context.Background(), Plan{Limits: Limits{MaxSends: n, MaxInflight: 8},
			Sleep:  time.Sleep, // synctest: fake clock
			Pacer:  pacer,
			Source: newCycleSource(t, "http://sut.test/inbox"), Transport: rt,
		})
		if !res.Start.Equal(start) {
			t.Fatalf("run started at %v, want %v", res.Start, start)
		}
		c := res.Overall.Counts
		if c.Offered != n || c.Sent != n || c.Completed != n || c.Dropped != 0 {
			t.Fatalf("counts %+v, want %d offered, sent and completed", c, n)
		}
		if m := res.Overall.Lateness.Max(); m != 0 {
			t.Errorf("lateness max %dµs, want 0", m)
		}
		if m := res.Overall.Latency.Max(); m != 0 {
			t.Errorf("latency max %dµs, want 0", m)
		}
		slices.Sort(times)
		for i, got := range times {
			if want := pacer.Offset(int64(i)); got != want {
				t.Fatalf("send %d at %v, want %v", i, got, want)
			}
		}
		if last := times[n-1]; last != 99999*time.Millisecond {
			t.Errorf("last send at %v, want 99.999s", last)
		}
		if res.Measured != 100*time.Second {
			t.Errorf("measured window %v, want 100s", res.Measured)
		}
	})
}

// TestEnginePoissonOnSchedule: a Poisson schedule is kept exactly too, and
// the achieved mean rate is the pacer's.
func TestEnginePoissonOnSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := NewPoissonPacer(500, 7)
		res := mustRun(t, context.Background(), Plan{Limits: Limits{Duration: 20 * time.Second, MaxInflight: 16},
			Sleep:  time.Sleep, // synctest: fake clock
			Pacer:  p,
			Source: newCycleSource(t, "http://sut.test/inbox"),
			Transport: rtFunc(func(req *http.Request) (*http.Response, error) {
				return answer(req, 202, nil), nil
			}),
		})
		if m := res.Overall.Lateness.Max(); m != 0 {
			t.Errorf("lateness max %dµs, want 0", m)
		}
		// 10 000 expected; the count is Poisson (sd 100): ±5 %.
		if got := float64(res.Overall.Counts.Sent) / 20; math.Abs(got-500) > 25 {
			t.Errorf("achieved %.1f/s, want 500 ±25", got)
		}
	})
}
