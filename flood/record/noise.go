package record

import "math"

// answeredShare is the share of type typ's ("" = all) completed sends that
// got an HTTP answer (1 when none completed).
func answeredShare(r *Record, typ string) float64 {
	t, ok := r.Type(typ)
	if !ok || t.Counts.Completed == 0 {
		return 1
	}
	return float64(t.Latency.Count) / float64(t.Counts.Completed)
}

// fewSends reports whether duration metric g of type typ in r rests on too
// few sends to judge: fewer than fewBeyond beyond its quantile, or a max.
func fewSends(r *Record, typ string, g Gate) bool {
	switch g.Metric {
	case "max", "p100":
		return true
	case "min", "mean":
		return histCount(r, typ, g) < fewBeyond
	}
	return float64(histCount(r, typ, g))*(1-g.quantile/100) < fewBeyond
}

// withinNoise reports whether base's and head's values of m (type typ)
// differ by no more than sampling noise (see noiseZ). A figure whose noise
// cannot be bounded (a histogram that does not decode) is not noise.
func withinNoise(base, head *Record, typ string, m CompareMetric) bool {
	switch m.g.kind {
	case kindDuration:
		bl, bh, ok1 := quantileBounds(base, typ, m.g)
		hl, hh, ok2 := quantileBounds(head, typ, m.g)
		return ok1 && ok2 && hl <= bh && bl <= hh // the intervals overlap
	case kindCount:
		g := m.g
		g.Type = typ
		nb, ofb, ok1 := g.counter(base)
		nh, ofh, ok2 := g.counter(head)
		return ok1 && ok2 && twoProportionsAlike(nb, ofb, 0, nh, ofh, 0)
	case kindRate:
		b, okB := metricValue(base, typ, m)
		h, okH := metricValue(head, typ, m)
		if !okB || !okH || base.Measured <= 0 || head.Measured <= 0 {
			return false
		}
		// A rate is a count over the window: Poisson, variance = count.
		sd := math.Sqrt(b/base.Measured + h/head.Measured)
		return math.Abs(b-h) <= noiseZ*sd
	}
	return false
}

// withinBatchNoise reports whether b and h, the values of m in base and
// head, differ by no more than the runs' second-to-second spread allows:
// each run's standard error is its per-second series' (see batchSeries)
// standard deviation over √seconds, relative to the series' mean for a
// duration or a rate (and so scaled to each type's value), absolute for a
// share. Runs of fewer than minBatchSeconds whole measured seconds, or a
// metric without a per-second series, have no batch bound.
func withinBatchNoise(base, head *Record, m CompareMetric, b, h float64) bool {
	series := batchSeries(m)
	if series == nil {
		return false
	}
	seB, kB := batchSE(base, series, m.isShare())
	seH, kH := batchSE(head, series, m.isShare())
	if kB < minBatchSeconds || kH < minBatchSeconds {
		return false
	}
	if !m.isShare() {
		seB, seH = seB*b, seH*h
	}
	return math.Abs(h-b) <= studentT99(min(kB, kH)-1)*math.Hypot(seB, seH)
}

// batchSeries is the timeline's per-second value that tracks metric m, nil
// when the timeline has none: latency p99 for a latency quantile from p90
// up (and max), p50 below; lateness p99; the send and 2xx rates; the error,
// drop and 429 shares. A tick without the series' denominator is skipped.
func batchSeries(m CompareMetric) func(Tick) (float64, bool) {
	g := m.g
	share := func(n func(Tick) int64, of func(Tick) int64) func(Tick) (float64, bool) {
		return func(t Tick) (float64, bool) {
			if of(t) == 0 {
				return 0, false
			}
			return float64(n(t)) / float64(of(t)), true
		}
	}
	completed := func(t Tick) int64 { return t.Completed }
	switch g.kind {
	case kindDuration:
		switch {
		case g.Family == "lateness":
			return func(t Tick) (float64, bool) { return float64(t.LatenessP99), t.Completed > 0 }
		case g.Family != "latency":
			return nil
		case g.quantile >= 90 || g.Metric == "max":
			return func(t Tick) (float64, bool) { return float64(t.LatencyP99), t.Completed > 0 }
		}
		return func(t Tick) (float64, bool) { return float64(t.LatencyP50), t.Completed > 0 }
	case kindRate:
		if g.Metric == "throughput" {
			return func(t Tick) (float64, bool) { return float64(t.OK) / t.Span, t.Span > 0 }
		}
		return func(t Tick) (float64, bool) { return float64(t.Sent) / t.Span, t.Span > 0 }
	case kindCount:
		switch g.Metric {
		case "errors":
			return share(func(t Tick) int64 { return t.Errors }, completed)
		case "dropped":
			return share(func(t Tick) int64 { return t.Dropped }, func(t Tick) int64 { return t.Offered })
		case "status429":
			return share(func(t Tick) int64 { return t.Status429 }, completed)
		case "ok":
			return share(func(t Tick) int64 { return t.OK }, completed)
		}
	}
	return nil
}

// batchSE is the standard error of r's figure by batch means over the
// whole seconds of its measured window (warm-up and a last partial second
// left out): the standard deviation of the per-second series over √k,
// relative to the series' mean unless absolute; k is the number of seconds.
func batchSE(r *Record, series func(Tick) (float64, bool), absolute bool) (se float64, k int) {
	var vals []float64
	for _, t := range r.Timeline {
		if t.Warmup || t.Span < 1 {
			continue
		}
		if v, ok := series(t); ok {
			vals = append(vals, v)
		}
	}
	if len(vals) < 2 {
		return 0, len(vals)
	}
	var sum, sq float64
	for _, v := range vals {
		sum += v
	}
	mean := sum / float64(len(vals))
	for _, v := range vals {
		sq += (v - mean) * (v - mean)
	}
	se = math.Sqrt(sq/float64(len(vals)-1)) / math.Sqrt(float64(len(vals)))
	if !absolute {
		if mean <= 0 {
			return 0, 0
		}
		se /= mean
	}
	return se, len(vals)
}

// minBatchSeconds is the fewest whole measured seconds a run needs for its
// second-to-second spread to bound noise. With two, Student's t is 63.7 and
// the bound calls a halved send rate noise; with five it is 4.6.
const minBatchSeconds = 5

// studentT99 is Student's t for a two-sided 99 % interval with dof degrees
// of freedom (a table; noiseZ beyond 30).
func studentT99(dof int) float64 {
	table := [...]float64{0, 63.66, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169,
		3.106, 3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845,
		2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750}
	if dof < 1 {
		return math.Inf(1)
	}
	if dof < len(table) {
		return table[dof]
	}
	return noiseZ
}

// quantileBounds is the distribution-free confidence interval (noiseZ) of
// quantile metric g of type typ in r: the values at the ranks n·q ± z·√(n·q·(1−q)),
// read from its histogram.
func quantileBounds(r *Record, typ string, g Gate) (lo, hi float64, ok bool) {
	hr, ok := histOf(r, typ, g)
	if !ok {
		return 0, 0, false
	}
	q := g.quantile / 100
	if g.Metric == "mean" || g.Metric == "min" {
		q = 0.5 // their noise is no larger than the median's; a bound is all the rule needs
		if g.Metric == "min" {
			q = 0
		}
	}
	return histBounds(hr, q, 0)
}

// histBounds is the distribution-free confidence interval (noiseZ) of
// quantile q (0-1) of hr: the values at the ranks n·q ± z·√(n·q·(1−q)),
// n the values it holds, or units when fewer (0: every value its own):
// values that came in groups (a note read by several personas) vary less
// independently than their count says. False for a histogram that holds
// nothing or does not decode.
func histBounds(hr HistRecord, q float64, units int64) (lo, hi float64, ok bool) {
	hist, err := hr.Decode()
	if err != nil {
		return 0, 0, false
	}
	n := float64(effectiveN(hist.TotalCount(), units))
	if n == 0 {
		return 0, 0, false
	}
	d := noiseZ * math.Sqrt(q*(1-q)/n)
	return float64(hist.ValueAtQuantile(100 * max(0, q-d))), float64(hist.ValueAtQuantile(100 * min(1, q+d))), true
}

// twoProportionsAlike reports whether nb of ofb and nh of ofh differ by no
// more than sampling noise (a two-proportion test at noiseZ), each side's
// sample taken as its units when fewer (0: every one its own; see
// histBounds).
func twoProportionsAlike(nb, ofb, unitsB, nh, ofh, unitsH int64) bool {
	if ofb == 0 || ofh == 0 {
		return false
	}
	p := float64(nb+nh) / float64(ofb+ofh)
	sd := math.Sqrt(p * (1 - p) * (1/float64(effectiveN(ofb, unitsB)) + 1/float64(effectiveN(ofh, unitsH))))
	return math.Abs(float64(nb)/float64(ofb)-float64(nh)/float64(ofh)) <= noiseZ*sd
}

// effectiveN is n, or units when fewer and not 0.
func effectiveN(n, units int64) int64 {
	if units > 0 {
		return min(n, units)
	}
	return n
}

// histOf is the histogram of duration metric g for type typ ("" = all).
func histOf(r *Record, typ string, g Gate) (HistRecord, bool) {
	if g.Family == "dispatch" {
		return r.Dispatch, true
	}
	t, ok := r.Type(typ)
	if !ok {
		return HistRecord{}, false
	}
	switch g.Family {
	case "service":
		return t.Service, true
	case "lateness":
		return t.Lateness, true
	}
	return t.Latency, true
}

// histCount is how many values the histogram of duration metric g holds
// for type typ ("" = all).
func histCount(r *Record, typ string, g Gate) int64 {
	h, _ := histOf(r, typ, g)
	return h.Count
}
