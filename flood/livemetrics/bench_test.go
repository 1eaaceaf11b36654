package livemetrics_test

import (
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/livemetrics"
	"github.com/crowdfed/crowd/flood/record"
)

// BenchmarkSend is what the live metrics add to one send: its Offered and
// its Completed, as the engine calls them (a measured 202 with its three
// timings), beside the RSA-2048 signature of about a millisecond that the
// same send costs: `go test -run '^$' -bench . ./flood/livemetrics/`.
func BenchmarkSend(b *testing.B) {
	m := livemetrics.New(livemetrics.Options{})
	o := flood.Offer{Type: "Create", Measured: true}
	c := flood.Completion{Type: "Create", Measured: true, Class: record.Class202,
		Latency: 3 * time.Millisecond, Service: 2 * time.Millisecond, Lateness: 40 * time.Microsecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Offered(o)
			m.Completed(c)
		}
	})
}
