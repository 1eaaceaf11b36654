package pasture

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/crowdfed/crowd/internal/statuswriter"
)

// httpMetrics counts the origins' requests by origin, route and status,
// and times them by route. It lives in the pasture's own registry (no
// global one), so several pastures in one test process stay apart.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// The children already made, by label values: WithLabelValues hashes
	// and looks up its labels on every call, a tenth of a cached
	// document's whole cost. Bounded: origins × routes × statuses seen.
	counters  sync.Map // requestLabels → prometheus.Counter
	observers sync.Map // route → prometheus.Observer
}

// requestLabels are the label values of one requests counter.
type requestLabels struct {
	origin, route string
	status        int
}

func newHTTPMetrics(reg *prometheus.Registry) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowd_http_requests_total",
			Help: "Requests to the crowd's origins, by origin, route pattern and status code.",
		}, []string{"origin", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowd_http_request_duration_seconds",
			Help:    "Time the crowd took to answer its origins' requests, by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

func (m *httpMetrics) counter(l requestLabels) prometheus.Counter {
	if c, ok := m.counters.Load(l); ok {
		return c.(prometheus.Counter)
	}
	c, _ := m.counters.LoadOrStore(l, m.requests.WithLabelValues(l.origin, l.route, strconv.Itoa(l.status)))
	return c.(prometheus.Counter)
}

func (m *httpMetrics) observer(route string) prometheus.Observer {
	if o, ok := m.observers.Load(route); ok {
		return o.(prometheus.Observer)
	}
	o, _ := m.observers.LoadOrStore(route, m.latency.WithLabelValues(route))
	return o.(prometheus.Observer)
}

// NewRegistry is a metrics registry with the Go runtime and process
// collectors, for Config.Registry.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func (m *httpMetrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := statuswriter.New(w)
		next.ServeHTTP(sw, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		// Unknown hosts share one label, so a scan can't grow the series.
		origin := "unknown"
		if o := originOf(r); o != nil {
			origin = o.Host
		}
		m.counter(requestLabels{origin, route, sw.Status()}).Inc()
		m.observer(route).Observe(time.Since(start).Seconds())
	})
}
