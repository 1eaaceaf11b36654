package inbox

import (
	"encoding/json"
	"testing"
	"time"
)

// A connection, handshake or lookup the weather refused is one incoming
// entry with no request: the host alone, the condition, the reason and the
// peer when known, rejected with no status and no body, on the inbox's
// clock; it counts as a problem in the totals and is written to the journal
// in the same JSON as any entry.
func TestLogRefused(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("east", 3600))
	f := newFixture(t, false, func(c *Config) { c.Now = func() time.Time { return at } })
	for _, c := range []struct {
		name                            string
		host, condition, remote, reason string
	}{
		// a reset at accept: the peer's address is known
		{"connection", "flood3.test", "down", "127.0.0.1:50123", "connection reset: the origin is down"},
		// a lookup: the querier may not be known to the DNS
		{"lookup", "flood4.test", "nxdomain", "", "NXDOMAIN: the domain has lapsed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := f.in.Log().Totals()
			f.in.LogRefused(c.host, c.condition, c.remote, c.reason)
			es := f.entries(Filter{})
			if len(es) == 0 {
				t.Fatal("nothing logged")
			}
			e := es[len(es)-1]
			if e.Direction != DirIn || e.Method != "" || e.URL != c.host || e.Remote != c.remote || e.Weather != c.condition ||
				e.Verdict != VerdictRejected || e.Status != 0 || e.Reason != c.reason || e.Body != "" || e.BodyBytes != 0 {
				t.Errorf("entry %+v", e)
			}
			if !e.Time.Equal(at) || e.Time.Location() != time.UTC {
				t.Errorf("time %v, want the inbox's clock %v in UTC", e.Time, at)
			}
			after := f.in.Log().Totals()
			if after.In != before.In+1 || after.Problems != before.Problems+1 {
				t.Errorf("totals %+v after %+v: want one more in and one more problem", after, before)
			}
			line, ok := appendEntryJSON(nil, &e, false)
			if !ok {
				t.Fatal("the entry does not encode")
			}
			var back map[string]any
			if err := json.Unmarshal(line, &back); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if back["method"] != "" || back["url"] != c.host || back["weather"] != c.condition || back["reason"] != c.reason {
				t.Errorf("journal line %s", line)
			}
		})
	}
}

// An entry the weather refused names no actor, only its host: a filter on
// that host finds it, any other actor filter does not, and a type filter
// (it has no activity) leaves it out.
func TestFilterRefused(t *testing.T) {
	e := Entry{Direction: DirIn, URL: "flood3.test", Weather: "down", Verdict: VerdictRejected, Reason: "connection reset: the origin is down"}
	for _, c := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"its host", Filter{Actor: "flood3.test"}, true},                    // the origin the weather refused
		{"its host in capitals", Filter{Actor: "FLOOD3.test"}, true},        // host names have no case
		{"another host", Filter{Actor: "flood4.test"}, false},               // not this origin
		{"an actor of its host", Filter{Actor: "alice@flood3.test"}, false}, // no actor was named
		{"a type", Filter{Type: "Create"}, false},                           // no activity was read
		{"incoming", Filter{Direction: DirIn}, true},                        // it is an incoming attempt
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.f.Match(&e); got != c.want {
				t.Errorf("Match = %v, want %v", got, c.want)
			}
		})
	}
}
