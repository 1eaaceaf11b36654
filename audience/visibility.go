package audience

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// noteKey names a note in one persona's home.
type noteKey struct{ persona, uri string }

// sentNote is a Create the crowd sent to a persona that follows its sender.
type sentNote struct {
	persona, uri, sender string
	sent                 time.Time
	status               int // the SUT's answer; 0 until answered (or with no answer)
	answered             bool
}

// accepted reports whether the SUT took the Create (2xx): then its note is
// owed to the persona's home.
func (n *sentNote) accepted() bool { return n.status >= 200 && n.status <= 299 }

// Visibility matches the Creates the crowd sends with what the personas'
// home timelines show. A Create's note is owed to the home of every persona
// that follows its sender (the persona it mentions or another: a server
// puts a followed account's post in every local follower's home, whichever
// inbox it came to); it is matched by URI (the note's id, a Status's uri).
// Methods are safe for concurrent use: the flood's workers call Sent and
// Answered, the probes call Seen.
type Visibility struct {
	mu          sync.Mutex
	readers     map[string][]string // crowd actor id → the personas that follow it
	notes       map[noteKey]*sentNote
	byURI       map[string][]*sentNote
	order       []*sentNote
	seen        map[noteKey]time.Time // first appearance of every status in every home: the probe's answer
	asked       map[noteKey]time.Time // when that probe was asked
	buried      map[noteKey]time.Time // owed notes never seen by a probe, found deeper by the sweep, and when
	outstanding int                   // accepted notes not seen yet
}

// NewVisibility tracks the personas of follows (persona, the name the
// probes report under → the crowd actor ids it follows; only follows the
// SUT accepted belong here).
func NewVisibility(follows map[string][]string) *Visibility {
	v := &Visibility{readers: map[string][]string{}, notes: map[noteKey]*sentNote{},
		byURI: map[string][]*sentNote{}, seen: map[noteKey]time.Time{}, asked: map[noteKey]time.Time{},
		buried: map[noteKey]time.Time{}}
	for _, p := range slices.Sorted(maps.Keys(follows)) {
		for _, id := range follows[p] {
			if !slices.Contains(v.readers[id], p) {
				v.readers[id] = append(v.readers[id], p)
			}
		}
	}
	return v
}

// Sent records a Create of note uri from sender, sent at at, as owed to
// the home of every tracked persona that follows sender, and returns how
// many those are (0: the note is owed to no home, nothing is recorded). A
// note sent twice keeps its first send.
func (v *Visibility) Sent(sender, uri string, at time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	readers := v.readers[sender]
	for _, p := range readers {
		k := noteKey{p, uri}
		if _, dup := v.notes[k]; dup {
			continue
		}
		n := &sentNote{persona: p, uri: uri, sender: sender, sent: at}
		v.notes[k] = n
		v.byURI[uri] = append(v.byURI[uri], n)
		v.order = append(v.order, n)
	}
	return len(readers)
}

// Answered records the SUT's answer to the Create of uri (0: no answer, a
// timeout or a failed connection). An accepted note stays accepted; a later
// answer replaces a refusal, as the flood's tally counts the last attempt
// of a send: with --signature both, a 401 to the first signature and a 202
// to the fallback is a note accepted, and owed.
func (v *Visibility) Answered(uri string, status int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, n := range v.byURI[uri] {
		if n.answered && n.accepted() {
			continue
		}
		n.answered, n.status = true, status
		if _, seen := v.seen[noteKey{n.persona, n.uri}]; n.accepted() && !seen {
			v.outstanding++
		}
	}
}

// Seen records that status uri is in persona's home in the answer to a
// probe asked at asked that arrived at at. It returns true the first time
// persona saw uri.
func (v *Visibility) Seen(persona, uri string, asked, at time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := noteKey{persona, uri}
	if _, ok := v.seen[k]; ok {
		return false
	}
	v.seen[k] = at
	v.asked[k] = asked
	if n := v.notes[k]; n != nil && n.answered && n.accepted() {
		v.outstanding--
	}
	return true
}

// Buried records that the sweep found uri in persona's home at at, below
// the newest page the probes read. It counts only for a note owed to that
// home, accepted and never seen by a probe (a probe's sighting stands),
// and reports whether it counted. A buried note is in the home, but when
// it got there is not known.
func (v *Visibility) Buried(persona, uri string, at time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := noteKey{persona, uri}
	n := v.notes[k]
	if n == nil || !n.answered || !n.accepted() {
		return false
	}
	if _, ok := v.seen[k]; ok {
		return false
	}
	if _, ok := v.buried[k]; ok {
		return false
	}
	v.buried[k] = at
	return true
}

// Unseen is, per persona, the accepted notes owed to its home that no probe
// has seen and the sweep has not found.
func (v *Visibility) Unseen() map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := map[string]int{}
	for k, n := range v.notes {
		if !n.answered || !n.accepted() {
			continue
		}
		_, seen := v.seen[k]
		_, buried := v.buried[k]
		if !seen && !buried {
			out[k.persona]++
		}
	}
	return out
}

// Outstanding is the number of notes the SUT accepted that have not
// appeared in their persona's home yet.
func (v *Visibility) Outstanding() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.outstanding
}

// VisibilityStats sum up the notes owed to the personas' homes.
type VisibilityStats struct {
	// Sent counts the notes owed to a home: each Create sent, once for
	// every persona that follows its sender.
	Sent int64 `json:"sent"`
	// Notes counts the Creates those are (a note owed to three personas is
	// one): what crowd compare's noise test takes as independent, since a
	// note reaches every home through one arrival at the SUT. 0 in records
	// made before it was kept.
	Notes int64 `json:"notes,omitempty"`
	// Accepted of them were answered 2xx; Refused otherwise or not at all.
	Accepted int64 `json:"accepted"`
	Refused  int64 `json:"refused"`
	// Seen appeared in the persona's home timeline (whatever the answer).
	Seen int64 `json:"seen"`
	// NeverSeen were accepted but never appeared, by the end of the drain,
	// nor were found by the sweep.
	NeverSeen int64 `json:"never_seen"`
	// Buried were accepted and never seen by a probe, but the sweep after
	// the drain found them in the home below the newest page (a server that
	// files a late note by its publication time puts it there): in the
	// home, at a time not known. Not in Latency.
	Buried int64 `json:"buried"`
	// Latency is first appearance − send, in µs: an upper bound, late by at
	// most one probe period and the probe's own latency.
	Latency record.HistRecord `json:"latency"`
}

// DrainStats say how long after the flood the last accepted note became
// visible.
type DrainStats struct {
	// Seconds from the end of the flood (its last answer) to the first
	// appearance of the last accepted note; 0 when every note was visible
	// before the flood ended. When Complete is false, the time waited.
	Seconds float64 `json:"seconds"`
	// Complete is false when some accepted note never appeared before the
	// drain's deadline.
	Complete bool `json:"complete"`
	// Timeout is the bound on the wait (--drain-timeout).
	Timeout float64 `json:"timeout_s"`
}

// Summary sums up the notes: floodEnd is when the flood's last answer came,
// drainEnd when the audience stopped waiting.
func (v *Visibility) Summary(floodEnd, drainEnd time.Time, timeout time.Duration) (VisibilityStats, DrainStats) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var st VisibilityStats
	h := record.NewHist()
	var last time.Time
	notes := map[string]bool{}
	for _, n := range v.order {
		st.Sent++
		notes[n.uri] = true
		if n.accepted() {
			st.Accepted++
		} else {
			st.Refused++
		}
		seen, ok := v.seen[noteKey{n.persona, n.uri}]
		switch {
		case ok:
			st.Seen++
			record.RecordDuration(h, seen.Sub(n.sent))
			if n.accepted() && seen.After(last) {
				last = seen
			}
		case n.accepted():
			if _, ok := v.buried[noteKey{n.persona, n.uri}]; ok {
				st.Buried++
			} else {
				st.NeverSeen++
			}
		}
	}
	st.Notes = int64(len(notes))
	st.Latency = keptHist(h)
	// A buried note's time in the home is not known: the drain is complete
	// only when the probes saw every note.
	d := DrainStats{Complete: st.NeverSeen == 0 && st.Buried == 0, Timeout: timeout.Seconds()}
	switch {
	case !d.Complete:
		d.Seconds = max(0, drainEnd.Sub(floodEnd).Seconds())
	case last.After(floodEnd):
		d.Seconds = last.Sub(floodEnd).Seconds()
	}
	return st, d
}

// NoteLog is one note owed to a persona's home, as the notes file (JSON
// lines beside the record) keeps it: the evidence behind the figures.
type NoteLog struct {
	Persona string     `json:"persona"`
	URI     string     `json:"uri"`
	Sender  string     `json:"sender"`
	Sent    time.Time  `json:"sent"`
	Status  int        `json:"status"`               // the SUT's answer to the Create, 0 for none
	Seen    *time.Time `json:"seen,omitempty"`       // the answer of the first probe whose timeline held the note
	Asked   *time.Time `json:"asked,omitempty"`      // when that probe was asked: the note was visible by seen, perhaps not yet at asked
	Visible *float64   `json:"visible_ms,omitempty"` // seen − sent, ms
	Buried  *time.Time `json:"buried,omitempty"`     // never seen by a probe; when the sweep found it below the newest page
}

// Notes returns every tracked note in send order.
func (v *Visibility) Notes() []NoteLog {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]NoteLog, 0, len(v.order))
	for _, n := range v.order {
		l := NoteLog{Persona: n.persona, URI: n.uri, Sender: n.sender, Sent: n.sent.UTC(), Status: n.status}
		if seen, ok := v.seen[noteKey{n.persona, n.uri}]; ok {
			s, a := seen.UTC(), v.asked[noteKey{n.persona, n.uri}].UTC()
			ms := float64(seen.Sub(n.sent).Microseconds()) / 1000
			l.Seen, l.Asked, l.Visible = &s, &a, &ms
		} else if at, ok := v.buried[noteKey{n.persona, n.uri}]; ok {
			b := at.UTC()
			l.Buried = &b
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Sent.Before(out[j].Sent) })
	return out
}
