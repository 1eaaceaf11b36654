package record

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/crowdfed/crowd/internal/hostorder"
)

// The isolation rule: healthy deliveries suffered head-of-line blocking
// when their p95 under the weather is at least IsolationRatio times the
// clear phase's and at least IsolationFloor more. The floor keeps a few
// milliseconds' jitter on a fast SUT from reading as blocking. Beside the
// verdict the record says how much the SUT's own answers to the flood
// slowed between the same phases (SUTAnswers), which the verdict does not
// use: a SUT the weather made slower as a whole is not isolated either,
// and in a run of Fedify whose CPU other processes took, its deliveries
// slowed 2.7× while its answers' medians did not move: the answers cannot
// tell a busy machine from a blocked queue.
const (
	IsolationRatio = 3.0
	IsolationFloor = time.Second
	// IsolationMinimum is the fewest deliveries each phase needs for a
	// verdict.
	IsolationMinimum = 5
	// AnswersMinimum is the fewest measured seconds with answers each
	// phase needs for the SUT's answers to be compared.
	AnswersMinimum = 3
)

// Verdicts of an Isolation.
const (
	VerdictIsolated = "isolated"
	VerdictBlocking = "head-of-line blocking"
	VerdictUnknown  = "not enough deliveries"
	// VerdictNoBaseline: the weather was in force from the start, so there
	// is no clear phase to compare with.
	VerdictNoBaseline = "no clear phase before the weather"
)

// Deliveries is what the SUT's own deliveries to the crowd did while some
// of its origins were in bad weather, as the crowd received them: every
// attempt at an origin in weather, linked by activity, and the latency of
// the deliveries to the healthy origins beside a clear-weather phase. A
// `crowd run` with posting personas and weather fills it; nil otherwise.
type Deliveries struct {
	// Origins are the origins that had weather during the run, by host.
	Origins []OriginDeliveries `json:"origins"`
	// Healthy are the deliveries to origins that had no weather at all.
	Healthy HealthyDeliveries `json:"healthy"`
	// Isolation is the verdict on Healthy (Isolate), its rule printed.
	Isolation Isolation `json:"isolation"`
	// Attempts are the attempts the crowd received per second of the run
	// (from the flood's start), by the weather of the origin then.
	Attempts []AttemptTick `json:"attempts,omitempty"`
	// AttemptsDropped counts attempts past the account's bound, and
	// StreamLost the crowd's log entries lost before the run read them:
	// when either is not 0, attempts are missing from the figures.
	AttemptsDropped int    `json:"attempts_dropped,omitempty"`
	StreamLost      uint64 `json:"stream_lost,omitempty"`
}

// OriginDeliveries is what the SUT did to deliver to one origin in weather.
type OriginDeliveries struct {
	// Host is the origin's host name.
	Host string `json:"host"`
	// Conditions are the origin's weathers during the run, in order, as a
	// spec writes them ("down", then "clear" when it recovered).
	Conditions []string `json:"conditions"`
	// Class is the kind of its first bad weather ("down", "slow"…).
	Class string `json:"class"`
	// Attempts is every delivery attempt the crowd received at it (a
	// refused connection or lookup counts once per attempt, however many
	// entries it made); Unlinked those not tied to one activity.
	Attempts int `json:"attempts"`
	Unlinked int `json:"unlinked,omitempty"`
	// PerHour is the attempts per hour while it was in bad weather: whether
	// the SUT stops trying a dead origin.
	PerHour float64 `json:"attempts_per_hour"`
	// Delivered, DeliveredAfterRecovery and Undelivered count the
	// activities owed to it by outcome.
	Delivered              int `json:"delivered"`
	DeliveredAfterRecovery int `json:"delivered_after_recovery"`
	Undelivered            int `json:"undelivered"`
	// EarlyRetries counts attempts made before the Retry-After the crowd
	// answered the previous one with allowed.
	EarlyRetries int `json:"early_retries,omitempty"`
	// Fetches are the requests for its documents (actors, keys, WebFinger)
	// and Lookups the DNS queries for its name that the weather answered
	// during the run: whether the SUT keeps fetching from a gone or lapsed
	// origin. Both are 0 when the crowd could not count them.
	Fetches int64 `json:"fetches"`
	Lookups int64 `json:"lookups"`
	// Recoveries are how the SUT drained its backlog each time the
	// origin's weather cleared during the run; none when it never did.
	Recoveries []Recovery `json:"recoveries,omitempty"`
	// Activities are the activities owed to it, each with its attempts
	// (at most ActivitiesKept; the counts above cover them all).
	Activities []ActivityAttempts `json:"activities"`
}

// ActivitiesKept bounds the activities an origin lists in the record.
const ActivitiesKept = 50

// Recovery is an origin's backlog after its weather cleared.
type Recovery struct {
	// AtS is when it cleared, in seconds from the flood's start.
	AtS float64 `json:"at_s"`
	// Backlog is how many activities owed before then arrived after;
	// PeakPerS the most of them in one second; DrainS from the recovery to
	// the last of them.
	Backlog  int     `json:"backlog"`
	PeakPerS int     `json:"peak_per_s"`
	DrainS   float64 `json:"drain_s"`
}

// ActivityAttempts is one activity's attempts at one origin: the SUT's
// retry schedule as observed.
type ActivityAttempts struct {
	// ID is the post's id; Inbox the inbox the attempts went to when the
	// origin had several of the post's followers ("" when tied to the
	// origin as a whole).
	ID    string `json:"id"`
	Inbox string `json:"inbox,omitempty"`
	// PostedS is when the SUT's client API answered the post, from the
	// flood's start (the run's clock).
	PostedS  float64   `json:"posted_s"`
	Attempts []Attempt `json:"attempts"`
	// IntervalsS are the seconds between consecutive attempts.
	IntervalsS []float64 `json:"intervals_s"`
	// Outcome is OutcomeDelivered, OutcomeAfterRecovery or
	// OutcomeUndelivered; DeliveredOn the attempt (from 1) that was
	// accepted; AfterRecoveryS how long after the origin cleared.
	Outcome        string  `json:"outcome"`
	DeliveredOn    int     `json:"delivered_on,omitempty"`
	AfterRecoveryS float64 `json:"after_recovery_s,omitempty"`
	// Linked says how the attempts were tied to the activity: "id" (the
	// request's body named it) or "origin" (refused before a request was
	// read, while it was the only activity owed to the origin); "" when
	// none was seen.
	Linked string `json:"linked,omitempty"`
}

// Outcomes of an ActivityAttempts.
const (
	OutcomeDelivered     = "delivered"
	OutcomeAfterRecovery = "delivered_after_recovery"
	OutcomeUndelivered   = "undelivered"
)

// Attempt is one delivery attempt as the crowd answered it.
type Attempt struct {
	// AtS is its arrival, in seconds from the activity's post (PostedS).
	AtS float64 `json:"at_s"`
	// Status is the crowd's answer (0: none: a reset, a hold, a refused
	// handshake or lookup).
	Status int `json:"status"`
	// Weather is the origin's weather then, as a spec writes it ("" clear).
	Weather string `json:"weather,omitempty"`
}

// HealthyDeliveries are the deliveries owed to origins that had no weather,
// split by when their post was made: while every origin was clear
// (Baseline) or while some were in weather (Weather). Latency is from the
// post's creation (the SUT's clock) to the crowd's receipt.
type HealthyDeliveries struct {
	// Expected deliveries, how many arrived, and how many did not by the
	// run's end (each counted in its phase's histogram at the end: a
	// lower bound, so blocked deliveries do not drop out).
	Expected  int64      `json:"expected"`
	Reached   int64      `json:"reached"`
	Unreached int64      `json:"unreached"`
	Baseline  HistRecord `json:"baseline"`
	Weather   HistRecord `json:"weather"`
	// NoBaseline says the weather was in force from the start: there was
	// no clear phase.
	NoBaseline bool `json:"no_baseline,omitempty"`
	// Answers is how fast the SUT answered the flood itself in the same
	// two phases; nil when the run could not tell.
	Answers *SUTAnswers `json:"sut_answers,omitempty"`
}

// SUTAnswers is how fast the SUT answered the flood's sends in the clear
// phase and under the weather: the median, over the phase's measured
// seconds (warm-up left out), of each second's median latency. A SUT slower
// as a whole may show here as well as in its deliveries (a busy machine
// need not: see the isolation rule).
type SUTAnswers struct {
	BaselineP50US   int64 `json:"baseline_p50_us"`
	WeatherP50US    int64 `json:"weather_p50_us"`
	BaselineSeconds int   `json:"baseline_seconds"`
	WeatherSeconds  int   `json:"weather_seconds"`
}

// Slowdown is how many times slower the SUT answered under the weather
// than in the clear phase; false when a phase had fewer than
// AnswersMinimum seconds with answers.
func (a *SUTAnswers) Slowdown() (float64, bool) {
	if a == nil || a.BaselineSeconds < AnswersMinimum || a.WeatherSeconds < AnswersMinimum || a.BaselineP50US <= 0 {
		return 0, false
	}
	return float64(a.WeatherP50US) / float64(a.BaselineP50US), true
}

// AnswersOf is the SUT's answers in each phase from a run's timeline:
// phase says which a second belongs to (from its start and end since the
// run's start), and whether it belongs to any. Nil when no second of
// either phase had answers.
func AnswersOf(timeline []Tick, phase func(from, to time.Duration) (weather, ok bool)) *SUTAnswers {
	var base, under []int64
	for _, t := range timeline {
		if t.Warmup || t.LatencyP50 <= 0 {
			continue
		}
		to := time.Duration(t.T) * time.Second
		from := to - time.Duration(t.Span*float64(time.Second))
		weather, ok := phase(from, to)
		switch {
		case !ok:
		case weather:
			under = append(under, t.LatencyP50)
		default:
			base = append(base, t.LatencyP50)
		}
	}
	if len(base) == 0 && len(under) == 0 {
		return nil
	}
	return &SUTAnswers{BaselineP50US: median(base), WeatherP50US: median(under), BaselineSeconds: len(base), WeatherSeconds: len(under)}
}

// median is the middle of xs (the lower of the two middles); 0 for none.
func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[(len(xs)-1)/2]
}

// Isolation is the verdict on whether bad weather on some origins delayed
// deliveries to the healthy ones.
type Isolation struct {
	// Verdict is one of the Verdict constants.
	Verdict string `json:"verdict"`
	// BaselineP95US and WeatherP95US are the two phases' p95 (µs); Ratio
	// the second over the first.
	BaselineP95US int64   `json:"baseline_p95_us"`
	WeatherP95US  int64   `json:"weather_p95_us"`
	Ratio         float64 `json:"ratio"`
	// SUTSlowdown is how many times slower the SUT's own answers were
	// under the weather (SUTAnswers.Slowdown), for the reader beside Ratio
	// (the rule does not use it); 0 when they are not known.
	SUTSlowdown float64 `json:"sut_slowdown,omitempty"`
	// Rule is the rule the verdict applies, for people.
	Rule string `json:"rule"`
}

// AttemptTick is the attempts received in one second, by weather class
// ("clear", "down"…).
type AttemptTick struct {
	T       int            `json:"t"`
	ByClass map[string]int `json:"by_class"`
}

// IsolationRule says the rule Isolate applies, for people.
func IsolationRule() string {
	return fmt.Sprintf("head-of-line blocking when healthy deliveries' p95 under the weather is >= %g× the clear phase's and >= %v more; each phase needs %d deliveries",
		IsolationRatio, IsolationFloor, IsolationMinimum)
}

// Isolate judges the healthy deliveries by the isolation rule.
func Isolate(h HealthyDeliveries) Isolation {
	b, w := h.Baseline.Quantiles, h.Weather.Quantiles
	iso := Isolation{Verdict: VerdictUnknown, BaselineP95US: b.P95, WeatherP95US: w.P95, Rule: IsolationRule()}
	if h.NoBaseline {
		iso.Verdict = VerdictNoBaseline
		return iso
	}
	if b.Count < IsolationMinimum || w.Count < IsolationMinimum {
		return iso
	}
	if b.P95 > 0 {
		iso.Ratio = float64(w.P95) / float64(b.P95)
	}
	if slowdown, ok := h.Answers.Slowdown(); ok {
		iso.SUTSlowdown = slowdown
	}
	iso.Verdict = VerdictIsolated
	if float64(w.P95) >= IsolationRatio*float64(b.P95) && time.Duration(w.P95-b.P95)*time.Microsecond >= IsolationFloor {
		iso.Verdict = VerdictBlocking
	}
	return iso
}

// EncodeHist is a histogram (of the flood's geometry) as a record keeps it.
func EncodeHist(h *hdr.Histogram) (HistRecord, error) { return encodeHist(h) }

// Summary is the deliveries in a line for people.
func (d *Deliveries) Summary() string {
	if d == nil {
		return ""
	}
	var delivered, after, undelivered, attempts int
	for _, o := range d.Origins {
		delivered += o.Delivered
		after += o.DeliveredAfterRecovery
		undelivered += o.Undelivered
		attempts += o.Attempts
	}
	s := fmt.Sprintf("%d origins in weather: %d attempts; %d delivered, %d after recovery, %d undelivered; healthy origins %d of %d delivered",
		len(d.Origins), attempts, delivered, after, undelivered, d.Healthy.Reached, d.Healthy.Expected)
	iso := d.Isolation
	if d.AttemptsDropped > 0 || d.StreamLost > 0 {
		s += fmt.Sprintf(" (%d attempts past the bound and %d log entries lost: figures incomplete)", d.AttemptsDropped, d.StreamLost)
	}
	switch iso.Verdict {
	case VerdictUnknown, "":
		s += "; isolation: not enough deliveries to judge"
	case VerdictNoBaseline:
		s += "; isolation: " + VerdictNoBaseline
	default:
		s += fmt.Sprintf("; isolation: healthy p95 %s clear, %s under weather (%.1f×",
			FormatMicros(iso.BaselineP95US), FormatMicros(iso.WeatherP95US), iso.Ratio)
		if iso.SUTSlowdown > 0 {
			s += fmt.Sprintf("; the SUT's answers %.1f×", iso.SUTSlowdown)
		}
		s += "): " + iso.Verdict
	}
	return s
}

// mergeDeliveries joins the shards' deliveries: each shard serves its own
// origins, so the origins are joined, the healthy histograms added, the
// attempt ticks summed, and the verdict judged again on the whole.
func mergeDeliveries(out *Record, recs []*Record) error {
	var d *Deliveries
	base, weather := NewHist(), NewHist()
	ticks := map[int]map[string]int{}
	for i, r := range recs {
		in := r.Deliveries
		if in == nil {
			continue
		}
		if d == nil {
			d = &Deliveries{}
		}
		d.Origins = append(d.Origins, in.Origins...)
		d.Healthy.Expected += in.Healthy.Expected
		d.Healthy.Reached += in.Healthy.Reached
		d.Healthy.Unreached += in.Healthy.Unreached
		d.Healthy.NoBaseline = d.Healthy.NoBaseline || in.Healthy.NoBaseline
		d.Healthy.Answers = slowerAnswers(d.Healthy.Answers, in.Healthy.Answers)
		d.AttemptsDropped += in.AttemptsDropped
		d.StreamLost += in.StreamLost
		for _, p := range []struct {
			into *hdr.Histogram
			from HistRecord
		}{{base, in.Healthy.Baseline}, {weather, in.Healthy.Weather}} {
			h, err := p.from.Decode()
			if err != nil {
				return fmt.Errorf("%w: record %d's healthy deliveries: %w", ErrMerge, i+1, err)
			}
			p.into.Merge(h)
		}
		for _, t := range in.Attempts {
			if ticks[t.T] == nil {
				ticks[t.T] = map[string]int{}
			}
			for k, n := range t.ByClass {
				ticks[t.T][k] += n
			}
		}
	}
	if d == nil {
		return nil
	}
	slices.SortFunc(d.Origins, func(a, b OriginDeliveries) int { return hostorder.Compare(a.Host, b.Host) })
	var err error
	if d.Healthy.Baseline, err = encodeHist(base); err != nil {
		return err
	}
	if d.Healthy.Weather, err = encodeHist(weather); err != nil {
		return err
	}
	for t, by := range ticks {
		d.Attempts = append(d.Attempts, AttemptTick{T: t, ByClass: by})
	}
	slices.SortFunc(d.Attempts, func(a, b AttemptTick) int { return cmp.Compare(a.T, b.T) })
	d.Isolation = Isolate(d.Healthy)
	out.Deliveries = d
	return nil
}

// slowerAnswers joins two shards' SUTAnswers (either may be nil): the
// same SUT answered both, each shard a part of its flood, so each phase
// keeps the slower median and the fewer seconds.
func slowerAnswers(a, b *SUTAnswers) *SUTAnswers {
	if a == nil || b == nil {
		return cmp.Or(a, b)
	}
	return &SUTAnswers{BaselineP50US: max(a.BaselineP50US, b.BaselineP50US), WeatherP50US: max(a.WeatherP50US, b.WeatherP50US),
		BaselineSeconds: min(a.BaselineSeconds, b.BaselineSeconds), WeatherSeconds: min(a.WeatherSeconds, b.WeatherSeconds)}
}

// Lines are the deliveries as a block for people: the summary, then a line
// per origin in weather (its weathers, its attempts, the first activity's
// observed schedule, the outcomes, the recovery), then the isolation rule.
func (d *Deliveries) Lines() []string {
	if d == nil {
		return nil
	}
	lines := []string{"deliveries under the weather: " + d.Summary()}
	for _, o := range d.Origins {
		l := fmt.Sprintf("  %s %s: %d attempts (%.0f/h in weather)", o.Host, strings.Join(o.Conditions, " → "), o.Attempts, o.PerHour)
		if a, ok := retried(o.Activities); ok {
			l += "; schedule " + scheduleOf(a)
		}
		l += fmt.Sprintf("; %d delivered, %d after recovery, %d undelivered", o.Delivered, o.DeliveredAfterRecovery, o.Undelivered)
		if o.Fetches > 0 || o.Lookups > 0 {
			l += fmt.Sprintf("; %d document fetches and %d lookups answered by the weather", o.Fetches, o.Lookups)
		}
		if o.EarlyRetries > 0 {
			l += fmt.Sprintf("; %d retries before the Retry-After", o.EarlyRetries)
		}
		for _, r := range o.Recoveries {
			l += fmt.Sprintf("; cleared at +%gs: backlog %d, peak %d/s, drained in %g s", r.AtS, r.Backlog, r.PeakPerS, r.DrainS)
		}
		lines = append(lines, l)
	}
	if d.Isolation.Rule != "" {
		lines = append(lines, "  rule: "+d.Isolation.Rule)
	}
	return lines
}

// retried is the activity whose schedule best shows the SUT's retries:
// the first with more than one attempt, else the first with any.
func retried(as []ActivityAttempts) (ActivityAttempts, bool) {
	for _, a := range as {
		if len(a.Attempts) > 1 {
			return a, true
		}
	}
	for _, a := range as {
		if len(a.Attempts) > 0 {
			return a, true
		}
	}
	return ActivityAttempts{}, false
}

// scheduleOf is an activity's observed retry schedule: "attempt 1, +0.31 s
// (502), +0.74 s (502)…", each attempt's offset from the one before and
// the crowd's answer ("-" for none).
func scheduleOf(a ActivityAttempts) string {
	parts := make([]string, 0, len(a.Attempts))
	for i, at := range a.Attempts {
		status := "-"
		if at.Status != 0 {
			status = strconv.Itoa(at.Status)
		}
		off := "at post +" + strconv.FormatFloat(at.AtS, 'g', 4, 64) + "s"
		if i > 0 {
			off = "+" + strconv.FormatFloat(a.IntervalsS[i-1], 'g', 4, 64) + "s"
		}
		parts = append(parts, off+" ("+status+")")
	}
	if len(parts) == 0 {
		return "no attempt"
	}
	return strings.Join(parts, ", ")
}
