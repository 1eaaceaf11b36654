package record

import (
	"encoding/json"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/crowdfed/crowd/internal/histgeom"
)

// NewHist returns an empty histogram with the flood's geometry (values in µs),
// the one of internal/histgeom: records from several generators, and the
// fetch-backs the crowd's origins served, merge exactly only when their
// geometry is identical, so it is fixed there and checked when a record is
// merged.
func NewHist() *hdr.Histogram { return histgeom.New() }

// RecordDuration records d in microseconds, clamped to the histogram's range so that
// RecordValue never fails (and never allocates its error).
func RecordDuration(h *hdr.Histogram, d time.Duration) { histgeom.Record(h, d) }

// Class is the status class of one completed send, as DESIGN §6 tallies them.
type Class uint8

// The status classes. A 1xx or 3xx answer (redirects are never followed) lands
// in ClassOther so that it is visible instead of being mislabelled.
const (
	Class202       Class = iota // 202 Accepted: what an inbox should answer
	ClassOther2xx               // any other 2xx
	Class401                    // signature refused
	Class403                    // forbidden (blocked, authorized fetch)
	Class404                    // no such inbox
	Class410                    // gone
	Class429                    // rate limited
	ClassOther4xx               // any other 4xx
	Class503                    // throttled or down
	ClassOther5xx               // any other 5xx
	ClassTimeout                // no complete answer within Plan.Timeout
	ClassConnError              // dial, reset, EOF, TLS: no HTTP answer at all
	ClassOther                  // 1xx/3xx: not expected
	NumClasses                  // number of classes; not a class
)

// String returns the class's key in a record's tally ("202", "other_2xx",
// "timeout", "conn_error", ...).
func (c Class) String() string {
	switch c {
	case Class202:
		return "202"
	case ClassOther2xx:
		return "other_2xx"
	case Class401:
		return "401"
	case Class403:
		return "403"
	case Class404:
		return "404"
	case Class410:
		return "410"
	case Class429:
		return "429"
	case ClassOther4xx:
		return "other_4xx"
	case Class503:
		return "503"
	case ClassOther5xx:
		return "other_5xx"
	case ClassTimeout:
		return "timeout"
	case ClassConnError:
		return "conn_error"
	case ClassOther:
		return "other"
	}
	return "invalid"
}

// OK reports whether the class is a success (any 2xx).
func (c Class) OK() bool { return c == Class202 || c == ClassOther2xx }

// ClassOfStatus maps an HTTP status code to its class.
func ClassOfStatus(status int) Class {
	switch {
	case status == 202:
		return Class202
	case status >= 200 && status < 300:
		return ClassOther2xx
	case status == 401:
		return Class401
	case status == 403:
		return Class403
	case status == 404:
		return Class404
	case status == 410:
		return Class410
	case status == 429:
		return Class429
	case status >= 400 && status < 500:
		return ClassOther4xx
	case status == 503:
		return Class503
	case status >= 500 && status < 600:
		return ClassOther5xx
	}
	return ClassOther
}

// Tally counts completed sends by status class, and how many answers carried
// a Retry-After header (of any status).
type Tally struct {
	Classes    [NumClasses]int64
	RetryAfter int64
}

// minus is t without o's answers (o counted within t).
func (t Tally) minus(o Tally) Tally {
	for c := range t.Classes {
		t.Classes[c] -= o.Classes[c]
	}
	t.RetryAfter -= o.RetryAfter
	return t
}

// Add counts one completed send.
func (t *Tally) Add(c Class, retryAfter bool) {
	t.Classes[c]++
	if retryAfter {
		t.RetryAfter++
	}
}

// Merge adds o's counts to t.
func (t *Tally) Merge(o Tally) {
	for i := range t.Classes {
		t.Classes[i] += o.Classes[i]
	}
	t.RetryAfter += o.RetryAfter
}

// Total is the number of completed sends tallied.
func (t Tally) Total() int64 {
	var n int64
	for _, c := range t.Classes {
		n += c
	}
	return n
}

// OK is the number of 2xx answers.
func (t Tally) OK() int64 { return t.Classes[Class202] + t.Classes[ClassOther2xx] }

// Unanswered is the number of completed sends that got no HTTP answer
// (timeouts, connection errors).
func (t Tally) Unanswered() int64 { return t.Classes[ClassTimeout] + t.Classes[ClassConnError] }

// Errors is the number of completed sends that were not 2xx (4xx, 5xx,
// timeouts, connection errors, other).
func (t Tally) Errors() int64 { return t.Total() - t.OK() }

// MarshalJSON writes the tally as an object keyed by Class.String, plus
// "retry_after".
func (t Tally) MarshalJSON() ([]byte, error) {
	m := make(map[string]int64, NumClasses+1)
	for c := Class(0); c < NumClasses; c++ {
		m[c.String()] = t.Classes[c]
	}
	m["retry_after"] = t.RetryAfter
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes; an unknown key is an error, so
// a record from a newer schema is not merged as if it were complete.
func (t *Tally) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*t = Tally{}
	for k, v := range m {
		if k == "retry_after" {
			t.RetryAfter = v
			continue
		}
		c, ok := classByName(k)
		if !ok {
			return fmt.Errorf("tally: unknown status class %q", k)
		}
		t.Classes[c] = v
	}
	return nil
}

// classByName is the inverse of Class.String.
func classByName(s string) (Class, bool) {
	for c := Class(0); c < NumClasses; c++ {
		if c.String() == s {
			return c, true
		}
	}
	return 0, false
}

// Counts are the send counters of a run, per activity type or overall.
// Offered = Sent + Dropped: a send that found no free slot is dropped, never
// delayed. Sent = Completed + Aborted (+ still in flight, while running).
type Counts struct {
	Offered   int64 `json:"offered"`   // sends whose intended time was reached
	Sent      int64 `json:"sent"`      // handed to a worker slot
	Dropped   int64 `json:"dropped"`   // no free slot (MaxInflight reached) at the intended time
	Starved   int64 `json:"starved"`   // late because the Source had no request ready (generator's fault)
	Completed int64 `json:"completed"` // got an answer, a timeout or a connection error
	Aborted   int64 `json:"aborted"`   // in flight when the run was cancelled; not measured
	// Written counts the sent requests the dispatcher wrote itself (or
	// tried to) on a resting connection (the fast client; see
	// Offer.Written): their lateness ends at the write. 0 in records made
	// before it was kept.
	Written int64 `json:"written,omitempty"`
}

// Merge adds o to c.
func (c *Counts) Merge(o Counts) {
	c.Offered += o.Offered
	c.Sent += o.Sent
	c.Dropped += o.Dropped
	c.Starved += o.Starved
	c.Completed += o.Completed
	c.Aborted += o.Aborted
	c.Written += o.Written
}

// Answered reports whether the class is an HTTP answer of any status: the
// sends whose timings are the SUT's latency. A timeout or a connection error
// got no answer; its timing is how long failing took (a refused connection
// fails in microseconds), so it is kept apart (Stats.Failed).
func (c Class) Answered() bool { return c != ClassTimeout && c != ClassConnError }

// Stats are the live measurements of one activity type (or of all of them).
// Histograms hold microseconds. Latency is from the intended send time
// (coordinated-omission corrected) to the end of the answer; Service from the
// actual send (the request got its connection) to the end of the answer;
// both hold answered sends only (any status, see Class.Answered): a dead SUT
// refuses connections in microseconds, which would pass for speed. Accepted
// is Latency of the 2xx answers alone (what the SUT took on, which a 429
// that sheds load fast must not hide). Failed is the latency of the sends
// that got no answer (timeouts, connection errors), apart. Lateness, from
// the intended to the actual send, holds every completed send. Aborted and
// dropped sends are in none.
type Stats struct {
	Counts Counts
	Tally  Tally
	// RateLimits are the rate-limit fields the answers carried, per class.
	RateLimits RateLimits
	Latency    *hdr.Histogram
	Service    *hdr.Histogram
	Lateness   *hdr.Histogram
	Accepted   *hdr.Histogram
	Failed     *hdr.Histogram
	// Unanswered is why the sends in Failed got no answer.
	Unanswered Unanswered
}

// NewStats returns empty Stats with the flood's histogram geometry.
func NewStats() *Stats {
	return &Stats{Latency: NewHist(), Service: NewHist(), Lateness: NewHist(), Accepted: NewHist(), Failed: NewHist()}
}

// Merge adds o into s. It is exact: the histograms share one geometry.
func (s *Stats) Merge(o *Stats) {
	s.Counts.Merge(o.Counts)
	s.Tally.Merge(o.Tally)
	s.RateLimits.Merge(o.RateLimits)
	s.Latency.Merge(o.Latency)
	s.Service.Merge(o.Service)
	s.Lateness.Merge(o.Lateness)
	s.Accepted.Merge(o.Accepted)
	s.Failed.Merge(o.Failed)
	s.Unanswered.Merge(o.Unanswered)
}

// Observe files one completed send's timings in the histograms its class
// belongs to.
func (s *Stats) Observe(c Class, lat, service, late time.Duration) {
	RecordDuration(s.Lateness, late)
	if !c.Answered() {
		RecordDuration(s.Failed, lat)
		return
	}
	RecordDuration(s.Latency, lat)
	RecordDuration(s.Service, service)
	if c.OK() {
		RecordDuration(s.Accepted, lat)
	}
}

// Quantiles summarise a histogram, in microseconds.
type Quantiles struct {
	Count int64   `json:"count"`
	Min   int64   `json:"min_us"`
	Mean  float64 `json:"mean_us"`
	P50   int64   `json:"p50_us"`
	P90   int64   `json:"p90_us"`
	P95   int64   `json:"p95_us"`
	P99   int64   `json:"p99_us"`
	P999  int64   `json:"p99_9_us"`
	Max   int64   `json:"max_us"`
}

// Format formats v, one of q's values, for people: "-" when q holds no
// value (nothing was answered: a 0 would read as an instant answer).
func (q Quantiles) Format(v int64) string {
	if q.Count == 0 {
		return "-"
	}
	return FormatMicros(v)
}

// Summarize computes the Quantiles of h (hdrhistogram quantiles take 0-100).
func Summarize(h *hdr.Histogram) Quantiles {
	if h == nil || h.TotalCount() == 0 {
		return Quantiles{}
	}
	return Quantiles{
		Count: h.TotalCount(),
		Min:   h.Min(),
		Mean:  h.Mean(),
		P50:   h.ValueAtQuantile(50),
		P90:   h.ValueAtQuantile(90),
		P95:   h.ValueAtQuantile(95),
		P99:   h.ValueAtQuantile(99),
		P999:  h.ValueAtQuantile(99.9),
		Max:   h.Max(),
	}
}

// Tick is one second of the run's timeline (for the live line and plots).
// T is the end of the interval in seconds since the start; the last tick may
// cover less than a second (Span). Counts are for the interval only, warm-up
// included (Warmup marks a tick that lies wholly inside it). Completions are
// counted in the second they complete, offers in the second they were due.
// The latency fields are over the answered sends of the interval (see
// Stats); 0 when none was answered.
type Tick struct {
	T           int     `json:"t"`
	Span        float64 `json:"span_s"`
	Warmup      bool    `json:"warmup,omitempty"`
	Offered     int64   `json:"offered"`
	Sent        int64   `json:"sent"`
	Dropped     int64   `json:"dropped"`
	Starved     int64   `json:"starved"`
	Completed   int64   `json:"completed"`
	OK          int64   `json:"ok"`
	Errors      int64   `json:"errors"`
	Status429   int64   `json:"status_429"`
	Inflight    int64   `json:"inflight"`
	LatencyP50  int64   `json:"latency_p50_us"`
	LatencyP99  int64   `json:"latency_p99_us"`
	LatencyMax  int64   `json:"latency_max_us"`
	LatenessP99 int64   `json:"lateness_p99_us"`
	// LatenessP50 is the median lateness of the interval's completed
	// sends, for the admin page's live panel (records before it have none).
	LatenessP50 int64 `json:"lateness_p50_us,omitempty"`
}

// Absorb adds o's counts to t and keeps the worse of each percentile
// (percentiles do not add up). Span, Warmup and Inflight are the caller's:
// consecutive ticks and the same tick of concurrent generators combine
// them differently.
func (t *Tick) Absorb(o Tick) {
	t.Offered += o.Offered
	t.Sent += o.Sent
	t.Dropped += o.Dropped
	t.Starved += o.Starved
	t.Completed += o.Completed
	t.OK += o.OK
	t.Errors += o.Errors
	t.Status429 += o.Status429
	t.LatencyP50 = max(t.LatencyP50, o.LatencyP50)
	t.LatencyP99 = max(t.LatencyP99, o.LatencyP99)
	t.LatencyMax = max(t.LatencyMax, o.LatencyMax)
	t.LatenessP99 = max(t.LatenessP99, o.LatenessP99)
	t.LatenessP50 = max(t.LatenessP50, o.LatenessP50)
}

// Progress is what the engine reports once a second (record.RecorderOptions.Progress): the tick
// that just ended and the running totals since the start (warm-up included).
type Progress struct {
	Elapsed   time.Duration // since the start of the run
	Total     time.Duration // schedule length (estimated for Poisson MaxSends runs)
	Warmup    bool          // still inside the warm-up
	Final     bool          // the last report: the run has ended (Tick may be a short drain)
	Tick      Tick
	Offered   int64
	Sent      int64
	Dropped   int64
	Starved   int64
	Completed int64
	OK        int64
	Errors    int64
	Status429 int64
	Inflight  int64
}

// SentRate is the tick's sends per second: over its span, which for the
// last tick (the drain) is a fraction of a second; its count when the span
// is not known.
func (t Tick) SentRate() float64 {
	if t.Span > 0 {
		return float64(t.Sent) / t.Span
	}
	return float64(t.Sent)
}

// Window is when a run's measured sends were due, taken by a worker and
// answered, in seconds from the start of the run. It shows whether the
// generator kept its schedule (LastSent against LastDue, see
// BottleneckRule) and bounds the elapsed window the rates divide by
// (Result.Measured).
type Window struct {
	FirstDue    float64 `json:"first_due_s"`    // the end of the warm-up: the first measured send was due then or later
	LastDue     float64 `json:"last_due_s"`     // intended time of the last measured send offered
	LastSent    float64 `json:"last_sent_s"`    // the last measured send taken by a worker
	LastAnswer  float64 `json:"last_answer_s"`  // the last measured answer, timeout or error
	ScheduleEnd float64 `json:"schedule_end_s"` // the schedule's end as run: the duration, the interruption, or the next due time after the last of max_sends
}
