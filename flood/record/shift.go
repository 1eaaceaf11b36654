package record

import "strconv"

// Shift is how a figure measured beside the flood's types (crowd run's
// run section: the personas' homes, the deliveries to the crowd) moved
// between two runs, judged by Compare's rule (see noiseZ): its verdict is
// VerdictSame unless it moved beyond the threshold, the floor and the
// sampling noise.
type Shift struct {
	// Change is (head − base) / base; +Inf when base is 0 and head is not.
	Change float64
	// Verdict is VerdictRegressed or VerdictBetter for a move beyond the
	// rule, else VerdictSame (Few, Unkept and Noise say why not judged).
	Verdict Verdict
	// Few marks a quantile that fewer than 10 units lie beyond on a side:
	// shown, never judged.
	Few bool
	// Unkept marks a quantile whose histogram a side did not keep (a
	// record made before run sections kept them): shown, never judged.
	Unkept bool
	// Noise marks a figure that moved beyond the threshold but not beyond
	// the floor or the two runs' sampling noise: not judged either.
	Noise bool
}

// LatencySample is a latency histogram and the independent units its
// values came in: a note owed to several personas is one arrival at the
// SUT, seen by each; a post's deliveries to its followers are one queue's
// work. Units 0 (or more than the values) takes every value as its own.
type LatencySample struct {
	Hist  HistRecord
	Units int64
}

// ShareSample is N of Of (notes never seen of those accepted, deliveries
// that never arrived of those owed), in Units independent units as a
// LatencySample's.
type ShareSample struct {
	N, Of, Units int64
}

// judged is the Shift of a figure that moved worse or better, unless
// noisy says the move is within noise.
func judged(change float64, worse, better, noisy bool) Shift {
	s := Shift{Change: change}
	switch {
	case (worse || better) && noisy:
		s.Noise = true
	case worse:
		s.Verdict = VerdictRegressed
	case better:
		s.Verdict = VerdictBetter
	}
	return s
}

// JudgeQuantileShift judges quantile q (0-100, e.g. 95) of two latencies
// as Compare judges a duration row, over their units: moved beyond
// o.MaxRegression, by floor µs or more (at least o.LatencyFloor: a
// measurement late by up to a probe period gives its period), with the
// two histograms' order-statistic intervals apart. A quantile fewer than
// 10 units lie beyond is Few; one a side kept no histogram of, Unkept.
// ok is false when a side holds no value.
func JudgeQuantileShift(base, head LatencySample, q, floor float64, o CompareOptions) (s Shift, ok bool) {
	bv, okB := base.Hist.valueAt(q)
	hv, okH := head.Hist.valueAt(q)
	if !okB || !okH {
		return Shift{}, false
	}
	change, worse, better := movement(bv, hv, false, false, o)
	s = Shift{Change: change}
	few := func(l LatencySample) bool { return float64(effectiveN(l.Hist.Count, l.Units))*(1-q/100) < fewBeyond }
	switch {
	case base.Hist.HDR == "" || head.Hist.HDR == "":
		s.Unkept = true
		return s, true
	case few(base) || few(head):
		s.Few = true
		return s, true
	case hv-bv < max(floor, o.LatencyFloor) && bv-hv < max(floor, o.LatencyFloor):
		s.Noise = worse || better
		return s, true
	}
	bl, bh, _ := histBounds(base.Hist, q/100, base.Units)
	hl, hh, _ := histBounds(head.Hist, q/100, head.Units)
	return judged(change, worse, better, hl <= bh && bl <= hh), true
}

// valueAt is quantile q (0-100) of h in µs: from its summary when it
// keeps q (p50, p90, p95, p99, p99.9), else from its histogram; ok false
// when h holds nothing, or neither has q.
func (h HistRecord) valueAt(q float64) (float64, bool) {
	if h.Count == 0 {
		return 0, false
	}
	if v, ok := quantileOf(h.Quantiles, "p"+strconv.FormatFloat(q, 'f', -1, 64)); ok {
		return v, true
	}
	d, err := h.Decode()
	if err != nil || h.HDR == "" {
		return 0, false
	}
	return float64(d.ValueAtQuantile(q)), true
}

// JudgeShareShift judges a share where up is worse (notes never seen,
// deliveries that never arrived) as Compare judges an error share: moved
// beyond o.MaxRegression and by o.ShareFloor or more, and beyond a
// two-proportion test over the units. ok is false when a side has no
// denominator.
func JudgeShareShift(base, head ShareSample, o CompareOptions) (s Shift, ok bool) {
	if base.Of == 0 || head.Of == 0 {
		return Shift{}, false
	}
	change, worse, better := movement(float64(base.N)/float64(base.Of), float64(head.N)/float64(head.Of), false, true, o)
	return judged(change, worse, better, twoProportionsAlike(base.N, base.Of, base.Units, head.N, head.Of, head.Units)), true
}
