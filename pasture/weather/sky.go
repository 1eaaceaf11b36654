package weather

import (
	"sync"
	"sync/atomic"
)

// Sky is the weather in force, changed at run time without a restart. Its
// readers (every request, DNS answer and TLS handshake) pay one atomic
// load when the weather is clear. It also counts, by origin, what the
// weather answered (Count, Answered). The zero Sky is clear; a nil *Sky is
// always clear.
type Sky struct {
	now   atomic.Pointer[Forecast]
	tally atomic.Pointer[tallies] // what the weather answered, by origin

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each change
}

// Now is the forecast in force; nil when the weather is clear.
func (s *Sky) Now() *Forecast {
	if s == nil {
		return nil
	}
	return s.now.Load()
}

// Condition is the weather of the origin host now.
func (s *Sky) Condition(host string) Condition { return s.Now().Condition(host) }

// Set puts f in force (nil or a clear forecast clears the weather), and
// wakes everything waiting on Changed.
func (s *Sky) Set(f *Forecast) {
	if f != nil && len(f.byHost) == 0 {
		f = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f != nil {
		s.grow(f) // before f is seen: its answers find their counters
	}
	s.now.Store(f)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// Changed is closed at the next Set: a held connection (a black hole, a
// slow answer) waits on it so that clearing the weather frees it at once.
func (s *Sky) Changed() <-chan struct{} {
	if s == nil {
		return nil // a nil sky never changes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}
