package record

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Fetchback is what the SUT fetched back from the crowd's origins while a
// run went on (its fetch-back window: opened just before the first send,
// warm-up included, ended after the last answer, read after a grace
// period): requests by kind, their latency as the crowd served them, and
// fetches per delivered activity ("fetch amplification"). See SCHEMA.md.
type Fetchback struct {
	// GraceSeconds is how long after the run's end the window kept
	// counting.
	GraceSeconds float64 `json:"grace_s"`
	// Windows is how many windows the section adds up (one per generator
	// of a merged record).
	Windows int `json:"windows"`
	// Kinds are the requests by kind (webfinger, host-meta, nodeinfo,
	// actor, key, object, collection, media, other); a kind with none is
	// left out.
	Kinds map[string]*FetchKind `json:"kinds"`
	// Total adds every kind up.
	Total FetchKind `json:"total"`
	// Objects counts object fetches by the object's kind (the path segment
	// under /users/{name}/: notes, likes, follows…).
	Objects map[string]int64 `json:"objects,omitempty"`
	// Credits counts the fetches credited to the activity type whose
	// object they fetched, as the crowd that served them read it from the
	// object's id and its answer (the adminapi.Credit constants: a thread's parents to
	// Reply, attachments to Media, whatever answered 410 to Delete, an
	// unseen boosted note to Announce…); fetches of no one type's object
	// (keys, WebFinger, NodeInfo, collections) are in none.
	Credits map[string]int64 `json:"credits,omitempty"`
	// Amplification is fetches per 2xx-accepted send: one row per activity
	// type the record has (the fetches Credits gives it), and a last row
	// "all" (every fetch, every type).
	Amplification []Amplification `json:"amplification"`
}

// FetchKind is the tally of one kind of request the SUT made.
type FetchKind struct {
	Fetches int64 `json:"fetches"`
	// AfterEnd were served after the run's last answer, within the grace.
	AfterEnd int64 `json:"after_end"`
	// Signed carried an HTTP signature (authorized fetch); Unsigned did not.
	Signed   int64 `json:"signed"`
	Unsigned int64 `json:"unsigned"`
	// Status counts the crowd's answers by class ("2xx" … "5xx").
	Status map[string]int64 `json:"status"`
	// Latency is the time the crowd took to serve them (µs).
	Latency HistRecord `json:"latency"`
}

// Amplification is one row of fetch amplification.
type Amplification struct {
	// Type is the activity type, or "all".
	Type string `json:"type"`
	// Accepted is the 2xx-answered sends of the type in the measured window.
	Accepted int64 `json:"accepted"`
	// Fetches are the requests attributed to the type.
	Fetches int64 `json:"fetches"`
	// PerActivity is Fetches / Accepted (0 when nothing was accepted).
	PerActivity float64 `json:"per_activity"`
}

// FetchAll names the amplification row of every fetch and every type.
const FetchAll = "all"

// FetchKindTally is one kind's counts as the crowd's admin API answers
// them (adminapi.FetchbackKind), the input of NewFetchback.
type FetchKindTally struct {
	Fetches, AfterEnd, Signed int64
	Status                    map[string]int64
	LatencyHDR                string
}

// NewFetchback builds the section of one window's tally (kinds by name,
// object fetches by kind, fetches by the activity type credited) read
// grace after the run's end.
func NewFetchback(kinds map[string]FetchKindTally, objects, credits map[string]int64, grace time.Duration) (*Fetchback, error) {
	fb := &Fetchback{GraceSeconds: grace.Seconds(), Windows: 1, Kinds: map[string]*FetchKind{},
		Objects: maps.Clone(objects), Credits: maps.Clone(credits)}
	for name, k := range kinds {
		h, err := HistRecord{HDR: k.LatencyHDR}.Decode()
		if err != nil {
			return nil, fmt.Errorf("fetch-back %s: %w", name, err)
		}
		lat, err := encodeHist(h)
		if err != nil {
			return nil, err
		}
		fb.Kinds[name] = &FetchKind{Fetches: k.Fetches, AfterEnd: k.AfterEnd, Signed: k.Signed,
			Unsigned: k.Fetches - k.Signed, Status: maps.Clone(k.Status), Latency: lat}
	}
	return fb, fb.total()
}

// total sums the kinds into Total.
func (fb *Fetchback) total() error {
	t := FetchKind{Status: map[string]int64{}}
	h := NewHist()
	for _, name := range slices.Sorted(maps.Keys(fb.Kinds)) {
		k := fb.Kinds[name]
		t.Fetches += k.Fetches
		t.AfterEnd += k.AfterEnd
		t.Signed += k.Signed
		t.Unsigned += k.Unsigned
		for c, n := range k.Status {
			t.Status[c] += n
		}
		kh, err := k.Latency.Decode()
		if err != nil {
			return fmt.Errorf("fetch-back %s: %w", name, err)
		}
		h.Merge(kh)
	}
	var err error
	t.Latency, err = encodeHist(h)
	fb.Total = t
	return err
}

// SetFetchback puts fb in r with its amplification over r's sends.
func (r *Record) SetFetchback(fb *Fetchback) {
	r.Fetchback = fb
	if fb != nil {
		fb.amplify(r)
	}
}

// amplify computes the amplification rows from r's accepted sends.
func (fb *Fetchback) amplify(r *Record) {
	fb.Amplification = nil
	for _, name := range r.TypeNames() {
		row := Amplification{Type: name, Accepted: r.Types[name].Tally.OK(), Fetches: fb.Credits[name]}
		fb.Amplification = append(fb.Amplification, row.divided())
	}
	all := Amplification{Type: FetchAll, Accepted: r.Overall.Tally.OK(), Fetches: fb.Total.Fetches}
	fb.Amplification = append(fb.Amplification, all.divided())
}

func (a Amplification) divided() Amplification {
	if a.Accepted > 0 {
		a.PerActivity = float64(a.Fetches) / float64(a.Accepted)
	}
	return a
}

// mergeFetchback adds up the fetch-back sections of recs into out (whose
// types are merged already): counts add, histograms merge exactly. Each
// generator of a sharded run counted the fetches of its own crowd's
// origins. Records without the section add nothing; none with it leaves
// out without one.
func mergeFetchback(out *Record, recs []*Record) error {
	var fb *Fetchback
	for i, r := range recs {
		in := r.Fetchback
		if in == nil {
			continue
		}
		if fb == nil {
			fb = &Fetchback{Kinds: map[string]*FetchKind{}, Objects: map[string]int64{}, Credits: map[string]int64{}}
		}
		fb.GraceSeconds = max(fb.GraceSeconds, in.GraceSeconds)
		fb.Windows += in.Windows
		for seg, n := range in.Objects {
			fb.Objects[seg] += n
		}
		for typ, n := range in.Credits {
			fb.Credits[typ] += n
		}
		for name, k := range in.Kinds {
			if err := fb.addKind(name, k); err != nil {
				return fmt.Errorf("%w: record %d: %v", ErrMerge, i+1, err)
			}
		}
	}
	if fb == nil {
		return nil
	}
	if err := fb.total(); err != nil {
		return fmt.Errorf("%w: %v", ErrMerge, err)
	}
	out.SetFetchback(fb)
	return nil
}

// addKind adds k to the kind name of fb.
func (fb *Fetchback) addKind(name string, k *FetchKind) error {
	m := fb.Kinds[name]
	if m == nil {
		m = &FetchKind{Status: map[string]int64{}, Latency: HistRecord{}}
		fb.Kinds[name] = m
	}
	m.Fetches += k.Fetches
	m.AfterEnd += k.AfterEnd
	m.Signed += k.Signed
	m.Unsigned += k.Unsigned
	for c, n := range k.Status {
		m.Status[c] += n
	}
	a, err := m.Latency.Decode()
	if err != nil {
		return fmt.Errorf("fetch-back %s: %w", name, err)
	}
	b, err := k.Latency.Decode()
	if err != nil {
		return fmt.Errorf("fetch-back %s: %w", name, err)
	}
	a.Merge(b)
	m.Latency, err = encodeHist(a)
	return err
}
