package flood

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"
)

// Pacer is the absolute schedule of a run. Offset(n) is the intended send time
// of send n (0-based) measured from the start of the run; it never depends on
// when earlier sends actually went out, so a slow SUT or a busy generator
// cannot slow the schedule down (the open loop). Offsets are non-decreasing in
// n and Offset(0) is 0. A Pacer is used from one goroutine (the dispatcher);
// implementations need not be goroutine-safe.
type Pacer interface {
	// Offset returns the intended time of send n from the start.
	Offset(n int64) time.Duration
	// Rate returns the mean offered rate in sends per second.
	Rate() float64
}

// maxOffset is returned for an offset that does not fit in a time.Duration.
const maxOffset = time.Duration(math.MaxInt64)

// ConstantPacer schedules send n at exactly n/rate seconds. Each offset is
// computed directly from n, never by adding periods, so nothing accumulates.
// A rate with at most six decimals (every rate a flag gives) is held as a
// fraction num/den and the offset n*1e9*den/num is computed in 128-bit
// integers and rounded to the nearest nanosecond: exact for any n. Other
// rates use one float64 multiplication and division (relative error 2e-16:
// under a nanosecond for a run of a month).
type ConstantPacer struct {
	rate     float64
	num, den uint64 // rate = num/den exactly, when den > 0
}

// NewConstantPacer returns a pacer at rate sends per second (> 0, finite).
func NewConstantPacer(rate float64) (*ConstantPacer, error) {
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	p := &ConstantPacer{rate: rate}
	for den := uint64(1); den <= 1e6; den *= 10 {
		if v := rate * float64(den); v >= 1 && v < 1<<53 && v == math.Trunc(v) {
			p.num, p.den = uint64(v), den
			break
		}
	}
	return p, nil
}

// Offset returns n/rate, rounded to the nanosecond (saturating at the
// largest Duration).
func (p *ConstantPacer) Offset(n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	if p.den == 0 {
		return nsOffset(float64(n) * 1e9 / p.rate)
	}
	hi, lo := bits.Mul64(uint64(n), 1e9*p.den)
	if hi >= p.num { // the quotient would not fit in 64 bits
		return maxOffset
	}
	q, r := bits.Div64(hi, lo, p.num)
	if 2*r >= p.num {
		q++
	}
	if q > math.MaxInt64 {
		return maxOffset
	}
	return time.Duration(q)
}

// Rate returns the pacer's rate in sends per second.
func (p *ConstantPacer) Rate() float64 { return p.rate }

// PoissonPacer schedules sends as a Poisson process: gaps are independent
// exponential variables with mean 1/rate, drawn from a PCG generator seeded
// with seed, so a schedule is reproducible. Offsets are the running sum of the
// gaps, kept in float64 nanoseconds (relative rounding error 1e-16 per step,
// far below a nanosecond over any realistic run). Offset is fastest for
// increasing n; asking for an earlier n replays the sequence from the seed.
// Not goroutine-safe.
type PoissonPacer struct {
	rate float64
	seed uint64
	rng  *rand.Rand
	n    int64   // index of the last computed offset
	at   float64 // offset of send n, in nanoseconds
}

// NewPoissonPacer returns a Poisson pacer at a mean of rate sends per second.
func NewPoissonPacer(rate float64, seed uint64) (*PoissonPacer, error) {
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	p := &PoissonPacer{rate: rate, seed: seed}
	p.reset()
	return p, nil
}

func (p *PoissonPacer) reset() {
	// The second PCG word is a fixed odd constant so that seed alone selects
	// the stream.
	p.rng = rand.New(rand.NewPCG(p.seed, 0x9e3779b97f4a7c15))
	p.n, p.at = 0, 0
}

// Offset returns the arrival time of send n; send 0 is due at the start.
func (p *PoissonPacer) Offset(n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	if n < p.n {
		p.reset()
	}
	scale := 1e9 / p.rate
	for p.n < n {
		p.at += p.rng.ExpFloat64() * scale
		p.n++
	}
	return nsOffset(p.at)
}

// Rate returns the mean rate in sends per second.
func (p *PoissonPacer) Rate() float64 { return p.rate }

// NewPacer builds the pacer of arrivals (ParseArrivals): constant (also
// the zero value) or poisson (seeded with seed).
func NewPacer(arrivals Arrivals, rate float64, seed uint64) (Pacer, error) {
	switch arrivals {
	case "", ArrivalsConstant:
		return NewConstantPacer(rate)
	case ArrivalsPoisson:
		return NewPoissonPacer(rate, seed)
	}
	return nil, fmt.Errorf("%w: arrivals %q: want constant or poisson", ErrInvalidPlan, arrivals)
}

func checkRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("%w: rate %v: want a finite rate > 0", ErrInvalidPlan, rate)
	}
	return nil
}

// nsOffset rounds a non-negative nanosecond count to a Duration, saturating.
func nsOffset(ns float64) time.Duration {
	if ns >= float64(math.MaxInt64) {
		return maxOffset
	}
	return time.Duration(math.Round(ns))
}
