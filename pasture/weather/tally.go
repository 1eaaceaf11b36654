package weather

import (
	"maps"
	"sync/atomic"
)

// Answer is a kind of thing the weather answered in an origin's stead, as
// Sky.Count tallies it.
type Answer uint8

// The answers the weather gives, from the wire up.
const (
	// Lookup is a DNS query answered NXDOMAIN for a lapsed domain.
	Lookup Answer = iota
	// Connection is a TCP connection reset by a down origin's listener.
	Connection
	// Handshake is a TLS handshake refused (down) or served a broken
	// certificate (tls-expired, tls-wrong-name).
	Handshake
	// Delivery is a POST to an inbox answered, held or reset by the
	// weather.
	Delivery
	// Document is any other request (an actor, a key, WebFinger…)
	// answered, held or reset by the weather.
	Document

	answers // how many there are
)

// Answered is what the weather answered for one origin since the sky was
// made.
type Answered struct {
	Lookups, Connections, Handshakes, Deliveries, Documents int64
}

// tally is one origin's counters: one atomic add per answer, no lock.
type tally [answers]atomic.Int64

// tallies is the counters of every origin that has had weather. A Set
// replaces the map with a larger copy (the counters themselves are shared),
// so a reader loads it without a lock and counts go on across changes.
type tallies = map[string]*tally

// grow makes room, under s.mu, for f's origins before f is put in force, so
// that whoever reads f finds its origins' counters.
func (s *Sky) grow(f *Forecast) {
	old := s.tally.Load()
	var missing bool
	for h := range f.byHost {
		if old == nil || (*old)[h] == nil {
			missing = true
			break
		}
	}
	if !missing {
		return
	}
	m := make(tallies, len(f.byHost))
	if old != nil {
		maps.Copy(m, *old)
	}
	for h := range f.byHost {
		if m[h] == nil {
			m[h] = new(tally)
		}
	}
	s.tally.Store(&m)
}

// Count tallies one answer the weather gave for host. A host that never had
// weather is not counted: only the weather's own answers call Count, and
// they come from a forecast whose origins Set made room for.
func (s *Sky) Count(host string, a Answer) {
	if s == nil || a >= answers {
		return
	}
	if m := s.tally.Load(); m != nil {
		if t := (*m)[host]; t != nil {
			t[a].Add(1)
		}
	}
}

// Answered is, for each origin that has had weather since the sky was made
// (whatever its weather now), what the weather answered in its stead.
func (s *Sky) Answered() map[string]Answered {
	out := map[string]Answered{}
	if s == nil {
		return out
	}
	m := s.tally.Load()
	if m == nil {
		return out
	}
	for h, t := range *m {
		out[h] = Answered{Lookups: t[Lookup].Load(), Connections: t[Connection].Load(),
			Handshakes: t[Handshake].Load(), Deliveries: t[Delivery].Load(), Documents: t[Document].Load()}
	}
	return out
}
