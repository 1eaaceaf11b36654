package flood

import (
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// Watch sees every send as the engine files it (Plan.Watch): what live
// metrics are made of, outside the engine, as vegeta's Attack feeds any
// Metrics it is given. Both methods run on the send path (Offered on the
// dispatcher, Completed on a worker), so they must be cheap, must not
// block, and must be safe for concurrent use.
type Watch interface {
	// Offered is called once per send whose intended time was reached,
	// sent or dropped.
	Offered(Offer)
	// Completed is called once per send handed to a worker, once it is
	// answered, failed or aborted.
	Completed(Completion)
}

// Offer is one send the dispatcher offered. Type is the breakdown key
// (folded into "Other" past the engine's bound on distinct types).
// Measured is false inside the warm-up, whose sends the record keeps apart.
type Offer struct {
	Type     string
	Measured bool
	Starved  bool // late because the Source had no request ready
	Dropped  bool // no free slot: not sent
}

// Completion is what became of one send, with the timings the record
// files (record.Stats.Observe): Latency from the intended time, Service
// from the actual send, Lateness from the intended to the actual send.
// An aborted send has no class and no timings.
type Completion struct {
	Type       string
	Measured   bool
	Aborted    bool
	Class      record.Class
	RetryAfter bool
	Latency    time.Duration
	Service    time.Duration
	Lateness   time.Duration
}
