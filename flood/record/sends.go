// What the engine tells a collector of a run (flood.Collector): the run's
// schedule, each send offered, each answer, each settlement, and the end.
// The types live here, beside what records them, so that the record need
// not import the engine; the engine imports them.

package record

import (
	"net/url"
	"time"
)

// Schedule is the run as planned, told once before the first send
// (flood.Collector.Begin). Times in the other values are offsets from Start.
type Schedule struct {
	Start       time.Time     // the clock's zero: the first request was ready
	Rate        float64       // the pacer's mean rate, sends per second
	Duration    time.Duration // the schedule's length, warm-up included (0 = bounded by MaxSends)
	Warmup      time.Duration // the unmeasured start of the schedule
	MaxSends    int64         // 0 = bounded by Duration
	MaxInflight int           // worker slots
	Timeout     time.Duration // bound of one send
	Total       time.Duration // the expected length: Duration, or MaxSends at Rate if shorter
	Dispatcher  Dispatcher    // how the dispatcher's thread ran the schedule
}

// Offer is one send whose intended time was reached: sent or dropped
// (flood.Collector.Offered). Type is the breakdown key, folded into
// "Other" past the engine's bound on distinct types.
type Offer struct {
	Type     string
	Due      time.Duration // the intended time
	Measured bool          // false inside the warm-up, whose sends the record keeps apart
	Starved  bool          // late because the Source had no request ready
	Dropped  bool          // no free slot: not sent
	// Written: the dispatcher wrote the request itself (or tried to: a
	// failed write ends the send as a connection error), on a resting
	// connection, before handing it to a worker to read the answer (or
	// reading it itself, whole: no hand-off); its lateness ends at the
	// write, and a hand-off is in its service time.
	Written bool
}

// Delivery is one send, as it ended: answered, failed or aborted
// (flood.Collector.Answered), by a worker or by the dispatcher. Times are
// offsets from the start.
type Delivery struct {
	Type     string // as in its Offer
	Measured bool
	Starved  bool // as in its Offer: late because the Source had no request ready
	Written  bool // as in its Offer: the dispatcher wrote the request (or tried to)
	Method   string
	URL      *url.URL // the target; shared, read-only
	Intended time.Duration
	Picked   time.Duration // a worker took the send (before the round trip, or before reading the answer to the request the dispatcher wrote); the write, where the dispatcher read that answer too
	Actual   time.Duration // the request got its connection, or the dispatcher took one to write it (or Picked)
	Done     time.Duration // answer drained, or the error
	// Aborted: the run was interrupted before the answer; such a send
	// has no class, status or timings worth keeping.
	Aborted   bool
	Class     Class           // status class, ClassTimeout or ClassConnError
	Status    int             // the answer's status code, 0 without one
	RateLimit RateLimitSample // what the answer said of the SUT's rate limit
	Attempts  int             // requests sent for it: 2 when the first was refused and a fallback sent
	SentBytes int64           // request body bytes, per attempt
	GotBytes  int64           // answer body bytes read (the last attempt's)
	// NoAnswer names why a send of ClassTimeout or ClassConnError got no
	// answer, in words that do not vary from send to send (no address, no
	// port): "connection refused", "TLS: ...". "" otherwise.
	NoAnswer string
}

// Latency is from the intended time to the answer.
func (d *Delivery) Latency() time.Duration { return d.Done - d.Intended }

// Service is from the actual send to the answer.
func (d *Delivery) Service() time.Duration { return d.Done - d.Actual }

// Lateness is from the intended time to the actual send.
func (d *Delivery) Lateness() time.Duration { return d.Actual - d.Intended }

// RetryAfter reports whether the answer carried Retry-After.
func (d *Delivery) RetryAfter() bool { return d.RateLimit.Said&SaidRetryAfter != 0 }

// Outcome is what became of one request the engine took from its Source
// (flood.Collector.Settled): how a source's bookkeeping learns what was
// SENT, not what it drafted.
type Outcome struct {
	// Sent: handed to the transport. False for a send dropped (no free
	// slot) and for one the run ended before it was due.
	Sent bool
	// Aborted: sent, but the run was interrupted before the answer; the
	// target may or may not have it.
	Aborted bool
	// Class is the answer's status class (or ClassTimeout,
	// ClassConnError) of a send neither unsent nor aborted.
	Class Class
	// Status is the answer's status code; 0 without an answer.
	Status int
	// Delivery is the send as Answered heard it, nil when not sent: what a
	// collector that writes every send down (flood/record/results) needs
	// beside the token. The worker's, valid only during the call.
	Delivery *Delivery
	// Offer is the send dropped for want of a slot, as Offered heard it
	// (its Dropped set); the zero Offer for a send handed to a worker or
	// never due. A value, so that a drop, which comes when the dispatcher
	// is busiest, allocates nothing.
	Offer Offer
}

// Stop is how the run ended (flood.Collector.End), after its last
// settlement.
type Stop struct {
	End       time.Time     // every send finished
	WindowEnd time.Duration // the schedule's end as run (see Window.ScheduleEnd)
	Partial   bool          // stopped before the schedule ended
	Reason    StopReason    // why it is partial
	Err       error         // the Source's error, if that stopped it
}
