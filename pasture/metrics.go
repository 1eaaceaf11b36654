package pasture

import (
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/crowdfed/crowd/actors"
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
	// The world's origins have a table each, found by pointer in a map
	// made once and only read: a sync.Map keyed by all three labels
	// hashed them through an interface on every request.
	byOrigin map[*actors.Origin]*originSeries
	others   sync.Map // requestLabels → *requestSeries: unknown hosts, origins outside the world
}

// originSeries are one origin's children by route and status. A route or
// status is new to an origin a few times in its life and read on every
// request, so the map is replaced, never written, and read without a lock.
type originSeries struct {
	grow   sync.Mutex // one replacement at a time
	routes atomic.Pointer[map[routeStatus]*requestSeries]
}

// routeStatus are the labels of a request beside its origin.
type routeStatus struct {
	route  string
	status int
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

// newHTTPMetrics registers the metrics in reg, with a table for each of
// origins.
func newHTTPMetrics(reg *prometheus.Registry, origins []*actors.Origin) *httpMetrics {
	m := &httpMetrics{
		byOrigin: make(map[*actors.Origin]*originSeries, len(origins)),
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
	for _, o := range origins {
		m.byOrigin[o] = &originSeries{}
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// seriesOf is the children a request to origin o (nil: a host the crowd
// doesn't serve) on route with status counts in.
func (m *httpMetrics) seriesOf(o *actors.Origin, route string, status int) *requestSeries {
	if t, ok := m.byOrigin[o]; ok {
		k := routeStatus{route, status}
		if routes := t.routes.Load(); routes != nil {
			if s, ok := (*routes)[k]; ok {
				return s
			}
		}
		return t.add(k, func() *requestSeries { return m.newSeries(requestLabels{o.Host, route, status}) })
	}
	// Unknown hosts share one label, so a scan can't grow the series.
	l := requestLabels{"unknown", route, status}
	if o != nil {
		l.origin = o.Host
	}
	if s, ok := m.others.Load(l); ok {
		return s.(*requestSeries)
	}
	s, _ := m.others.LoadOrStore(l, m.newSeries(l))
	return s.(*requestSeries)
}

// newSeries makes the children of labels l.
func (m *httpMetrics) newSeries(l requestLabels) *requestSeries {
	return &requestSeries{
		requests: m.requests.WithLabelValues(l.origin, l.route, strconv.Itoa(l.status)),
		latency:  m.latency.WithLabelValues(l.route),
	}
}

// add puts the children of k in t, made by create unless another request
// put them first, and returns them.
func (t *originSeries) add(k routeStatus, create func() *requestSeries) *requestSeries {
	t.grow.Lock()
	defer t.grow.Unlock()
	old := t.routes.Load()
	next := map[routeStatus]*requestSeries{}
	if old != nil {
		if s, ok := (*old)[k]; ok {
			return s
		}
		next = maps.Clone(*old)
	}
	s := create()
	next[k] = s
	t.routes.Store(&next)
	return s
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
		// The pattern the router set on the request (chi and the direct routes alike), or, for a
		// request a middleware copied before the router saw it, the routing context's.
		route := r.Pattern
		if route == "" {
			if rc := chi.RouteContext(r.Context()); rc != nil {
				route = rc.RoutePattern()
			}
		}
		if route == "" {
			route = "unmatched"
		}
		s := m.seriesOf(originOf(r), route, sw.Status())
		s.requests.Inc()
		s.latency.Observe(time.Since(start).Seconds())
	})
}
