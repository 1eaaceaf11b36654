package flood

import (
	"github.com/crowdfed/crowd/flood/record"
)

// Collector is fed everything a run does, as vegeta's Attack feeds
// Metrics.Add: what records it (record.Recorder), what serves it live, and
// the sources' bookkeeping all listen here, so the engine only sends.
//
// Begin comes first, once, before any dispatcher runs (on a goroutine of
// the dispatcher's own where it has one, up to 10 000/s, else Run's); End
// last, once, on Run's goroutine after the dispatchers returned. Offered
// runs on a dispatcher, once per send whose intended time was reached
// (above 5 000/s, or 10 000/s with PriorityRealtime, several dispatchers
// may share the schedule: see Plan, so offers may come at once and
// slightly out of their intended order);
// Answered on a worker, once per send handed to it, with the worker's
// index (shard: a collector may keep one shard per worker, no lock
// shared), or on a dispatcher with its own shard (0, 1, …; the workers'
// follow: with n dispatchers, shards 0 to n + MaxInflight − 1) for an
// answer it read itself (the fast client on Linux); Settled on a worker
// or a dispatcher (or, for a request taken before the clock started and
// never due, on Run's goroutine before End), once per request taken from the Source
// (answered, aborted, dropped or left unsent), after its Answered, its
// Outcome carrying the send's Delivery (a dropped one's Offer), so that a
// collector writing every send down (the results) needs Settled alone.
// The send path calls them, so they must be cheap, must not block (on
// the dispatcher, a wait delays every send after it), and Offered,
// Answered and Settled must be safe for concurrent use. The Delivery is
// the worker's: valid only during the call.
type Collector interface {
	Begin(record.Schedule)
	Offered(record.Offer)
	Answered(shard int, d *record.Delivery)
	Settled(token any, o record.Outcome)
	End(record.Stop)
}

// Nop is a Collector that ignores everything: embed it to implement only
// the methods a collector needs.
type Nop struct{}

// Begin does nothing.
func (Nop) Begin(record.Schedule) {}

// Offered does nothing.
func (Nop) Offered(record.Offer) {}

// Answered does nothing.
func (Nop) Answered(int, *record.Delivery) {}

// Settled does nothing.
func (Nop) Settled(any, record.Outcome) {}

// End does nothing.
func (Nop) End(record.Stop) {}

// Collectors is one Collector feeding each of cs in turn (nil ones
// skipped); with a single one, that one.
func Collectors(cs ...Collector) Collector {
	var all fanout
	for _, c := range cs {
		if c != nil {
			all = append(all, c)
		}
	}
	switch len(all) {
	case 0:
		return Nop{}
	case 1:
		return all[0]
	}
	return all
}

type fanout []Collector

func (f fanout) Begin(s record.Schedule) {
	for _, c := range f {
		c.Begin(s)
	}
}

func (f fanout) Offered(o record.Offer) {
	for _, c := range f {
		c.Offered(o)
	}
}

func (f fanout) Answered(shard int, d *record.Delivery) {
	for _, c := range f {
		c.Answered(shard, d)
	}
}

func (f fanout) Settled(token any, o record.Outcome) {
	for _, c := range f {
		c.Settled(token, o)
	}
}

func (f fanout) End(s record.Stop) {
	for _, c := range f {
		c.End(s)
	}
}
