package record

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// gateKind is what a metric measures, which decides what it compares with.
type gateKind uint8

const (
	kindDuration gateKind = iota + 1 // a latency-like quantile: compared with a duration
	kindCount                        // a counter: compared with a count or a share ("1%")
	kindRate                         // per second: compared with a number or k*another rate
)

// Gate is one parsed expression of the gate language used by --expect and
// --stop-when:
//
//	expr     = metric op value
//	op       = "<" | "<=" | ">" | ">=" | "==" | "!=" | "=" (the same as "==")
//	metric   = [Type "."] [family "."] quantile      (a duration)
//	         | [Type "."] counter                     (a count or share)
//	         | rate                                   (per second)
//	family   = "latency" (default, from the intended send time) | "service" |
//	           "lateness" | "dispatch" (the generator's own delay; overall only)
//	quantile = "p" NUMBER (0-100, e.g. p95, p99.9) | "min" | "mean" | "max"
//	counter  = "sent" | "dropped" | "starved" | "completed" | "aborted" |
//	           "errors" (not 2xx) | "ok" (2xx) | "timeout" | "connerr" |
//	           "retry_after" | "other" | "status" CODE |
//	           "forged_accepted" | "forged_effective" | "forged_sent" (forged
//	           requests, by tamper kind instead of Type: 'date.forged_accepted',
//	           digest_unsigned for digest-unsigned; see security.go)
//	           (CODE: 202 401 403 404 410 429 503 or 2xx 4xx 5xx, a whole range)
//	           "never_seen" | "unreached" (crowd run's: visibility.never_seen,
//	           a share of the accepted notes; delivery.unreached, of the
//	           deliveries expected; see RunSectionPart) |
//	           "ambient_weather" (the origins that met weather the run did
//	           not set, a count over the whole crowd: Record.AmbientOrigins)
//	rate     = "rate" (sent/s) | "offered" (offered/s) | "throughput" (2xx/s)
//	value    = a Go duration (100ms, 2s) for a duration metric;
//	           a count or a percentage for a counter (a share of the offered
//	           sends for sent/dropped/starved, of the sent ones for
//	           completed/aborted, of the completed ones for the rest);
//	           NUMBER, NUMBER "*" rate or rate for a rate metric.
//
// Type is an activity type ("Create"), matched ignoring case; without it
// the metric is over all types. Examples: 'p95<100ms', 'p99<=2s',
// 'errors<1%', 'rate>=0.95*offered', 'dropped==0', 'status429<5%',
// 'Create.service.p99<500ms', 'lateness.p99<1ms'.
type Gate struct {
	Expr    string        // the expression as given
	Type    string        // activity type; "" = all
	Family  string        // duration metrics: latency, service, lateness or dispatch
	Metric  string        // canonical metric name: p95, p99.9, max, errors, status429, rate ...
	Op      string        // comparison operator
	Dur     time.Duration // threshold of a duration metric
	Num     float64       // threshold of a counter (percent when Percent) or rate (coefficient of Ref when set)
	Percent bool          // Num is a percentage of the counter's denominator
	Ref     string        // rate metric that Num multiplies ("offered" in rate>=0.95*offered)

	kind     gateKind
	quantile float64 // 0-100 for pNN
}

// ParseGates parses every expression; the first bad one is returned as a
// *UsageError.
func ParseGates(exprs []string) ([]Gate, error) {
	gates := make([]Gate, 0, len(exprs))
	for _, e := range exprs {
		g, err := ParseGate(e)
		if err != nil {
			return nil, err
		}
		gates = append(gates, g)
	}
	return gates, nil
}

// ParseGate parses one expression; errors are *UsageError.
func ParseGate(expr string) (Gate, error) {
	g := Gate{Expr: expr}
	s := strings.TrimSpace(expr)
	i := strings.IndexAny(s, "<>=!")
	if i < 0 {
		return g, usage(expr, "no comparison: want e.g. 'p95<100ms'")
	}
	lhs, rest := strings.TrimSpace(s[:i]), s[i:]
	for _, op := range []string{"<=", ">=", "==", "!=", "<", ">", "="} {
		if strings.HasPrefix(rest, op) {
			g.Op = op
			break
		}
	}
	rhsAt := len(g.Op)
	if g.Op == "=" {
		g.Op = "==" // 'forged_accepted=0' reads as an equality, as people write it
	}
	if g.Op == "" {
		return g, usage(expr, "unknown operator: want one of < <= > >= == !=")
	}
	rhs := strings.TrimSpace(rest[rhsAt:])
	if lhs == "" || rhs == "" {
		return g, usage(expr, "want metric, operator and value, e.g. 'p95<100ms'")
	}
	if err := g.parseMetric(lhs); err != nil {
		return g, err
	}
	return g, g.parseValue(rhs)
}

func (g *Gate) parseMetric(lhs string) error {
	parts := strings.Split(lhs, ".")
	// p99.9 splits in two: join it back.
	if n := len(parts); n >= 2 && isDigits(parts[n-1]) && isQuantileWord(parts[n-2]) {
		parts = append(parts[:n-2], parts[n-2]+"."+parts[n-1])
	}
	leaf := strings.ToLower(parts[len(parts)-1])
	prefix := parts[:len(parts)-1]
	for _, p := range prefix {
		if p == "" {
			return usage(g.Expr, "empty name in metric %q", lhs)
		}
	}
	switch {
	case isQuantileWord(leaf) || leaf == "min" || leaf == "mean" || leaf == "max":
		g.kind = kindDuration
		g.Metric = leaf
		if isQuantileWord(leaf) {
			q, err := strconv.ParseFloat(leaf[1:], 64)
			if err != nil || q < 0 || q > 100 {
				return usage(g.Expr, "quantile %q: want p0 to p100", leaf)
			}
			g.quantile = q
			g.Metric = "p" + strconv.FormatFloat(q, 'f', -1, 64)
		}
		g.Family = "latency"
		switch len(prefix) {
		case 0:
		case 1:
			if f := strings.ToLower(prefix[0]); isFamily(f) {
				g.Family = f
			} else {
				g.Type = prefix[0]
			}
		case 2:
			g.Type = prefix[0]
			g.Family = strings.ToLower(prefix[1])
			if !isFamily(g.Family) {
				return usage(g.Expr, "%q: want latency, service, lateness or dispatch", prefix[1])
			}
		default:
			return usage(g.Expr, "metric %q: want [Type.][family.]quantile", lhs)
		}
		if g.Type != "" && g.Family == "dispatch" {
			return usage(g.Expr, "dispatch delay is measured over all types only")
		}
	case isRate(leaf):
		g.kind = kindRate
		g.Metric = leaf
		if len(prefix) > 0 {
			return usage(g.Expr, "rates are over all types: drop %q", strings.Join(prefix, "."))
		}
	default:
		m, err := counterName(g.Expr, leaf)
		if err != nil {
			return err
		}
		g.kind = kindCount
		g.Metric = m
		if m == "ambient_weather" && len(prefix) > 0 {
			return usage(g.Expr, "ambient_weather counts the crowd's origins, over every type: drop %q", strings.Join(prefix, ".")+".")
		}
		switch len(prefix) {
		case 0:
		case 1:
			if isFamily(strings.ToLower(prefix[0])) {
				return usage(g.Expr, "%s is a count, not a %s quantile", leaf, prefix[0])
			}
			g.Type = prefix[0]
		default:
			return usage(g.Expr, "metric %q: want [Type.]counter", lhs)
		}
	}
	if isForgedCounter(g.Metric) {
		// A tamper kind as --tamper spells it (digest-unsigned) is the
		// gate's digest_unsigned.
		g.Type = strings.ReplaceAll(g.Type, "-", "_")
	}
	if g.Type != "" && !isTypeName(g.Type) {
		return usage(g.Expr, "activity type %q: want letters and digits", g.Type)
	}
	return nil
}

func (g *Gate) parseValue(rhs string) error {
	switch g.kind {
	case kindDuration:
		if strings.HasSuffix(rhs, "%") {
			return usage(g.Expr, "%s is a duration: compare it with one, e.g. 100ms", g.Metric)
		}
		d, err := time.ParseDuration(rhs)
		if err != nil || d < 0 {
			return usage(g.Expr, "%q: want a duration such as 100ms or 2s", rhs)
		}
		g.Dur = d
	case kindCount:
		num := rhs
		if strings.HasSuffix(num, "%") && g.Metric == "ambient_weather" {
			// A share of what? The crowd's origins are not in the record
			// when it met no weather: a count says the same thing plainly.
			return usage(g.Expr, "ambient_weather is a count of origins: compare it with one, e.g. 'ambient_weather==0'")
		}
		if strings.HasSuffix(num, "%") {
			g.Percent = true
			num = strings.TrimSpace(num[:len(num)-1])
		}
		v, err := ParseNumber(num)
		if g.Metric == "ambient_weather" && (err != nil || v < 0 || v != math.Trunc(v)) {
			return usage(g.Expr, "%q: ambient_weather counts origins: want a whole number such as 0", rhs)
		}
		if err != nil || v < 0 || (g.Percent && v > 100) {
			return usage(g.Expr, "%q: want a count such as 0 or a share such as 1%%", rhs)
		}
		g.Num = v
	case kindRate:
		coef, ref, hasRef := strings.Cut(rhs, "*")
		if !hasRef {
			if isRate(strings.ToLower(rhs)) {
				coef, ref, hasRef = "1", rhs, true
			}
		}
		v, err := ParseNumber(strings.TrimSpace(coef))
		if err != nil || v < 0 {
			return usage(g.Expr, "%q: want a rate such as 300 or 0.95*offered", rhs)
		}
		g.Num = v
		if hasRef {
			g.Ref = strings.ToLower(strings.TrimSpace(ref))
			if !isRate(g.Ref) {
				return usage(g.Expr, "%q: want rate, offered or throughput after '*'", ref)
			}
		}
	}
	return nil
}

// Canonical is the expression as the crowd writes it, whatever spelling
// it was given in ('forged_effective=0' and 'forged_effective == 0' are
// both forged_effective==0): two gates are the same when it is.
func (g Gate) Canonical() string { return g.metricString() + g.Op + g.valueString() }

// metricString is the canonical left-hand side: [Type.][family.]metric.
func (g Gate) metricString() string {
	s := g.Metric
	if g.kind == kindDuration {
		s = g.Family + "." + s
	}
	if g.Type != "" {
		s = g.Type + "." + s
	}
	return s
}

// valueString is the canonical right-hand side.
func (g Gate) valueString() string {
	switch g.kind {
	case kindDuration:
		return g.Dur.String()
	case kindCount:
		s := strconv.FormatFloat(g.Num, 'g', -1, 64)
		if g.Percent {
			s += "%"
		}
		return s
	case kindRate:
		s := strconv.FormatFloat(g.Num, 'g', -1, 64)
		if g.Ref != "" {
			s += "*" + g.Ref
		}
		return s
	}
	return ""
}

// GateResult is a gate evaluated against a record. Actual and Limit are in
// the gate's unit: microseconds for durations, a fraction for percentages,
// a count, or per second.
type GateResult struct {
	Gate   Gate
	Actual float64
	Limit  float64
	Known  bool // the record has data to evaluate the metric on
	Holds  bool // the expression is true (false when not Known)
	// forgedApart says the count left the forged requests out (see
	// counter), so String says so beside a table whose "all" row has them.
	forgedApart bool
}

// String describes the result: "p95 = 123ms (want < 100ms): missed".
func (r GateResult) String() string {
	g := r.Gate
	name := g.metricString()
	if r.forgedApart {
		name += " (forged requests apart)"
	}
	if !r.Known {
		return fmt.Sprintf("%s: no data (want %s %s): missed", name, g.Op, g.valueString())
	}
	verdict := "met"
	if !r.Holds {
		verdict = "missed"
	}
	actual := g.format(r.Actual)
	if g.Metric == "ambient_weather" {
		actual += Plural(int(r.Actual), " origin", " origins") // a count of what, said once
	}
	return fmt.Sprintf("%s = %s (want %s %s): %s", name, actual, g.Op, g.format(r.Limit), verdict)
}

func (g Gate) format(v float64) string {
	switch {
	case g.kind == kindDuration:
		return FormatDuration(time.Duration(v * float64(time.Microsecond)))
	case g.kind == kindCount && g.Percent:
		return strconv.FormatFloat(100*v, 'g', 4, 64) + "%"
	case g.kind == kindRate:
		return strconv.FormatFloat(v, 'f', 1, 64) + "/s"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Eval evaluates the gate on r. A metric with no data (an absent type, an
// empty histogram, a share of nothing, a zero-length window) is not Known
// and does not hold.
func (g Gate) Eval(r *Record) GateResult {
	res := GateResult{Gate: g}
	var ok bool
	switch g.kind {
	case kindDuration:
		res.Actual, ok = g.durationActual(r)
		res.Limit = float64(g.Dur) / float64(time.Microsecond)
	case kindCount:
		var n, of int64
		n, of, ok = g.counter(r)
		_, forged := r.Types[string(TypeForged)]
		res.forgedApart = forged && g.Type == "" && g.answerCount()
		res.Actual, res.Limit = float64(n), g.Num
		if g.Percent {
			if of == 0 {
				ok = false
			} else {
				res.Actual, res.Limit = float64(n)/float64(of), g.Num/100
			}
		}
	case kindRate:
		res.Actual, ok = rateOf(r, g.Metric)
		res.Limit = g.Num
		if g.Ref != "" {
			ref, refOK := rateOf(r, g.Ref)
			res.Limit, ok = g.Num*ref, ok && refOK
		}
	}
	if !ok {
		return res
	}
	res.Known = true
	res.Holds = compare(res.Actual, g.Op, res.Limit)
	return res
}

// JudgeLatency judges a latency gate (p95, max, mean …, family latency)
// on a latency another measurement of the run made (crowd run's
// visibility, home timeline, deliveries: RunSectionPart), as Eval judges
// one on the record's histograms: a quantile from h's summary when it
// keeps it, else from its histogram. It has no data when h holds no value,
// or keeps neither the quantile nor a histogram (a record made before run
// sections kept one).
func (g Gate) JudgeLatency(h HistRecord) GateResult {
	res := GateResult{Gate: g, Limit: float64(g.Dur) / float64(time.Microsecond)}
	if g.kind != kindDuration || g.Family != "latency" {
		return res
	}
	v, ok := g.valueIn(h)
	if !ok {
		return res
	}
	res.Actual, res.Known = v, true
	res.Holds = compare(res.Actual, g.Op, res.Limit)
	return res
}

// JudgeCount judges a count gate on n of of (a share of of when the gate's
// value is a percentage, with no data when of is 0), as Eval judges one on
// the record's counters: a count another measurement of the run made.
func (g Gate) JudgeCount(n, of int64) GateResult {
	res := GateResult{Gate: g, Actual: float64(n), Limit: g.Num}
	if g.kind != kindCount {
		return res
	}
	if g.Percent {
		if of == 0 {
			return res
		}
		res.Actual, res.Limit = float64(n)/float64(of), g.Num/100
	}
	res.Known = true
	res.Holds = compare(res.Actual, g.Op, res.Limit)
	return res
}

// IsCount reports whether g's metric is a count (errors, never_seen …).
func (g Gate) IsCount() bool { return g.kind == kindCount }

// quantileOf is q's value (µs) for the metric a gate names, false for a
// quantile q does not keep.
func quantileOf(q Quantiles, metric string) (float64, bool) {
	switch metric {
	case "min":
		return float64(q.Min), true
	case "mean":
		return q.Mean, true
	case "max", "p100":
		return float64(q.Max), true
	case "p50":
		return float64(q.P50), true
	case "p90":
		return float64(q.P90), true
	case "p95":
		return float64(q.P95), true
	case "p99":
		return float64(q.P99), true
	case "p99.9":
		return float64(q.P999), true
	}
	return 0, false
}

func compare(a float64, op string, b float64) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "==":
		return a == b
	case "!=":
		return a != b
	}
	return false
}

func (g Gate) durationActual(r *Record) (float64, bool) {
	var h *HistRecord
	if g.Family == "dispatch" {
		h = &r.Dispatch
	} else {
		t, ok := r.Type(g.Type)
		if !ok {
			return 0, false
		}
		switch g.Family {
		case "latency":
			h = &t.Latency
		case "service":
			h = &t.Service
		case "lateness":
			h = &t.Lateness
		}
	}
	if h == nil {
		return 0, false
	}
	return g.valueIn(*h)
}

// valueIn is the duration metric's value in h, µs: from h's summary when
// it keeps it (min, mean, max, p50 …), else the quantile from its
// histogram; false when h holds nothing, or keeps neither.
func (g Gate) valueIn(h HistRecord) (float64, bool) {
	if v, ok := quantileOf(h.Quantiles, g.Metric); ok {
		return v, h.Count > 0
	}
	return h.valueAt(g.quantile)
}

// counter returns the count, its denominator for a share, and whether the
// type exists.
func (g Gate) counter(r *Record) (n, of int64, ok bool) {
	if isForgedCounter(g.Metric) {
		return r.Security.forgedCounter(g.Metric, g.Type)
	}
	if g.Metric == "ambient_weather" {
		n, ok := r.AmbientOrigins()
		return n, n, ok
	}
	t, ok := r.Type(g.Type)
	if !ok {
		return 0, 0, false
	}
	c, tl := t.Counts, t.Tally
	if f, forged := r.Types[string(TypeForged)]; forged && g.Type == "" && g.answerCount() {
		// A forged request refused is the right answer, not an error of the
		// run: over all types the answers are the honest requests' (the
		// Forged row and the security section judge the forged ones).
		c.Completed -= f.Counts.Completed
		tl = tl.minus(f.Tally)
	}
	switch g.Metric {
	case "sent":
		return c.Sent, c.Offered, true
	case "dropped":
		return c.Dropped, c.Offered, true
	case "starved":
		return c.Starved, c.Offered, true
	case "completed":
		return c.Completed, c.Sent, true
	case "aborted":
		return c.Aborted, c.Sent, true
	case "errors":
		return tl.Errors(), c.Completed, true
	case "ok", "status2xx":
		return tl.OK(), c.Completed, true
	case "retry_after":
		return tl.RetryAfter, c.Completed, true
	case "status4xx":
		var s int64
		for cl := Class401; cl <= ClassOther4xx; cl++ {
			s += tl.Classes[cl]
		}
		return s, c.Completed, true
	case "status5xx":
		return tl.Classes[Class503] + tl.Classes[ClassOther5xx], c.Completed, true
	}
	cl, _ := counterClass(g.Metric)
	return tl.Classes[cl], c.Completed, true
}

// answerCount reports a count gate on the answers (their status classes,
// Retry-After), not on the sends themselves.
func (g Gate) answerCount() bool {
	switch g.Metric {
	case "sent", "dropped", "starved", "completed", "aborted", "ambient_weather":
		return false
	}
	return !isForgedCounter(g.Metric)
}

// counterName canonicalises a counter and rejects unknown ones.
func counterName(expr, leaf string) (string, error) {
	switch leaf {
	case "sent", "dropped", "starved", "completed", "aborted", "errors", "ok", "retry_after",
		"status2xx", "status4xx", "status5xx", "forged_accepted", "forged_sent", "forged_effective",
		"never_seen", "unreached", // crowd run's run section's (JudgeCount), no flood's
		"ambient_weather":
		return leaf, nil
	case "timeouts":
		return "timeout", nil
	case "conn_error", "conn_errors":
		return "connerr", nil
	}
	if _, ok := counterClass(leaf); ok {
		return leaf, nil
	}
	if code, ok := strings.CutPrefix(leaf, "status"); ok && isDigits(code) {
		return "", usage(expr, "status %s is not a class of its own: use status2xx, status4xx or status5xx", code)
	}
	if isFamily(strings.ToLower(leaf)) {
		return "", usage(expr, "%s is a family of quantiles: name one, as %s.p99", leaf, strings.ToLower(leaf))
	}
	return "", usage(expr, "unknown metric %q: want a quantile (p95, p99, max, or service.p99, lateness.p99, dispatch.p99: latency by default), "+
		"a rate (rate, offered, throughput) or a count (errors, dropped, timeouts, status5xx, …)", leaf)
}

// counterClass maps a counter naming one status class to it.
func counterClass(m string) (Class, bool) {
	switch m {
	case "timeout":
		return ClassTimeout, true
	case "connerr":
		return ClassConnError, true
	case "other":
		return ClassOther, true
	}
	if code, ok := strings.CutPrefix(m, "status"); ok {
		for _, cl := range []Class{Class202, Class401, Class403, Class404, Class410, Class429, Class503} {
			if cl.String() == code {
				return cl, true
			}
		}
	}
	return 0, false
}

func rateOf(r *Record, m string) (float64, bool) {
	if r.Measured <= 0 {
		return 0, false
	}
	switch m {
	case "rate":
		return r.Rates.Sent, true
	case "offered":
		return r.Rates.Offered, true
	case "throughput":
		return r.Rates.Throughput, true
	}
	return 0, false
}

func isFamily(s string) bool {
	return s == "latency" || s == "service" || s == "lateness" || s == "dispatch"
}

func isRate(s string) bool { return s == "rate" || s == "offered" || s == "throughput" }

// isQuantileWord reports "p" followed by digits (and at most one dot).
func isQuantileWord(s string) bool {
	if len(s) < 2 || (s[0] != 'p' && s[0] != 'P') {
		return false
	}
	d, frac, _ := strings.Cut(s[1:], ".")
	return isDigits(d) && (frac == "" && !strings.HasSuffix(s, ".") || isDigits(frac))
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isTypeName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

// ParseNumber parses a finite decimal number (no hex, no inf/nan): the one
// number syntax of gates, thresholds and --rates.
func ParseNumber(s string) (float64, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, errors.New("not a number")
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errors.New("not a number")
	}
	return v, nil
}

// CheckGates evaluates every gate on r; ok is true when all hold.
func CheckGates(r *Record, gates []Gate) (results []GateResult, ok bool) {
	ok = true
	for _, g := range gates {
		res := g.Eval(r)
		results = append(results, res)
		if !res.Holds {
			ok = false
		}
	}
	return results, ok
}
