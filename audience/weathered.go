package audience

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/hostorder"
)

// maxAttempts bounds the delivery attempts kept for the weather's account;
// those past it are counted (Deliveries.attemptsDropped).
const maxAttempts = 200000

// refusedTogether is how long after a refused connection or lookup of an
// origin the refusals that follow count as the same attempt: a client's one
// try can make several at once (an A and an AAAA query, a second address),
// and a retry policy waits far longer than this between tries.
const refusedTogether = 100 * time.Millisecond

// handshakeThrough is how soon after a broken certificate was served a
// request from the same client address shows that the client went on
// anyway (it does not verify certificates): the handshake was no refusal.
const handshakeThrough = 5 * time.Second

// Attempt is one delivery attempt at one of the crowd's origins, as the
// crowd's activity log has it: an inbox request (answered by the inbox or
// by the origin's weather) or a connection, handshake or lookup the
// weather refused before any request was read (ID empty).
type Attempt struct {
	Time time.Time
	// URL is where it came as the crowd's log has it: host and path
	// ("flood3.test/users/b/inbox"), or the host alone for a refusal.
	// Remote is the client's address, when known.
	URL, Remote string
	// ID and Object are the activity's and its object's ids, when a
	// request was read.
	ID, Object string
	// Status is the crowd's answer (0: none); Weather the origin's weather
	// as the crowd logged it ("" clear); Accepted that the inbox took it.
	Status   int
	Weather  string
	Accepted bool

	host, inbox string // URL's lower-case host and its path ("" for a refusal), set by Attempted
}

// Attempted keeps a delivery attempt for UnderWeather (one that the inbox
// accepted is also an arrival: pass it to Arrived too). Past maxAttempts
// it is only counted.
func (d *Deliveries) Attempted(a Attempt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.attempts) >= maxAttempts {
		d.attemptsDropped++
		return
	}
	a.host, a.inbox = splitInbox(a.URL)
	d.attempts = append(d.attempts, a)
}

// WeatherHistory is the crowd's weather over a run: what was in force at
// its start, then each change, each replacing the whole weather.
type WeatherHistory struct {
	// Start is the flood's start: the record's offsets count from it.
	Start time.Time
	// Initial is each origin's condition at the start, as a spec writes
	// it; origins not listed were clear.
	Initial map[string]string
	// Changes are the changes in force, in order.
	Changes []WeatherShift
}

// WeatherShift is a change of the whole weather at At: Origins (host →
// condition) are in weather, every other origin is clear.
type WeatherShift struct {
	At      time.Time
	Origins map[string]string
}

// HistoryOf is the weather of a run: initial was in force before it, and
// w (the record's timeline, nil for none) changed it from start on, each
// change dated when the crowd had it in force; and another hand's change
// the flood found (a, the record's ambient weather; nil for none), in its
// place in time: before a change of the timeline that replaced it, or
// after the last. The run puts initial back only after its drain, which
// the account does not reach.
func HistoryOf(start time.Time, initial map[string]string, w *record.Weather, a *record.AmbientWeather) WeatherHistory {
	h := WeatherHistory{Start: start, Initial: initial}
	shift := func(atS float64, origins []record.WeatherOrigin) {
		s := WeatherShift{At: start.Add(time.Duration(atS * float64(time.Second))), Origins: map[string]string{}}
		for _, o := range origins {
			s.Origins[strings.ToLower(o.Host)] = o.Condition
		}
		h.Changes = append(h.Changes, s)
	}
	if w != nil {
		for _, c := range w.Changes {
			if c.Error == "" {
				shift(c.InForceS(), c.Origins)
			}
		}
	}
	if a != nil && a.Changed != nil {
		shift(max(a.Changed.SinceS, 0), a.Changed.Origins)
		// The changes are read in order of time (anyAt, the phases).
		slices.SortStableFunc(h.Changes, func(x, y WeatherShift) int { return x.At.Compare(y.At) })
	}
	return h
}

// anyAt reports whether some origin was in weather at t.
func (h WeatherHistory) anyAt(t time.Time) bool {
	n := len(h.Initial)
	for _, s := range h.Changes {
		if s.At.After(t) {
			break
		}
		n = len(s.Origins)
	}
	return n > 0
}

// phaseOf says which phase the stretch from..to since the start lies in,
// as the healthy deliveries' posts are split: the clear phase when it
// ends before any weather, under the weather when some origin had weather
// at both its ends (after the first weather), and neither when it
// straddles a change into or out of all-clear.
func (h WeatherHistory) phaseOf(from, to time.Duration) (weather, ok bool) {
	first := h.firstWeather()
	switch at, until := h.Start.Add(from), h.Start.Add(to); {
	case first.IsZero() || !until.After(first):
		return false, true
	case !at.Before(first) && h.anyAt(at) && h.anyAt(until):
		return true, true
	}
	return false, false
}

// firstWeather is when some origin first had weather (the start, when
// one had it then); zero when none ever did.
func (h WeatherHistory) firstWeather() time.Time {
	if len(h.Initial) > 0 {
		return h.Start
	}
	for _, s := range h.Changes {
		if len(s.Origins) > 0 {
			return s.At
		}
	}
	return time.Time{}
}

// phase is one stretch of an origin's weather.
type phase struct {
	from      time.Time
	condition string
}

// phases are host's stretches of weather from the start on.
func (h WeatherHistory) phases(host string) []phase {
	out := []phase{{h.Start, h.Initial[host]}}
	for _, s := range h.Changes {
		if c := s.Origins[host]; c != out[len(out)-1].condition {
			out = append(out, phase{s.At, c})
		}
	}
	return out
}

// weathered is every origin that had weather during the run, sorted.
func (h WeatherHistory) weathered() []string {
	set := map[string]bool{}
	for host := range h.Initial {
		set[host] = true
	}
	for _, s := range h.Changes {
		for host := range s.Origins {
			set[host] = true
		}
	}
	return slices.SortedFunc(maps.Keys(set), hostorder.Compare)
}

// kindOf is a condition's kind, "clear" for none: "slow:30s" → "slow".
func kindOf(condition string) string {
	if condition == "" {
		return "clear"
	}
	k, _, _ := strings.Cut(condition, ":")
	return k
}

// UnderWeather is what the SUT's deliveries did in the weather h, up to end
// (the drain's end): per origin in weather, its attempts linked by
// activity, their outcomes and its recoveries; the healthy origins'
// latency under the weather beside the clear phase before it, judged
// (record.Isolate); and the attempts per second by weather. Nil when no
// origin had weather or no post was made.
func (d *Deliveries) UnderWeather(h WeatherHistory, end time.Time, timeline []record.Tick) (*record.Deliveries, error) {
	hosts := h.weathered()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(hosts) == 0 || len(d.order) == 0 {
		return nil, nil
	}
	attempts := make([]Attempt, 0, len(d.attempts))
	for _, a := range d.attempts {
		if !a.Time.Before(h.Start) && !a.Time.After(end) {
			attempts = append(attempts, a)
		}
	}
	slices.SortStableFunc(attempts, func(a, b Attempt) int { return a.Time.Compare(b.Time) })
	attempts = groupRefused(dropHandshakesGoneThrough(attempts))
	byHost := map[string][]Attempt{}
	for _, a := range attempts {
		byHost[a.host] = append(byHost[a.host], a)
	}
	out := &record.Deliveries{Origins: []record.OriginDeliveries{}, AttemptsDropped: d.attemptsDropped, StreamLost: d.lost}
	for _, host := range hosts {
		out.Origins = append(out.Origins, d.originUnder(h, host, byHost[host], end))
	}
	healthy, err := d.healthy(h, hosts, end)
	if err != nil {
		return nil, err
	}
	healthy.Answers = record.AnswersOf(timeline, h.phaseOf)
	out.Healthy = healthy
	out.Isolation = record.Isolate(healthy)
	out.Attempts = attemptTicks(h.Start, end, attempts)
	return out, nil
}

// groupRefused drops the refused entries (no request read) that follow one
// of the same origin within refusedTogether of it: one attempt each. The
// window counts from the attempt's first entry, so a stream of refusals
// does not merge into one. attempts are sorted by time.
func groupRefused(attempts []Attempt) []Attempt {
	first := map[string]time.Time{}
	out := attempts[:0:0]
	for _, a := range attempts {
		if a.ID == "" {
			if t, ok := first[a.host]; ok && a.Time.Sub(t) < refusedTogether {
				continue
			}
			first[a.host] = a.Time
		}
		out = append(out, a)
	}
	return out
}

// dropHandshakesGoneThrough drops a broken certificate's entry when the
// same client address then sent a request to that origin: a client that
// does not verify certificates went on, and its request is the attempt.
func dropHandshakesGoneThrough(attempts []Attempt) []Attempt {
	out := attempts[:0:0]
	for i, a := range attempts {
		if a.ID == "" && a.Remote != "" && strings.HasPrefix(a.Weather, "tls-") && wentThrough(attempts[i+1:], a) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// wentThrough reports whether a request from a's client to a's origin
// follows it within handshakeThrough (later is sorted after).
func wentThrough(later []Attempt, a Attempt) bool {
	for _, b := range later {
		if b.Time.Sub(a.Time) > handshakeThrough {
			return false
		}
		if b.ID != "" && b.host == a.host && b.Remote == a.Remote {
			return true
		}
	}
	return false
}

// owedTo is the posts owed to host (an expected follower lives there), in
// the order they were posted.
func (d *Deliveries) owedTo(host string) []*post {
	var out []*post
	for _, p := range d.order {
		for _, f := range p.expected {
			if f.host() == host {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// postOf is the post an attempt's activity delivers, nil if none.
func (d *Deliveries) postOf(a Attempt) *post {
	if p := d.posts[a.Object]; p != nil {
		return p
	}
	return d.posts[strings.TrimSuffix(a.ID, "/activity")]
}

// seconds is d in seconds, rounded to the millisecond.
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }
