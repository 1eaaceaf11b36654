package pasture

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/pasture/fetchback"
	"github.com/crowdfed/crowd/pasture/weather"
)

// BenchmarkWeather measures what the weather costs the origins it leaves clear: the router
// with no weather middleware, with the weather clear, and with 10 % of the 20 origins in
// weather (requests to a clear one), for a document and for a delivery (unsigned: the inbox's
// route up to its 401). It reports the throughput of each over the one with none:
//
//	go test -run '^$' -bench BenchmarkWeather -count 5 ./pasture/
func BenchmarkWeather(b *testing.B) {
	world, err := actors.Open(actors.Config{Origins: 20, Actors: 1, KeyPool: 2, Domain: "flood%d.test", StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { world.Close() })
	tenth, _ := weather.ParseSpec("down=5%,flaky=5%:0.5")
	forecast, err := weather.Assign(tenth, world.Hosts(), weatherSeed)
	if err != nil {
		b.Fatal(err)
	}
	clearHost := ""
	for _, h := range world.Hosts() {
		if forecast.Condition(h).Kind == weather.Clear {
			clearHost = h
			break
		}
	}
	in := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	router := func(f *weather.Forecast, none bool) http.Handler {
		var h *weather.HTTP
		if !none {
			sky := &weather.Sky{}
			sky.Set(f)
			h = &weather.HTTP{Sky: sky}
		}
		r, err := originRouter(world, world.Origin, "bench", in, newHTTPMetrics(prometheus.NewRegistry(), world.Origins), fetchback.New(nil), h)
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	variants := []struct {
		name string
		h    http.Handler
	}{{"none", router(nil, true)}, {"clear", router(nil, false)}, {"tenth", router(forecast, false)}}
	for _, req := range []struct {
		name, method, path string
	}{
		{"document", http.MethodGet, "/users/" + world.Origins[0].Persons()[0].Name},
		{"inbox", http.MethodPost, "/inbox"},
	} {
		// The variants take turns within each iteration, so that the machine's noise
		// (other processes, frequency) weighs on all three alike.
		b.Run(req.name, func(b *testing.B) {
			var spent [3][]time.Duration
			for b.Loop() {
				for i, v := range variants {
					r := httptest.NewRequest(req.method, "https://"+clearHost+req.path, strings.NewReader(`{}`))
					rec := httptest.NewRecorder()
					start := time.Now()
					v.h.ServeHTTP(rec, r)
					spent[i] = append(spent[i], time.Since(start))
					if rec.Code != http.StatusOK && rec.Code != http.StatusUnauthorized {
						b.Fatalf("%s: status %d", v.name, rec.Code)
					}
				}
			}
			// Throughput ratios (≥ 0.95 is the bar): the median time with none over the
			// median with weather; medians, so that a GC pause lands on no one variant.
			none := median(spent[0])
			b.ReportMetric(float64(none)/float64(median(spent[1])), "clear/none")
			b.ReportMetric(float64(none)/float64(median(spent[2])), "tenth/none")
			b.ReportMetric(float64(none.Nanoseconds()), "none-median-ns")
		})
	}
}

// median is the middle of ds (which it sorts).
// median is the middle of vs (the upper one of an even count); it sorts vs.
func median[T cmp.Ordered](vs []T) T {
	slices.Sort(vs)
	return vs[len(vs)/2]
}
