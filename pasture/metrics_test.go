package pasture

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/crowdfed/crowd/actors"
)

// TestRequestSeriesLabels: a request counts under its origin's host (or
// "unknown" for a host the crowd doesn't serve), its route and its status,
// and the same labels find the same children every time.
func TestRequestSeriesLabels(t *testing.T) {
	world := testWorld(t)
	m := newHTTPMetrics(prometheus.NewRegistry(), world.Origins)
	outside := &actors.Origin{Host: "outside.test"} // a lookup may find an origin the world doesn't list
	for _, c := range []struct {
		name   string
		origin *actors.Origin
		route  string
		status int
		labels []string // origin, route, status
	}{
		// An origin of the world, by its table.
		{"world origin", world.Origins[1], "/users/{name}", 200, []string{"flood2.test", "/users/{name}", "200"}},
		// Another status of the same route is another series.
		{"another status", world.Origins[1], "/users/{name}", 404, []string{"flood2.test", "/users/{name}", "404"}},
		// A host the crowd doesn't serve shares one label.
		{"unknown host", nil, "unmatched", 404, []string{"unknown", "unmatched", "404"}},
		// An origin outside the world still counts under its host.
		{"origin outside the world", outside, "/.well-known/webfinger", 200, []string{"outside.test", "/.well-known/webfinger", "200"}},
	} {
		s := m.seriesOf(c.origin, c.route, c.status)
		if again := m.seriesOf(c.origin, c.route, c.status); again != s {
			t.Errorf("%s: the same labels found other children", c.name)
		}
		s.requests.Inc()
		var got dto.Metric
		if err := m.requests.WithLabelValues(c.labels...).Write(&got); err != nil {
			t.Fatal(err)
		}
		if got.GetCounter().GetValue() != 1 {
			t.Errorf("%s: requests%v = %v, want 1", c.name, c.labels, got.GetCounter().GetValue())
		}
	}
}
