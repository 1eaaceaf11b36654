// Forged requests among a flood's sends (--tamper), and the draws a
// scenario adds beyond the mix: senders by origin (--origin-zipf).

package traffic

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// Draws are what a scenario draws beyond the mix and --zipf
// (GeneratorConfig.Draws). The zero value draws nothing more.
type Draws struct {
	// OriginZipf, when > 1, draws each send's origin by Zipf (origin i of
	// the senders, in their order, has weight ∝ 1/(i+1)^OriginZipf), then
	// its actor within the origin (by --zipf when set, else uniformly):
	// a few busy servers and a long tail, as the fediverse is.
	OriginZipf float64
	// Tamper lists the forged kinds to send; TamperShare (0 < s ≤ 1) is
	// the share of sends forged, each kind equally likely.
	Tamper      []signing.Tamper
	TamperShare float64
}

// check refuses draws that cannot be drawn.
func (d *Draws) check() error {
	if d.OriginZipf != 0 && !(d.OriginZipf > 1) || math.IsInf(d.OriginZipf, 0) {
		return usage(strconv.FormatFloat(d.OriginZipf, 'g', -1, 64), "--origin-zipf must be a number > 1 (or 0 for uniform origins)")
	}
	if len(d.Tamper) > 0 && !(d.TamperShare > 0 && d.TamperShare <= 1) {
		return usage(strconv.FormatFloat(d.TamperShare, 'g', -1, 64), "--tamper-share must be in (0, 1]")
	}
	return nil
}

// originSenders are the senders of one origin: indexes into the
// generator's SenderSet, n of them from start, or idx when listed.
type originSenders struct {
	start, n int
	idx      []int
}

// at is the i-th sender index of the origin, 0 ≤ i < n.
func (o originSenders) at(i int) int {
	if o.idx != nil {
		return o.idx[i]
	}
	return o.start + i
}

// groupByOrigin groups the senders by origin, in the order of their first
// sender. The Persons of a world (WorldSenders) are grouped by arithmetic,
// as their origins are contiguous and equal, without computing one.
func groupByOrigin(set SenderSet) []originSenders {
	if ws, ok := set.(worldSenders); ok {
		per := ws.w.Config.Actors
		out := make([]originSenders, len(ws.w.Origins))
		for i := range out {
			out[i] = originSenders{start: i * per, n: per}
		}
		return out
	}
	idx := map[string]int{}
	var out []originSenders
	for i := range set.Len() {
		host := set.At(i).Origin.Host
		k, ok := idx[host]
		if !ok {
			k = len(out)
			idx[host] = k
			out = append(out, originSenders{})
		}
		out[k].idx = append(out[k].idx, i)
		out[k].n++
	}
	return out
}

// streamDraws are a stream's own Zipf draws over origins and within one.
type streamDraws struct {
	origin, within *rand.Zipf
}

// newStreamDraws is nil unless the generator draws by origin.
func (g *Generator) newStreamDraws(r *rand.Rand) *streamDraws {
	if g.cfg.Draws == nil || g.cfg.Draws.OriginZipf <= 1 || len(g.byOrigin) < 2 {
		return nil
	}
	sd := &streamDraws{origin: rand.NewZipf(r, g.cfg.Draws.OriginZipf, 1, uint64(len(g.byOrigin)-1))}
	widest := 0
	for _, o := range g.byOrigin {
		widest = max(widest, o.n)
	}
	if g.cfg.Zipf > 1 && widest > 1 {
		sd.within = rand.NewZipf(r, g.cfg.Zipf, 1, uint64(widest-1))
	}
	return sd
}

// drawByOrigin draws an origin, then an actor of it other than avoid.
func (s *Stream) drawByOrigin(avoid string) *actors.Actor {
	o := s.g.byOrigin[s.dr.origin.Uint64()]
	var i int
	if s.dr.within != nil {
		i = int(s.dr.within.Uint64()) % o.n
	} else {
		i = s.r.IntN(o.n)
	}
	senders := s.g.senders
	if a := senders.At(o.at(i)); a.ID != avoid {
		return a
	}
	if o.n > 1 {
		return senders.At(o.at((i + 1) % o.n))
	}
	// The origin's only actor is the persona itself: any other sender.
	n := senders.Len()
	j := s.r.IntN(n)
	a := senders.At(j)
	if a.ID == avoid {
		a = senders.At((j + 1) % n)
	}
	return a
}

// DraftForgery marks a draft to be forged (Draft.Forgery).
type DraftForgery struct {
	Kind signing.Tamper
	// WrongSigner signs a wrong-key forgery: another crowd actor, or the
	// origin's instance actor when the sender is alone.
	WrongSigner *actors.Actor
	// Marker is the forgery's own token, unique in the run and apart from
	// other runs' (ForgeryMarker): in a forged note's content, and in the
	// name of the actor a forged Like, Announce or Follow speaks for, so
	// the look-up for its effect finds this forgery and nothing honest.
	Marker string
}

// ForgeryMarker is the marker of the forgery drafted with seq: a word no
// sanitizer changes, in no honest note.
func ForgeryMarker(seq uint64) string { return "crowdforgery" + strconv.FormatUint(seq, 36) }

// drawForgery draws whether the draft of sender is forged, with the
// generator's tamper share. It draws nothing when no tamper kind is set,
// so honest runs keep their draws.
func (s *Stream) drawForgery(sender *actors.Actor, seq uint64) *DraftForgery {
	dr := s.g.cfg.Draws
	if dr == nil || len(dr.Tamper) == 0 || s.r.Float64() >= dr.TamperShare {
		return nil
	}
	f := &DraftForgery{Kind: dr.Tamper[s.r.IntN(len(dr.Tamper))], Marker: ForgeryMarker(seq)}
	if f.Kind == signing.TamperWrongKey {
		f.WrongSigner = sender.Origin.Instance
		if senders := s.g.senders; senders.Len() > 1 {
			for f.WrongSigner = senders.At(s.r.IntN(senders.Len())); f.WrongSigner.ID == sender.ID; {
				f.WrongSigner = senders.At(s.r.IntN(senders.Len()))
			}
		}
	}
	return f
}

// forger is who a forged draft of typ speaks for: a Like, Announce or
// Follow, whose effect shows as its actor, speaks for a leaver of the
// sender named after seq, an actor no honest activity uses (a forged
// Follow gives the pair it claimed back); the rest for the sender.
func (s *Stream) forger(typ record.ActivityKind, sender *actors.Actor, persona string, seq uint64) *actors.Actor {
	switch typ {
	case record.TypeFollow:
		s.g.followed.Delete(followPair{sender.ID, persona})
	case record.TypeLike, record.TypeAnnounce:
	default:
		return sender
	}
	return sender.Leaver(seq)
}

// markNote puts a forged draft's marker in its note's content: the note
// the origin serves at that id lacks it, so a SUT that fetched the
// authentic note shows no marker, and one that kept the forged body does.
func markNote(act *actors.Activity, f *DraftForgery) {
	if n, ok := act.Object.(actors.Note); ok && f != nil {
		n.Content += "<p>" + f.Marker + "</p>"
		act.Object = n
	}
}

// remark puts marker back into an altered body's note content
// (signing.AlterBody rewrites it): what the SUT keeps of a body forgery
// carries the marker too. A body without a note's content is left as it is.
func remark(body []byte, marker string) []byte {
	var act map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if marker == "" || dec.Decode(&act) != nil {
		return body
	}
	obj, ok := act["object"].(map[string]any)
	content, isText := obj["content"].(string)
	if !ok || !isText || strings.Contains(content, marker) {
		return body
	}
	obj["content"] = content + "<p>" + marker + "</p>"
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(act) != nil {
		return body
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// replayRing is how many accepted requests Forgeries keeps to replay.
const replayRing = 64

// Forgeries collects what the SUT's verification made of a run into the
// record's security section (Settled): the forged requests by kind, and
// the crowd's keys it answered 401 before it accepted them; and it makes
// the replays (Source). It is safe for concurrent use.
type Forgeries struct {
	mu       sync.Mutex
	sec      record.Security
	accepted []*flood.Prepared // the latest honest requests answered 2xx, a ring
	next     int
	keys     map[string]*record.KeyRefusal // keyIds answered 401, at most record.MaxKeyRefusals
	marks    []ForgeryMark                 // the forgeries answered 2xx, as the findings list them

	// Read without the lock, so an honest send's answer costs two atomic
	// loads unless it matters: a 401, a 2xx after a refusal, or a 2xx
	// kept to replay.
	refused  atomic.Bool // some key was refused: 2xx answers are looked up
	replayed atomic.Bool // Source wraps the run's source: 2xx answers are kept
	// The schemes the SUT answered an honest request 2xx in: a key's 401s
	// in a scheme it never accepted blame the scheme, not a stale key.
	okCavage, okRFC9421 atomic.Bool
}

// NewForgeries returns an empty collector.
func NewForgeries() *Forgeries { return &Forgeries{} }

// Settled is a Settle hook: it counts each forged request by kind and
// answer, and keeps honest requests answered 2xx to replay.
func (f *Forgeries) Settled(t *Ticket, d record.Outcome) {
	if !d.Sent || d.Aborted {
		return
	}
	p := t.req
	if t.Forgery == nil && d.Class.OK() {
		f.accepted2xx(p)
	}
	if t.Forgery == nil && d.Class != record.Class401 && !(d.Class.OK() && (f.refused.Load() || f.replayed.Load())) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.Forgery == nil {
		f.keyAnswer(p, d.Class)
		// A request knocked twice may have been accepted with other
		// headers than its own: only one sent as signed is replayed.
		if d.Class.OK() && f.replayed.Load() && (t.Knock == nil || t.Knock.k.mode != SignatureBoth) {
			if len(f.accepted) < replayRing {
				f.accepted = append(f.accepted, p)
			} else {
				f.accepted[f.next] = p
			}
			f.next = (f.next + 1) % replayRing
		}
		return
	}
	listed := len(f.sec.Findings)
	f.sec.Add(string(t.Forgery.Kind), t.Forgery.Activity, p.URL.String(), d.Class, d.Status)
	if len(f.sec.Findings) > listed {
		f.marks = append(f.marks, *t.Forgery)
	}
}

// accepted2xx notes the scheme of an honest request the SUT answered 2xx.
// Every such answer comes here: a flag already set is only read, so the
// workers do not write one cache line at each send.
func (f *Forgeries) accepted2xx(p *flood.Prepared) {
	if f.okCavage.Load() && f.okRFC9421.Load() {
		return
	}
	var ok *atomic.Bool
	switch schemeOf(p) {
	case signing.SchemeCavage:
		ok = &f.okCavage
	case signing.SchemeRFC9421:
		ok = &f.okRFC9421
	default:
		return
	}
	if !ok.Load() {
		ok.Store(true)
	}
}

// Accepted are the forgeries the SUT answered 2xx so far, each listed in
// the security section's findings (at most record.MaxFindings): what a
// look-up for their effect looks for (record.Security.Judge).
func (f *Forgeries) Accepted() []ForgeryMark {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.marks)
}

// Source wraps a run's source: a replay drawn is swapped for the request
// the SUT accepted last, sent again byte for byte (its Date still within
// the window); drawn before the SUT accepted anything, it goes out as the
// honest request it was drawn with, counted in ReplaysUnready. The swapped
// draft is never sent, nor settled: a Follow it carried keeps its pair
// claimed for the run.
func (f *Forgeries) Source(in flood.Source) flood.Source {
	f.replayed.Store(true)
	return flood.WrapSource(in, func(ctx context.Context) (*flood.Prepared, error) {
		p, err := in.Next(ctx)
		if err != nil {
			return p, err
		}
		t := TicketOf(p)
		if t == nil || t.Forgery == nil || t.Forgery.Kind != signing.TamperReplay {
			return p, nil
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.accepted) == 0 {
			f.sec.ReplaysUnready++
			honest, ht := *p, *t
			ht.Forgery = nil
			return ht.Attach(&honest), nil
		}
		last := f.accepted[(f.next+len(f.accepted)-1)%len(f.accepted)]
		replay := &Ticket{Forgery: &ForgeryMark{Kind: signing.TamperReplay, Activity: activityID(last.Body)}}
		return replay.Attach(&flood.Prepared{Type: record.TypeForged, Method: last.Method, URL: last.URL, Host: last.Host, Header: last.Header, Body: last.Body}), nil
	})
}

// keyAnswer counts a 401 to an honest request against its keyId until
// the SUT first accepts one signed with it. Holding f.mu.
func (f *Forgeries) keyAnswer(p *flood.Prepared, class record.Class) {
	if class != record.Class401 && (len(f.keys) == 0 || !class.OK()) {
		return // the common case: no refusal yet, nothing to look up
	}
	id := keyIDOf(p.Header)
	k := f.keys[id]
	switch {
	case class.OK():
		if k != nil {
			k.Accepted = true
		}
	case k == nil && len(f.keys) < record.MaxKeyRefusals:
		if f.keys == nil {
			f.keys = map[string]*record.KeyRefusal{}
		}
		f.keys[id] = &record.KeyRefusal{KeyID: id, Refused: 1, Scheme: string(schemeOf(p))}
		f.refused.Store(true)
	case k != nil && !k.Accepted:
		k.Refused++
		if k.Scheme != string(schemeOf(p)) {
			k.Scheme = "" // refused in both schemes: the scheme is not the cause
		}
	}
}

// schemeOf is the scheme an honest request's final answer judged: what it
// was signed with, "" for a double knock (--signature both), whose final
// attempt may have gone out in the other scheme.
func schemeOf(p *flood.Prepared) signing.Scheme {
	var n *Knock
	if t := TicketOf(p); t != nil {
		n = t.Knock
	}
	switch {
	case n != nil && n.k.mode == SignatureBoth:
		return ""
	case n != nil:
		return n.Scheme
	case len(p.Header["Signature-Input"]) > 0: // canonical, as the signer sets it
		return signing.SchemeRFC9421
	}
	return signing.SchemeCavage
}

// keyIDOf is the key id of a signed request: keyId of a cavage
// Signature header, else keyid of an RFC 9421 Signature-Input ("" with
// neither).
func keyIDOf(h http.Header) string {
	sig, param := h.Get("Signature"), `keyId="`
	if !strings.Contains(sig, param) {
		sig, param = h.Get("Signature-Input"), `keyid="`
	}
	_, rest, ok := strings.Cut(sig, param)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

// activityID is the id of the activity in body ("" when it has none).
func activityID(body []byte) string {
	var a struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(body, &a)
	return a.ID
}

// Snapshot is the security section so far: nil when nothing forged was
// drawn.
func (f *Forgeries) Snapshot() *record.Security {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sec.Kinds) == 0 && f.sec.ReplaysUnready == 0 && len(f.keys) == 0 {
		return nil
	}
	s := f.sec.Clone()
	if f.okCavage.Load() {
		s.SchemesAccepted = append(s.SchemesAccepted, string(signing.SchemeCavage))
	}
	if f.okRFC9421.Load() {
		s.SchemesAccepted = append(s.SchemesAccepted, string(signing.SchemeRFC9421))
	}
	for _, k := range f.keys {
		s.KeyRefusals = append(s.KeyRefusals, *k)
	}
	slices.SortFunc(s.KeyRefusals, func(a, b record.KeyRefusal) int { return strings.Compare(a.KeyID, b.KeyID) })
	if s.Findings == nil {
		s.Findings = []record.Finding{}
	}
	return s
}

// Reset forgets the counts and findings (a ladder's next rung starts its
// own), keeping the accepted requests to replay.
func (f *Forgeries) Reset() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.sec = record.Security{}
	f.keys = nil
	f.marks = nil
	f.refused.Store(false)
	f.okCavage.Store(false)
	f.okRFC9421.Store(false)
	f.mu.Unlock()
}
