package inbox

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
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

// A delivery the weather answered in the inbox's stead names the crowd
// actor whose own inbox it was posted to (the weather answers before the
// router does, so the entry finds the owner from the Host and path), and a
// filter on the origin's host finds it even when it names no actor of
// that host (a shared inbox's): watching one bad origin shows every
// delivery its weather answered.
func TestLogWeatheredNamesTheInbox(t *testing.T) {
	f := newFixture(t, false)
	body := `{"@context":"https://www.w3.org/ns/activitystreams","id":"https://sut.test/a/1","type":"Create","actor":"https://sut.test/users/ann","object":{"id":"https://sut.test/n/1","type":"Note"}}`
	for _, c := range []struct {
		name, url string
		local     string // the entry's Local
	}{
		{"a person's inbox", "https://flood1.test/users/alice/inbox", "https://flood1.test/users/alice"},
		{"with the listener's port", "https://flood1.test:8443/users/bob/inbox", "https://flood1.test/users/bob"},
		{"the shared inbox", "https://flood2.test/inbox", ""},
		{"the instance actor's", "https://flood2.test/actor/inbox", "https://flood2.test/actor"},
		{"no such actor", "https://flood1.test/users/nobody/inbox", ""},
		{"no such origin", "https://flood9.test/users/alice/inbox", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
			f.in.LogWeathered(r, "flaky:1")(http.StatusServiceUnavailable, "the origin is flaky")
			es := f.entries(Filter{})
			e := es[len(es)-1]
			if e.Local != c.local || e.Weather != "flaky:1" || e.Status != http.StatusServiceUnavailable {
				t.Errorf("entry local %q weather %q status %d; want local %q", e.Local, e.Weather, e.Status, c.local)
			}
			host := strings.Split(strings.TrimPrefix(c.url, "https://"), "/")[0]
			host = strings.Split(host, ":")[0]
			if !(Filter{Actor: host}).Match(&e) {
				t.Errorf("a filter on %s does not find the delivery to %s", host, c.url)
			}
			if c.local != "" && !(Filter{Actor: c.local}).Match(&e) {
				t.Errorf("a filter on %s does not find the delivery to its inbox", c.local)
			}
		})
	}
}

// A host filter takes an incoming delivery by where it was addressed, but
// not an outgoing one by the SUT's inbox, nor an acct by its host alone.
func TestFilterDeliveredTo(t *testing.T) {
	in := Entry{Direction: DirIn, Method: http.MethodPost, URL: "flood3.test:8443/inbox", Actor: "https://sut.test/users/ann"}
	out := Entry{Direction: DirOut, Method: http.MethodPost, URL: "https://sut.test/inbox", Local: "https://flood3.test/users/alice", To: "https://sut.test/users/ann"}
	for _, c := range []struct {
		name string
		e    *Entry
		f    Filter
		want bool
	}{
		{"the host delivered to", &in, Filter{Actor: "flood3.test"}, true},         // the shared inbox of flood3
		{"in capitals", &in, Filter{Actor: "FLOOD3.TEST"}, true},                   // host names have no case
		{"another host", &in, Filter{Actor: "flood4.test"}, false},                 // not where it went
		{"an acct of that host", &in, Filter{Actor: "alice@flood3.test"}, false},   // no actor of flood3 is named
		{"the sender's host", &in, Filter{Actor: "sut.test"}, true},                // its actor, as before
		{"outgoing, the SUT's host", &out, Filter{Actor: "sut.test"}, true},        // by its To, as before
		{"outgoing, not by URL alone", &out, Filter{Actor: "sut.test:443"}, false}, // a URL's host is an incoming entry's only
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.f.Match(c.e); got != c.want {
				t.Errorf("Match = %v, want %v", got, c.want)
			}
		})
	}
}
