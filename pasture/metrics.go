package pasture

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/crowdfed/crowd/actors"
)

// httpMetrics counts the origins' requests by origin, route and status,
// and times them by route. It lives in the pasture's own registry (no
// global one), so several pastures in one test process stay apart.
type httpMetrics struct {
	world    *actors.World
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newHTTPMetrics(reg *prometheus.Registry, world *actors.World) *httpMetrics {
	m := &httpMetrics{world: world,
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

// NewRegistry is a metrics registry with the Go runtime and process
// collectors, for Config.Registry.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (m *httpMetrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		// Unknown hosts share one label, so a scan can't grow the series.
		origin := "unknown"
		if o, ok := m.world.Origin(r.Host); ok {
			origin = o.Host
		}
		m.requests.WithLabelValues(origin, route, strconv.Itoa(sw.status)).Inc()
		m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}
