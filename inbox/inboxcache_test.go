package inbox

import (
	"testing"
	"time"
)

// TestInboxCache specifies the cache of remote actors' inboxes on an
// injected clock: an entry lives its TTL, the least recently used goes
// first when the cache is full.
func TestInboxCache(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	c := newInboxCache(2, time.Minute)
	c.put("a", "https://a.test/inbox", t0)
	c.put("b", "https://b.test/inbox", t0)
	for _, step := range []struct {
		name  string
		do    func()
		key   string
		at    time.Duration // since t0
		inbox string        // "" for a miss
	}{
		// Within its TTL: a hit (and a recent use of a).
		{"fresh", nil, "a", 59 * time.Second, "https://a.test/inbox"},
		// A third entry evicts b, the least recently used.
		{"evicted", func() { c.put("c", "https://c.test/inbox", t0) }, "b", 0, ""},
		{"kept", nil, "a", 0, "https://a.test/inbox"},
		// At the TTL: expired, to be fetched again.
		{"expired", nil, "a", time.Minute, ""},
		// A new put renews it.
		{"renewed", func() { c.put("a", "https://a.test/new-inbox", t0.Add(time.Minute)) }, "a", time.Minute, "https://a.test/new-inbox"},
	} {
		if step.do != nil {
			step.do()
		}
		got, ok := c.get(step.key, t0.Add(step.at))
		if got != step.inbox || ok != (step.inbox != "") {
			t.Errorf("%s: get(%s) = %q, %v; want %q", step.name, step.key, got, ok, step.inbox)
		}
	}
}
