package inbox

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowdfed/crowd/adminapi"
)

// metrics are the inbox's Prometheus series, registered on the caller's
// Registerer (never the global one).
type metrics struct {
	inbox      *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	lost       prometheus.Counter
}

// Outcomes of an outgoing delivery attempt (the "outcome" label).
const (
	outcomeDelivered = "delivered"
	outcomeRetry     = "retry"
	outcomeGaveUp    = "gave_up"
	outcomeSent      = "sent"
	outcomeFailed    = "failed"
)

func newMetrics(reg prometheus.Registerer, depth, keys func() float64) (*metrics, error) {
	m := &metrics{
		inbox: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowd_inbox_activities_total",
			Help: "Requests to the crowd's inboxes, by activity type, verdict (accepted or rejected) and answered status.",
		}, []string{"type", "verdict", "status"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowd_outgoing_deliveries_total",
			Help: "Outgoing deliveries (Accepts and manual sends) by activity type and outcome: delivered, retry, gave_up (queued), sent, failed (manual).",
		}, []string{"type", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowd_outgoing_delivery_duration_seconds",
			Help:    "Time from sending an outgoing delivery to its answer, by activity type.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"type"}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crowd_activity_log_subscriber_lost_total",
			Help: "Activity log entries dropped for slow live subscribers (crowd tail, the admin page).",
		}),
	}
	cs := []prometheus.Collector{m.inbox, m.deliveries, m.latency, m.lost,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "crowd_delivery_queue_depth",
			Help: "Deliveries waiting in the persistent queue (including those being attempted).",
		}, depth),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "crowd_key_cache_entries",
			Help: "Remote keys (and remembered failures) in the inbox's key cache.",
		}, keys),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// typeLabel keeps the type label's cardinality bounded: a sender choosing
// types freely cannot grow the series.
func typeLabel(t string) string {
	switch {
	case adminapi.IsActivityType(t):
		return t
	case t == "":
		return "unknown"
	}
	return "other"
}

func (m *metrics) observeInbox(typ string, status int) {
	verdict := VerdictAccepted
	if status >= 300 {
		verdict = VerdictRejected
	}
	m.inbox.WithLabelValues(typeLabel(typ), verdict, strconv.Itoa(status)).Inc()
}

func (m *metrics) observeDelivery(typ, outcome string, seconds float64) {
	m.deliveries.WithLabelValues(typeLabel(typ), outcome).Inc()
	if seconds >= 0 {
		m.latency.WithLabelValues(typeLabel(typ)).Observe(seconds)
	}
}
