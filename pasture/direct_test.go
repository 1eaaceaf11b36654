package pasture

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/crowdfed/crowd/pasture/fetchback"
	"github.com/crowdfed/crowd/pasture/weather"
)

// The direct routes (an actor document, a WebFinger JRD) answer every request exactly as
// the mux routing it would: the same status, headers and body, counted under the same
// origin, route and status; and a request they do not take goes to the mux.
func TestDirectRoutesAnswerAsTheMux(t *testing.T) {
	world := testWorld(t)
	type server struct {
		h   *originServer
		reg *prometheus.Registry
	}
	mk := func(direct bool) server {
		reg := prometheus.NewRegistry()
		h, err := originRouter(world, world.Origin, "test", nil, newHTTPMetrics(reg, world.Origins), fetchback.New(nil), &weather.HTTP{})
		if err != nil {
			t.Fatal(err)
		}
		s := h.(*originServer)
		if !direct {
			s.actor, s.webfinger = nil, nil
		}
		return server{s, reg}
	}
	for _, c := range []struct {
		name, method, target, accept string
		direct                       bool // taken by a direct route
	}{
		// An actor's document, the GET a SUT makes to verify a signature.
		{"actor", "GET", "http://flood1.test/users/alice", "application/activity+json", true},
		// Its web page, from the same route.
		{"actor as html", "GET", "http://flood1.test/users/alice", "text/html", true},
		// ld+json answered in kind.
		{"actor as ld+json", "GET", "http://flood2.test/users/bob", `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`, true},
		// A name the origin does not have: the handler's 404.
		{"no such actor", "GET", "http://flood1.test/users/nobody", "", true},
		// A host the crowd does not serve: refused before any route.
		{"unknown host", "GET", "http://elsewhere.test/users/alice", "", true},
		// The JRD.
		{"webfinger", "GET", "http://flood1.test/.well-known/webfinger?resource=acct%3Aalice%40flood1.test", "application/jrd+json", true},
		// A malformed resource: the handler's 400.
		{"webfinger without resource", "GET", "http://flood1.test/.well-known/webfinger", "", true},
		// HEAD is not a documents' route: the mux's 405.
		{"actor HEAD", "HEAD", "http://flood1.test/users/alice", "", false},
		// A POST to the document: the mux's 405.
		{"actor POST", "POST", "http://flood1.test/users/alice", "", false},
		// An empty name: the mux's answer.
		{"empty name", "GET", "http://flood1.test/users/", "", false},
		// A deeper path: another route of the mux.
		{"outbox", "GET", "http://flood1.test/users/alice/outbox", "", false},
		// A trailing slash: the mux's 404.
		{"trailing slash", "GET", "http://flood1.test/users/alice/", "", false},
		// An escaped slash in the name: the mux routes the raw path.
		{"escaped slash", "GET", "http://flood1.test/users/al%2Fice", "", false},
		// WebFinger's path with a slash more: the mux's 404.
		{"webfinger slash", "GET", "http://flood1.test/.well-known/webfinger/", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			direct, mux := mk(true), mk(false)
			var answers [2]*httptest.ResponseRecorder
			for i, s := range []server{direct, mux} {
				r := httptest.NewRequest(c.method, c.target, nil)
				if c.accept != "" {
					r.Header.Set("Accept", c.accept)
				}
				if i == 0 {
					if took := s.h.direct(r) != http.Handler(s.h.mux); took != c.direct {
						t.Fatalf("taken by a direct route: %v, want %v", took, c.direct)
					}
				}
				answers[i] = httptest.NewRecorder()
				s.h.ServeHTTP(answers[i], r)
			}
			got, want := answers[0], answers[1]
			if got.Code != want.Code || !maps.EqualFunc(got.Header(), want.Header(), slices.Equal[[]string]) || got.Body.String() != want.Body.String() {
				t.Errorf("direct: %d %v %q\nmux:    %d %v %q", got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
			}
			if g, w := countedSeries(t, direct.reg), countedSeries(t, mux.reg); !slices.Equal(g, w) || len(w) != 1 {
				t.Errorf("counted as %v, the mux as %v", g, w)
			}
		})
	}
}

// countedSeries lists the labels of every crowd_http_requests_total series in reg.
func countedSeries(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != "crowd_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			out = append(out, labels(m))
		}
	}
	return out
}

func labels(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		b.WriteString(l.GetName() + "=" + l.GetValue() + " ")
	}
	return b.String()
}
