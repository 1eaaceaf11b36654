package record

import "testing"

// TestBatchNoiseNeedsSeconds: the runs' second-to-second spread bounds
// noise only over enough whole seconds. Over two, Student's t (63.7) made
// a halved send rate "within noise"; the same halving over five seconds
// is past the spread, and a run that only wobbles is within it.
func TestBatchNoiseNeedsSeconds(t *testing.T) {
	ms, err := ParseCompareMetrics("rate")
	if err != nil {
		t.Fatal(err)
	}
	rate := ms[0]
	// run is a record whose whole seconds sent these counts, then a last
	// part-second (left out of the spread).
	run := func(sent ...int64) *Record {
		r := &Record{}
		for i, n := range sent {
			r.Timeline = append(r.Timeline, Tick{T: i + 1, Span: 1, Sent: n})
		}
		r.Timeline = append(r.Timeline, Tick{T: len(sent) + 1, Span: 0.5, Sent: 1})
		return r
	}
	for _, tc := range []struct {
		name       string
		base, head *Record
		b, h       float64 // the runs' rates
		noise      bool
	}{
		// Halved over two seconds: too few to bound anything.
		{"halved, two seconds", run(41, 40), run(21, 20), 40.5, 20.5, false},
		// Halved over five seconds: past the spread.
		{"halved, five seconds", run(41, 40, 41, 40, 41), run(21, 20, 21, 20, 21), 40.6, 20.6, false},
		// A wobble of a send a second over five seconds: within it.
		{"a wobble, five seconds", run(41, 40, 41, 40, 41), run(40, 41, 40, 41, 40), 40.6, 40.4, true},
	} {
		if got := withinBatchNoise(tc.base, tc.head, rate, tc.b, tc.h); got != tc.noise {
			t.Errorf("%s: within the batch noise %v, want %v", tc.name, got, tc.noise)
		}
	}
}
