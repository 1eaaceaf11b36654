package pasture

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkFetchbackHandler is what counting fetch-backs adds to serving
// an actor document, handler only: no window open (one atomic load), one
// window (a run), four (runs at once), side by side in one run:
//
//	go test -run '^$' -bench BenchmarkFetchbackHandler -benchmem ./pasture/
func BenchmarkFetchbackHandler(b *testing.B) {
	p := testPasture(b, Config{Version: "bench"})
	for _, c := range []struct {
		name    string
		windows int
	}{{"none", 0}, {"one", 1}, {"four", 4}} {
		b.Run(c.name, func(b *testing.B) {
			var ids []string
			for range c.windows {
				w, err := p.Fetchbacks().Open("bench")
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, w.ID)
			}
			defer func() {
				for _, id := range ids {
					p.Fetchbacks().Close(id)
				}
			}()
			req := httptest.NewRequest(http.MethodGet, "http://flood1.test/users/alice", nil)
			req.Header.Set("Accept", "application/activity+json")
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				p.Handler().ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}
