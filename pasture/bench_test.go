package pasture

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/discardwriter"
)

// BenchmarkServe measures requests/s through a real loopback listener for
// the documents SUTs fetch most, beside a bare net/http handler that
// answers a fixed body: the ceiling of this machine's HTTP stack. Run the
// three side by side (bench/documents prints their ratios):
//
//	go test -run '^$' -bench BenchmarkServe -count 3 ./pasture/
func BenchmarkServe(b *testing.B) {
	p := testPasture(b, Config{Version: "bench"})
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/activity+json")
		w.Write([]byte(`{"id":"https://flood1.test/users/alice","type":"Person"}`))
	})
	for _, c := range []struct {
		name    string
		handler http.Handler
		path    string
	}{
		{"bare", bare, "/users/alice"},
		{"actor", p.Handler(), "/users/alice"},
		{"webfinger", p.Handler(), "/.well-known/webfinger?resource=acct:alice@flood1.test"},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			b.SetParallelism(8)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodGet, srv.URL+c.path, nil)
					req.Host = "flood1.test"
					req.Header.Set("Accept", "application/activity+json")
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}

// BenchmarkHandlerOnly is the handlers' own cost per request, no network:
// what the router, the middleware and the handler add to a bare handler
// answering the same bytes.
//
//	go test -run '^$' -bench BenchmarkHandlerOnly -benchmem ./pasture/
func BenchmarkHandlerOnly(b *testing.B) {
	p := testPasture(b, Config{Version: "bench"})
	h := p.Handler()
	for _, c := range []struct {
		name, path string
		handler    http.Handler
	}{
		{"bare", "/users/alice", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/activity+json")
			w.Write([]byte(`{"id":"https://flood1.test/users/alice","type":"Person"}`))
		})},
		{"actor", "/users/alice", h},
		{"webfinger", "/.well-known/webfinger?resource=acct:alice@flood1.test", h},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "http://flood1.test"+c.path, nil)
			req.Header.Set("Accept", "application/activity+json")
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				c.handler.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkDocumentGET is what the router adds to the two GETs the bench's
// documents section compares with a bare handler (an actor document, a
// WebFinger JRD): the same requests through Handler and through a bare
// handler answering the same bytes from a map, with a reused
// ResponseWriter, so allocs/op is the router's own. Compare the rows'
// ns/op side by side:
//
//	go test -run '^$' -bench BenchmarkDocumentGET -benchmem -count 5 ./pasture/
func BenchmarkDocumentGET(b *testing.B) {
	p := testPasture(b, Config{Version: "bench"})
	h := p.Handler()
	for _, c := range []struct {
		name, target, accept string
	}{
		{"actor", "http://flood1.test/users/alice", "application/activity+json"},
		{"webfinger", "http://flood1.test/.well-known/webfinger?resource=acct%3Aalice%40flood1.test", "application/jrd+json"},
	} {
		req := httptest.NewRequest(http.MethodGet, c.target, nil)
		req.Header.Set("Accept", c.accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", c.target, rec.Code)
		}
		bare := cannedAnswers{req.Host + req.URL.RequestURI(): {rec.Header().Get("Content-Type"), rec.Body.Bytes()}}
		for _, s := range []struct {
			name    string
			handler http.Handler
		}{{"bare", bare}, {"pasture", h}} {
			b.Run(c.name+"/"+s.name, func(b *testing.B) {
				w := discardwriter.New()
				b.ReportAllocs()
				for b.Loop() {
					w.Reset()
					s.handler.ServeHTTP(w, req)
					if w.Status() != http.StatusOK {
						b.Fatalf("status %d", w.Status())
					}
				}
			})
		}
	}
}

// cannedAnswers is the bench's bare handler: the same bytes, by the
// request's host and URI, from a map.
type cannedAnswers map[string]struct {
	contentType string
	body        []byte
}

func (c cannedAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a, ok := c[r.Host+r.URL.RequestURI()]; ok {
		w.Header().Set("Content-Type", a.contentType)
		w.Write(a.body)
		return
	}
	http.NotFound(w, r)
}
