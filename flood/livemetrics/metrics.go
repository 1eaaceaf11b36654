package livemetrics

import (
	"bytes"
	"cmp"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/crowdfed/crowd/flood/record"
)

// Labels are the run's labels, on every series as constant labels: a
// scrape of several floods (shards, or one serve receiving their pushes)
// keeps them apart. Empty values are kept (Prometheus reads an empty label
// as absent).
type Labels struct {
	Label    string // --label
	Scenario string // the scenario's name (none: "")
	Seed     string // the draws' seed
	Shard    string // --shard i/n of the crowd, "" unsharded
}

func (l Labels) constLabels() prometheus.Labels {
	return prometheus.Labels{"label": l.Label, "scenario": l.Scenario, "seed": l.Seed, "shard": l.Shard}
}

// Buffer reports a signing pipeline's buffer: requests ready, and its
// capacity (traffic.Pipeline's Ready and Cap).
type Buffer interface {
	Ready() int
	Cap() int
}

// Options configure Metrics.
type Options struct {
	Labels Labels
	// Buffer is the signing pipeline whose depth is exported; nil for
	// presigned and just-in-time runs (no series then).
	Buffer Buffer
}

// durationBuckets are the classic buckets of the three timing histograms,
// in seconds: from 100 µs (lateness of a kept schedule) to 30 s (timeouts).
// The native (sparse) buckets beside them have 10 % resolution.
func durationBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
}

// Metrics is one flood's live metrics. Offered, Completed and Progress
// are safe for concurrent use.
type Metrics struct {
	reg                                        *prometheus.Registry
	offered, sent, dropped, starved, aborted   *prometheus.CounterVec
	completed                                  *prometheus.CounterVec
	unanswered                                 *prometheus.CounterVec
	retryAfter                                 *prometheus.CounterVec
	latency, service, lateness                 *prometheus.HistogramVec
	inflight, warmup, elapsed, rate, lastTickT prometheus.Gauge

	// The series of each activity type, made once: WithLabelValues hashes
	// its labels on every call, which the send path cannot afford. At
	// most the engine's bound on types (it folds the rest into "Other").
	types sync.Map // string → *typeSeries
}

// typeSeries are the children of one activity type.
type typeSeries struct {
	offered, sent, dropped, starved, aborted, retryAfter prometheus.Counter
	classes                                              [record.NumClasses]prometheus.Counter
	latency, service, lateness                           prometheus.Observer

	// The children of unanswered by reason, made as reasons come: one for
	// each of the flood's phrases (record.NamedNoAnswer, a few), and for
	// at most record.MaxUnansweredReasons errors' own texts, later texts
	// counted as "other" (each would be a series).
	mu      sync.Mutex
	reasons sync.Map // string → prometheus.Counter
	texts   int      // errors' texts with a child of their own, under mu
}

// New makes the metrics and their registry.
func New(o Options) *Metrics {
	cl := o.Labels.constLabels()
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: cl}, labels)
	}
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: cl,
			Buckets: durationBuckets(), NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160,
			NativeHistogramMinResetDuration: time.Hour}, []string{"type"})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: cl})
	}
	m := &Metrics{
		reg:        prometheus.NewRegistry(),
		offered:    counter("crowd_flood_offered_total", "Sends whose intended time was reached (sent + dropped), measured window.", "type"),
		sent:       counter("crowd_flood_sent_total", "Sends handed to a worker slot, measured window.", "type"),
		dropped:    counter("crowd_flood_dropped_total", "Sends dropped for lack of a free slot (never delayed), measured window.", "type"),
		starved:    counter("crowd_flood_starved_total", "Sends late because the signer had no request ready (the generator's bottleneck), measured window.", "type"),
		aborted:    counter("crowd_flood_aborted_total", "Sends in flight when the run was interrupted, measured window.", "type"),
		completed:  counter("crowd_flood_completed_total", "Sends answered, timed out or failed to connect, by status class, measured window.", "type", "class"),
		unanswered: counter("crowd_flood_unanswered_total", "Sends that got no answer (timeout, conn_error), by why (connection refused, TLS: ...), measured window.", "type", "reason"),
		retryAfter: counter("crowd_flood_retry_after_total", "Answers that carried a Retry-After header, measured window.", "type"),
		latency:    hist("crowd_flood_latency_seconds", "Latency from the intended send time to the end of the answer (coordinated-omission corrected), answered sends."),
		service:    hist("crowd_flood_service_seconds", "Service time from the actual send to the end of the answer, answered sends."),
		lateness:   hist("crowd_flood_lateness_seconds", "Lateness from the intended to the actual send, completed sends."),
		inflight:   gauge("crowd_flood_inflight", "Sends in flight at the latest one-second tick."),
		warmup:     gauge("crowd_flood_warmup", "1 while the run is inside its warm-up (not counted), else 0."),
		elapsed:    gauge("crowd_flood_elapsed_seconds", "Time since the run started, at the latest one-second tick."),
		rate:       gauge("crowd_flood_target_rate", "The offered rate asked for, in sends per second (the current rung of a ladder)."),
		lastTickT:  gauge("crowd_flood_last_tick_timestamp_seconds", "Unix time of the latest one-second tick: a stale value means the flood stopped."),
	}
	m.reg.MustRegister(m.offered, m.sent, m.dropped, m.starved, m.aborted, m.completed, m.unanswered, m.retryAfter,
		m.latency, m.service, m.lateness, m.inflight, m.warmup, m.elapsed, m.rate, m.lastTickT)
	if b := o.Buffer; b != nil {
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "crowd_flood_signer_buffer_ready", ConstLabels: cl,
				Help: "Signed requests ready in the signing pipeline's buffer."}, func() float64 { return float64(b.Ready()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "crowd_flood_signer_buffer_capacity", ConstLabels: cl,
				Help: "Capacity of the signing pipeline's buffer."}, func() float64 { return float64(b.Cap()) }))
	}
	return m
}

// Registry is the metrics' own registry.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the exposition (text, or protobuf with native histograms
// when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// series returns t's children, making them the first time.
func (m *Metrics) series(t string) *typeSeries {
	if s, ok := m.types.Load(t); ok {
		return s.(*typeSeries)
	}
	s := &typeSeries{
		offered: m.offered.WithLabelValues(t), sent: m.sent.WithLabelValues(t), dropped: m.dropped.WithLabelValues(t),
		starved: m.starved.WithLabelValues(t), aborted: m.aborted.WithLabelValues(t), retryAfter: m.retryAfter.WithLabelValues(t),
		latency: m.latency.WithLabelValues(t), service: m.service.WithLabelValues(t), lateness: m.lateness.WithLabelValues(t),
	}
	for c := range record.NumClasses {
		s.classes[c] = m.completed.WithLabelValues(t, c.String())
	}
	got, _ := m.types.LoadOrStore(t, s)
	return got.(*typeSeries)
}

// Begin sets the rate the run offers (flood.Collector).
func (m *Metrics) Begin(s record.Schedule) { m.SetRate(s.Rate) }

// Offered counts one offered send of the measured window (flood.Collector).
func (m *Metrics) Offered(o record.Offer) {
	if !o.Measured {
		return
	}
	s := m.series(o.Type)
	s.offered.Inc()
	if o.Starved {
		s.starved.Inc()
	}
	if o.Dropped {
		s.dropped.Inc()
	} else {
		s.sent.Inc()
	}
}

// Completed files one completed send of the measured window as the record
// does (record.Stats.Observe): latency and service of answered sends,
// lateness of every completed one (flood.Collector).
func (m *Metrics) Answered(_ int, d *record.Delivery) {
	if !d.Measured {
		return
	}
	s := m.series(d.Type)
	if d.Aborted {
		s.aborted.Inc()
		return
	}
	s.classes[d.Class].Inc()
	if !d.Class.Answered() {
		m.unansweredFor(d.Type, s, cmp.Or(d.NoAnswer, d.Class.String())).Inc()
	}
	if d.RetryAfter() {
		s.retryAfter.Inc()
	}
	s.lateness.Observe(seconds(d.Lateness()))
	if d.Class.Answered() {
		s.latency.Observe(seconds(d.Latency()))
		s.service.Observe(seconds(d.Service()))
	}
}

// unansweredFor is the counter of type t's sends that got no answer for
// reason, made the first time (s holds t's children).
func (m *Metrics) unansweredFor(t string, s *typeSeries, reason string) prometheus.Counter {
	if c, ok := s.reasons.Load(reason); ok {
		return c.(prometheus.Counter)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.reasons.Load(reason); ok {
		return c.(prometheus.Counter)
	}
	text := !record.NamedNoAnswer(reason) && reason != record.UnansweredOther
	if text && s.texts >= record.MaxUnansweredReasons {
		reason, text = record.UnansweredOther, false
		if c, ok := s.reasons.Load(reason); ok {
			return c.(prometheus.Counter)
		}
	}
	c := m.unanswered.WithLabelValues(t, reason)
	s.reasons.Store(reason, c)
	if text {
		s.texts++
	}
	return c
}

// Settled is nothing to the metrics: the answer was counted.
func (m *Metrics) Settled(any, record.Outcome) {}

// End is nothing to the metrics: the last Progress has the end.
func (m *Metrics) End(record.Stop) {}

// seconds is d in seconds at the record's microsecond resolution.
func seconds(d time.Duration) float64 { return float64(d/time.Microsecond) / 1e6 }

// Progress takes the engine's once-a-second report (record.RecorderOptions.Progress).
func (m *Metrics) Progress(p record.Progress) {
	m.inflight.Set(float64(p.Inflight))
	m.elapsed.Set(p.Elapsed.Seconds())
	if p.Warmup {
		m.warmup.Set(1)
	} else {
		m.warmup.Set(0)
	}
	m.lastTickT.Set(float64(time.Now().UnixMilli()) / 1e3)
}

// SetRate sets the offered rate asked for (each rung of a ladder).
func (m *Metrics) SetRate(r float64) { m.rate.Set(r) }

// Encode is the whole exposition in the delimited protobuf format (native
// histograms included), as Push sends it to the crowd serve.
func (m *Metrics) Encode() ([]byte, error) {
	mfs, err := m.reg.Gather()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// Classes is the measured window's status tally so far, by class key,
// summed over the activity types (classes never seen are left out).
func (m *Metrics) Classes() map[string]int64 {
	out := map[string]int64{}
	var pb dto.Metric
	m.types.Range(func(_, v any) bool {
		for c, ctr := range v.(*typeSeries).classes {
			pb.Reset()
			if ctr.Write(&pb) == nil {
				if n := int64(pb.GetCounter().GetValue()); n > 0 {
					out[record.Class(c).String()] += n
				}
			}
		}
		return true
	})
	return out
}
