package flood

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// BenchmarkEngine floods a null sink at fixed rates; one op is one send. It
// reports the achieved completions per second (sends/s), the share dropped
// for want of a slot, the p50 and p99 of lateness and the p99 of the
// generator's own dispatch delay, so the engine's ceiling on this machine shows as the rate
// where sends/s stops following the offered rate (compare with vegeta's
// maximum sustained rate on the same sink, e.g. `go test -bench Engine/loopback
// -benchtime 3s`). Two sinks:
//
//   - loopback-fast, loopback-nethttp: a real net/http server on 127.0.0.1
//     answering 202 at once, sent to with each client (client and server
//     share the CPU, as with vegeta against the same sink);
//   - roundtripper: no network at all, the engine's own overhead.
func BenchmarkEngine(b *testing.B) {
	for _, sink := range []string{"loopback-fast", "loopback-nethttp", "roundtripper"} {
		for _, rate := range []float64{2000, 5000, 10000, 20000, 40000} {
			b.Run(fmt.Sprintf("%s/rate=%g", sink, rate), func(b *testing.B) { benchEngine(b, sink, rate) })
		}
	}
}

func benchEngine(b *testing.B, sink string, rate float64) {
	var rt http.RoundTripper
	target := "http://sink.test/inbox"
	switch client, loopback := strings.CutPrefix(sink, "loopback-"); {
	case loopback:
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusAccepted)
		}))
		defer srv.Close()
		tr := NewClientTransport(TransportOptions{Client: Client(client), MaxInflight: 256})
		defer tr.CloseIdleConnections()
		rt, target = tr, srv.URL+"/users/alice/inbox"
	default:
		rt = rtFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 202, Body: http.NoBody, Header: http.Header{}}, nil
		})
	}
	src := newCycleSource(b, target, "Create", "Like", "Follow")
	for _, p := range src.preps {
		// The size of a real signed Create: ~1 KB body, signature headers.
		p.Body = []byte(`{"@context":"https://www.w3.org/ns/activitystreams","type":"Create","object":{"content":"` + strings.Repeat("x", 900) + `"}}`)
		p.Header.Set("Date", "Mon, 30 Nov 2026 12:00:00 GMT")
		p.Header.Set("Digest", "SHA-256="+strings.Repeat("A", 43)+"=")
		p.Header.Set("Signature", `keyId="https://flood1.test/users/alice#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest content-type",signature="`+strings.Repeat("B", 344)+`"`)
		p.Header.Set("User-Agent", "crowd/0 (+https://flood1.test/)")
	}
	b.ReportAllocs()
	b.ResetTimer()
	res, err := recorded(context.Background(), Plan{Limits: Limits{MaxSends: int64(b.N), MaxInflight: 256},
		Pacer:  mustConstant(b, rate),
		Source: src, Transport: rt,
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	c := res.Overall.Counts
	if c.Completed != res.Overall.Tally.Classes[record.Class202] {
		b.Fatalf("not all answers were 202: %+v", res.Overall.Tally)
	}
	b.ReportMetric(float64(c.Completed)/res.Elapsed.Seconds(), "sends/s")
	b.ReportMetric(100*float64(c.Dropped)/float64(max(1, c.Offered)), "drop%")
	b.ReportMetric(float64(res.Overall.Lateness.ValueAtQuantile(50)), "late-p50-µs")
	b.ReportMetric(float64(res.Overall.Lateness.ValueAtQuantile(99)), "late-p99-µs")
	b.ReportMetric(float64(res.Dispatch.ValueAtQuantile(99)), "dispatch-p99-µs")
}
