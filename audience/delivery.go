package audience

import (
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// maxPendingArrivals bounds the arrivals kept for posts not known yet.
const maxPendingArrivals = 100000

// Arrival is one activity that reached one of the crowd's inboxes: an
// entry of the crowd's activity log.
type Arrival struct {
	Time   time.Time // when the request arrived
	Inbox  string    // the inbox, "flood3.test/users/alice/inbox" or "https://flood3.test/inbox"
	ID     string    // the activity's id
	Object string    // its object's id: the note's, for a Create
}

// post is one status a persona posted, owed to the crowd actors that
// follow the persona.
type post struct {
	persona  string
	uri      string
	created  time.Time // created_at: the SUT's clock
	posted   time.Time // when the client API answered: this machine's clock
	expected []CrowdActor
	reached  map[string]time.Time // crowd actor id → first arrival
}

// Deliveries follows the statuses the personas post during the run to the
// crowd's inboxes: the SUT owes each to every crowd actor that follows its
// author, at that actor's inbox or its origin's shared inbox. Methods are
// safe for concurrent use.
type Deliveries struct {
	mu        sync.Mutex
	followers map[string][]CrowdActor
	posts     map[string]*post
	order     []*post
	pending   map[string][]Arrival // by object id: arrivals that came before the post was known
	npending  int
	failed    int64
	lost      uint64
	attempts  []Attempt // every attempt seen, for UnderWeather
	// attemptsDropped counts attempts past maxAttempts, not kept.
	attemptsDropped int
}

// NewDeliveries expects each persona's posts at the crowd actors that
// follow it (followers: persona → crowd actors whose follow the SUT
// accepted).
func NewDeliveries(followers map[string][]CrowdActor) *Deliveries {
	d := &Deliveries{followers: map[string][]CrowdActor{}, posts: map[string]*post{}, pending: map[string][]Arrival{}}
	for p, list := range followers {
		d.followers[p] = append([]CrowdActor(nil), list...)
	}
	return d
}

// Posted records a status persona posted (as the client API answered it),
// now. Arrivals of it that came first (a SUT may deliver before it answers
// the POST) are matched now.
func (d *Deliveries) Posted(persona string, s Status) { d.PostedAt(persona, s, time.Now()) }

// PostedAt is Posted with the time the client API answered, on the clock
// of the crowd's log (the weather's account compares the two; the SUT's
// created_at may run on another).
func (d *Deliveries) PostedAt(persona string, s Status, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.posts[s.URI]; dup || s.URI == "" {
		return
	}
	p := &post{persona: persona, uri: s.URI, created: s.CreatedAt, posted: at, expected: d.followers[persona], reached: map[string]time.Time{}}
	d.posts[s.URI] = p
	d.order = append(d.order, p)
	for _, k := range []string{s.URI, s.URI + "/activity"} {
		for _, a := range d.pending[k] {
			d.match(p, a)
		}
		d.npending -= len(d.pending[k])
		delete(d.pending, k)
	}
}

// PostFailed counts a post the client API refused.
func (d *Deliveries) PostFailed() {
	d.mu.Lock()
	d.failed++
	d.mu.Unlock()
}

// Lost counts log entries the crowd dropped before this reader saw them
// (the stream's "lost" events): arrivals that may be missing.
func (d *Deliveries) Lost(n uint64) {
	d.mu.Lock()
	d.lost += n
	d.mu.Unlock()
}

// Arrived records an activity that reached a crowd inbox. One of a post
// (its object is the post's uri, or its id the uri + "/activity", as
// Mastodon names a Create) reaches each expected follower whose inbox, or
// whose origin's shared inbox, it arrived at.
func (d *Deliveries) Arrived(a Arrival) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.posts[a.Object]
	if p == nil {
		p = d.posts[strings.TrimSuffix(a.ID, "/activity")]
	}
	if p != nil {
		d.match(p, a)
		return
	}
	if d.npending >= maxPendingArrivals {
		return
	}
	k := a.Object
	if k == "" {
		k = a.ID
	}
	d.pending[k] = append(d.pending[k], a)
	d.npending++
}

// match marks the followers of p that arrival a reached.
func (d *Deliveries) match(p *post, a Arrival) {
	host, path := splitInbox(a.Inbox)
	for _, f := range p.expected {
		if _, done := p.reached[f.ID]; done || f.host() != host {
			continue
		}
		u, err := url.Parse(f.ID)
		if err != nil {
			continue
		}
		if path == "/inbox" || path == strings.TrimSuffix(u.Path, "/")+"/inbox" {
			p.reached[f.ID] = a.Time
		}
	}
}

// splitInbox splits an inbox URL, with or without its scheme, into its
// lower-case host (no port) and its path.
func splitInbox(s string) (host, path string) {
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", ""
	}
	return strings.ToLower(u.Hostname()), u.Path
}

// Outstanding is the number of (post, follower) deliveries not seen yet.
func (d *Deliveries) Outstanding() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, p := range d.order {
		n += len(p.expected) - len(p.reached)
	}
	return n
}

// DeliveryStats sum up the deliveries of the personas' posts.
type DeliveryStats struct {
	// Posts the personas made during the run; PostErrors the client API
	// refused.
	Posts      int64 `json:"posts"`
	PostErrors int64 `json:"post_errors"`
	// Expected (post, following crowd actor) pairs, and how many of them
	// the post reached by the end of the run.
	Expected     int64   `json:"expected"`
	Reached      int64   `json:"reached"`
	Completeness float64 `json:"completeness"` // Reached / Expected; 1 when nothing was expected
	// Latency from the status's created_at (the SUT's clock) to its arrival
	// in the crowd's inbox (the crowd's), in µs.
	Latency record.HistRecord `json:"latency"`
	// StreamLost counts activity-log entries the crowd dropped before the
	// audience read them: when it is not 0, arrivals may be missing.
	StreamLost uint64 `json:"stream_lost"`
}

// Summary sums up the deliveries.
func (d *Deliveries) Summary() DeliveryStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := DeliveryStats{PostErrors: d.failed, StreamLost: d.lost, Completeness: 1}
	h := record.NewHist()
	for _, p := range d.order {
		st.Posts++
		st.Expected += int64(len(p.expected))
		for _, at := range p.reached {
			st.Reached++
			record.RecordDuration(h, at.Sub(p.created))
		}
	}
	if st.Expected > 0 {
		st.Completeness = float64(st.Reached) / float64(st.Expected)
	}
	st.Latency = keptHist(h)
	return st
}
