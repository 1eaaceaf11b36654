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
	series sync.Map // requestLabels → *requestSeries
}

// requestSeries are the children one request counts in: its requests
// counter and its route's latency histogram, found in one lookup.
type requestSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
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

// seriesOf is the children a request with labels l counts in.
func (m *httpMetrics) seriesOf(l requestLabels) *requestSeries {
	if s, ok := m.series.Load(l); ok {
		return s.(*requestSeries)
	}
	s, _ := m.series.LoadOrStore(l, &requestSeries{
		requests: m.requests.WithLabelValues(l.origin, l.route, strconv.Itoa(l.status)),
		latency:  m.latency.WithLabelValues(l.route),
	})
	return s.(*requestSeries)
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
		if rc := chi.RouteContext(r.Context()); rc != nil {
			if p := rc.RoutePattern(); p != "" {
				route = p
			}
		}
		// Unknown hosts share one label, so a scan can't grow the series.
		origin := "unknown"
		if o := originOf(r); o != nil {
			origin = o.Host
		}
		s := m.seriesOf(requestLabels{origin, route, sw.Status()})
		s.requests.Inc()
		s.latency.Observe(time.Since(start).Seconds())
	})
}
