package livemetrics_test

import (
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/livemetrics"
	"github.com/crowdfed/crowd/flood/record"
)

// BenchmarkSend is what the live metrics add to one send: its Offered and
// its Answered, as the engine calls them (a measured 202 with its three
// timings), beside the RSA-2048 signature of about a millisecond that the
// same send costs: `go test -run '^$' -bench . ./flood/livemetrics/`.
func BenchmarkSend(b *testing.B) {
	m := livemetrics.New(livemetrics.Options{})
	o := record.Offer{Type: "Create", Measured: true}
	d := &record.Delivery{Type: "Create", Measured: true, Class: record.Class202,
		Intended: 0, Actual: 40 * time.Microsecond, Done: 3 * time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Offered(o)
			m.Answered(0, d)
		}
	})
}
