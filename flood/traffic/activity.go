package traffic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// GeneratorConfig configures a Generator.
type GeneratorConfig struct {
	// Senders are the crowd actors that send (required): the world's Person
	// actors, with their keys.
	Senders []*actors.Actor
	// Personas are the targets (required), each with its Target set.
	Personas []*Persona
	// Mix weighs the activity types; the zero value means DefaultMix.
	Mix record.Mix
	// Zipf, when > 1, draws senders from a Zipf distribution with exponent
	// Zipf (sender i has weight ∝ 1/(i+1)^Zipf, Senders[0] the busiest);
	// 0 draws them uniformly.
	Zipf float64
	// Seed seeds every stream's random numbers (--seed): stream k of two
	// generators with the same seed and config draws the same sequence.
	Seed uint64
	// NoteBytes is the approximate length of a note's text; default 200.
	NoteBytes int
	// Start is the run's start, the base of the ids' sequence numbers (so
	// ids of runs started at different times differ); default time.Now().
	Start time.Time
	// Now stamps each activity (its id, its published date); default
	// time.Now.
	Now func() time.Time
	// OnFollowSent, when set, is called with every Follow the target
	// answered with a 2xx, from the run's Settled hook (Generator.Settled,
	// on an engine goroutine): it must not block (see Registrar.Add). A
	// Follow drawn and never sent is never passed to it.
	OnFollowSent func(FollowRegistration)
	// Following, when set, says whether crowd actor local already follows
	// (or has asked to follow) the persona remote before the run. The
	// generator sends a Follow only for a pair that does not follow yet,
	// and not twice in a run: servers do not repeat a Follow they have,
	// and GoToSocial answers a second one with a 500.
	Following func(local, remote string) bool
	// Reacted, when set, says whether crowd actor actor already keeps a
	// reaction of kind (TypeLike or TypeAnnounce) to object before the run.
	// The generator sends a Like or an Announce of a persona's post only
	// from a sender that has not reacted so to it, and not twice in a run:
	// a real account likes or boosts a post once (until an Undo), and
	// servers answer a repeat 2xx and drop it.
	Reacted func(actor, object string, kind record.ActivityKind) bool
	// SenderSet, when set, replaces Senders: senders computed on demand
	// (WorldSenders), for a world too large to list.
	SenderSet SenderSet
	// Vocab configures the vocabulary beyond Create, Like and Follow
	// (threads, mentions, hashtags, images) and where its changes go.
	Vocab VocabConfig
	// Draws, when set, draws senders by origin and forged requests
	// (tamper.go); nil draws neither.
	Draws *Draws
}

// Generator makes the flood's activities: who sends what to which persona.
// It is shared, immutable configuration plus a sequence counter; each
// goroutine draws from its own Stream.
type Generator struct {
	cfg      GeneratorConfig
	senders  SenderSet             // cfg.senderSet()
	targets  []*url.URL            // per persona, parsed once and shared read-only
	likeable []int                 // personas with posts
	kinds    []record.ActivityKind // the kinds of the mix with a weight
	cum      []float64             // cumulative mix weights of kinds
	noLike   [2]float64            // cumulative weights without likes: create, follow
	base     uint64                // sequence numbers start here: runKey(Start)
	seq      atomic.Uint64
	followed sync.Map     // followPair → struct{}: the Follows drawn this run and not given back
	reacted  sync.Map     // reactionPair → struct{}: the reactions drawn this run and not given back
	full     sync.Map     // fullKey → struct{}: posts every sender reacted to so
	diverted atomic.Int64 // diverted Follows sent (see Settled)
	vocab    vocabState   // what the run sent that later verbs act on

	byOrigin []originSenders // senders by origin, for Draws.OriginZipf
}

// followPair is a crowd actor and the persona it follows.
type followPair struct{ local, remote string }

// claimFollow reports whether local may follow remote now (it did not
// before the run, nor earlier in it) and, if so, marks the pair taken.
func (g *Generator) claimFollow(local, remote string) bool {
	if g.cfg.Following != nil && g.cfg.Following(local, remote) {
		return false
	}
	_, taken := g.followed.LoadOrStore(followPair{local, remote}, struct{}{})
	return !taken
}

// FollowsDiverted is how many Creates were sent in place of a drawn Follow
// because no sender was left that did not follow the persona. Only sends
// count (Settled): a diverted draft that never left changed nothing.
func (g *Generator) FollowsDiverted() int64 { return g.diverted.Load() }

// PersonasWithoutPosts lists the personas (acct) that have no post to like
// when the mix has Likes: they get Creates and Follows in their place.
func (g *Generator) PersonasWithoutPosts() []string {
	if g.cfg.Mix.Like == 0 {
		return nil
	}
	var out []string
	for _, p := range g.cfg.Personas {
		if len(p.Posts) == 0 {
			out = append(out, p.Acct)
		}
	}
	return out
}

// Settled is the generator's Settle hook: its bookkeeping follows
// what was sent, never what was drafted (a pipeline's buffer, a presigned
// run's tail and dropped sends are drafts that never left).
//
// A Follow is registered (OnFollowSent) when the target answered it with a
// 2xx, not earlier: registering before the write would put the crowd's
// graph on the send path and need a withdrawal for every Follow that then
// never arrived. The SUT may send its Accept before the 2xx is back; the
// crowd's inbox records the answer to a crowd actor's Follow it had not
// registered from the answer itself, and a registration arriving after that
// leaves the known Follow's state as it is (actors.Graph.AddFollowing), so
// either order ends with the SUT's answer in the graph. A Follow answered
// otherwise stays unregistered: should the SUT accept it later anyway, its
// Accept records it the same way.
//
// A Follow that did not reach the target (dropped, not sent, aborted, a
// connection error) gives its (sender, persona) pair back, so a later draw
// may use it. A diverted Follow counts once sent (FollowsDiverted).
func (g *Generator) Settled(t *Ticket, d record.Outcome) {
	if t.Diverted && d.Sent {
		g.diverted.Add(1)
	}
	g.settleVocab(t, d)
	f := t.Follow
	if f == nil {
		return
	}
	if d.Sent && !d.Aborted && d.Class.OK() {
		if g.cfg.OnFollowSent != nil {
			g.cfg.OnFollowSent(*f)
		}
		return
	}
	if !d.Sent || d.Aborted || d.Class == record.ClassConnError {
		g.followed.Delete(followPair{f.Local, f.Remote})
	}
}

// discard settles requests a source drew and will never hand out.
func (g *Generator) discard(ps ...*flood.Prepared) {
	for _, p := range ps {
		if t := TicketOf(p); t != nil {
			g.Settled(t, record.Outcome{})
		}
	}
}

// NewGenerator checks cfg and returns its Generator. It fails when there
// are no senders or personas, a persona's Target is not an absolute URL,
// Zipf is neither 0 nor > 1, or the mix sends only Likes and no persona has
// a post.
func NewGenerator(cfg GeneratorConfig) (*Generator, error) {
	if cfg.senderSet().Len() == 0 {
		return nil, errors.New("flood: no sending actors")
	}
	if len(cfg.Personas) == 0 {
		return nil, errors.New("flood: no personas to target")
	}
	if cfg.Mix == (record.Mix{}) {
		cfg.Mix = record.DefaultMix()
	}
	m := cfg.Mix
	for _, k := range m.Weights() {
		if k.Weight < 0 {
			return nil, usage(m.String(), "the mix needs weights >= 0 with a positive sum")
		}
	}
	if m.Total() <= 0 {
		return nil, usage(m.String(), "the mix needs weights >= 0 with a positive sum")
	}
	var err error
	if cfg.Vocab, err = cfg.Vocab.withDefaults(); err != nil {
		return nil, err
	}
	if cfg.Zipf != 0 && !(cfg.Zipf > 1) || math.IsInf(cfg.Zipf, 0) {
		return nil, usage(strconv.FormatFloat(cfg.Zipf, 'g', -1, 64), "--zipf must be a number > 1 (or 0 for uniform senders)")
	}
	if cfg.NoteBytes <= 0 {
		cfg.NoteBytes = 200
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Draws != nil {
		if err := cfg.Draws.check(); err != nil {
			return nil, err
		}
	}
	g := &Generator{cfg: cfg, senders: cfg.senderSet(), base: runKey(cfg.Start)}
	if cfg.Draws != nil && cfg.Draws.OriginZipf > 1 {
		g.byOrigin = groupByOrigin(g.senders)
	}
	for i, p := range cfg.Personas {
		u, err := url.Parse(p.Target)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return nil, fmt.Errorf("flood: persona %s: target %q is not an http(s) URL", p.Acct, p.Target)
		}
		g.targets = append(g.targets, u)
		if len(p.Posts) > 0 {
			g.likeable = append(g.likeable, i)
		}
	}
	if len(g.likeable) == 0 && m.Total() == m.Like {
		return nil, usage(m.String(), "the mix sends only Likes and no persona has a post to like")
	}
	sum := 0.0
	for _, k := range m.Weights() {
		if k.Weight > 0 {
			sum += k.Weight
			g.kinds, g.cum = append(g.kinds, k.Kind), append(g.cum, sum)
		}
	}
	g.noLike = [2]float64{m.Create, m.Create + m.Follow}
	return g, nil
}

// Config returns the generator's configuration, defaults applied.
func (g *Generator) Config() GeneratorConfig { return g.cfg }

// Draft is one generated activity, not yet signed.
type Draft struct {
	Type    record.ActivityKind // a kind of the mix (record.TypeCreate, …)
	Sender  *actors.Actor       // who sends (and signs) it
	Persona *Persona            // whom it targets
	URL     *url.URL            // the persona's Target, parsed; shared, read-only
	ID      string              // the activity's id
	Object  string              // the note's id, the liked post's, the followed actor's
	Body    []byte              // the activity's JSON
	// Diverted marks a Create drawn as a Follow: no sender was left that
	// did not follow the persona.
	Diverted bool
	// Vocab is what the run keeps of it once sent (see VocabSent).
	Vocab *VocabSent
	// Forgery, when set, forges the request (tamper.go).
	Forgery *DraftForgery
}

// Stream draws activities with its own random numbers; it is not safe for
// concurrent use (make one per goroutine with Generator.Stream).
type Stream struct {
	g    *Generator
	src  *rand.PCG // reseeded for each draft (Next)
	r    *rand.Rand
	zipf *rand.Zipf
	buf  bytes.Buffer
	dr   *streamDraws // draws by origin; nil: none
}

// Stream returns a new stream. Every stream of a generator draws its n-th
// draft of the run (n counted across the streams, in the order they start
// drafting) from a source seeded with (Seed, n) alone, so a draft's draws
// never depend on how many numbers the drafts before it took, which the
// crowd's state decides (a Follow whose drawn sender follows already takes a
// search for another): --seed replays the same types, personas and senders
// on a state earlier runs changed, and the same set of drafts whichever
// stream drew each.
func (g *Generator) Stream() *Stream {
	src := rand.NewPCG(g.cfg.Seed, 0)
	s := &Stream{g: g, src: src, r: rand.New(src)}
	if n := g.senders.Len(); g.cfg.Zipf > 1 && n > 1 {
		s.zipf = rand.NewZipf(s.r, g.cfg.Zipf, 1, uint64(n-1))
	}
	s.dr = g.newStreamDraws(s.r)
	return s
}

// draftNext numbers the run's next draft: n counts the drafts from 0, and
// seq, its sequence number, is unique within the run (the counter) and apart
// from those of any other run (see runKey). With the activity's timestamp,
// which the id also encodes, seq makes every id unique.
func (g *Generator) draftNext() (n, seq uint64) {
	n = g.seq.Add(1) - 1
	return n, g.base + n
}

// runKey scatters the run's start time (ns) over 64 bits (the splitmix64
// finalizer): two runs' counters, each starting at its key, overlap only
// when the keys are within the number of sends of each other, about one
// chance in 2^31 for runs of 2^32 sends, even for runs started a nanosecond
// apart (a plain start time + counter would overlap there).
func runKey(start time.Time) uint64 { return splitmix64(uint64(start.UnixNano())) }

// splitmix64 scatters x over 64 bits (splitmix64's increment and finalizer):
// neighbouring inputs give unrelated outputs.
func splitmix64(x uint64) uint64 {
	z := x + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Next draws the next activity: a persona uniformly, a type by the mix (a
// Like of a persona without posts becomes another type; with a Likes-only
// mix the persona is drawn among those with posts), a sender uniformly or
// by Zipf (never the persona itself, in a self-flood). A Follow goes only
// from a sender that does not follow the persona yet (GeneratorConfig.Following,
// and the Follows drawn earlier in the run): when the drawn sender does,
// the senders are searched in order from a random offset, and only when
// none is free does the Follow become a Create (Draft.Diverted).
func (s *Stream) Next() (Draft, error) {
	g := s.g
	n, seq := g.draftNext()
	s.src.Seed(splitmix64(g.cfg.Seed), splitmix64(n))
	pi := s.r.IntN(len(g.cfg.Personas))
	typ := s.drawType()
	if typ == record.TypeLike && len(g.cfg.Personas[pi].Posts) == 0 {
		if g.noLike[1] > 0 {
			typ = record.TypeCreate
			if s.r.Float64()*g.noLike[1] >= g.noLike[0] {
				typ = record.TypeFollow
			}
		} else if len(g.likeable) > 0 {
			pi = g.likeable[s.r.IntN(len(g.likeable))]
		} else {
			typ = record.TypeCreate // a vocabulary mix with no post to like anywhere
		}
	}
	p := g.cfg.Personas[pi]
	sender := s.drawSender(p.ID)
	diverted := false
	if typ == record.TypeFollow && !g.claimFollow(sender.ID, p.ID) {
		if free := s.freeSender(p.ID, func(id string) bool { return g.claimFollow(id, p.ID) }); free != nil {
			sender = free
		} else {
			typ, diverted = record.TypeCreate, true
		}
	}
	forgery := s.drawForgery(sender, seq)
	var liked string
	var reactionDiverted record.ActivityKind
	switch {
	case typ == record.TypeLike && forgery != nil:
		// A forged Like speaks for a leaver (forger): it takes no crowd actor's pair.
		liked = p.Posts[s.r.IntN(len(p.Posts))]
	case typ == record.TypeLike:
		var a *actors.Actor
		if a, liked = s.reactor(sender, p, s.r.IntN(len(p.Posts)), typ); a != nil {
			sender = a
		} else {
			typ, reactionDiverted = record.TypeCreate, record.TypeLike
		}
	}
	now := g.cfg.Now()
	var act actors.Activity
	if forgery != nil {
		sender = s.forger(typ, sender, p.ID, seq)
	}
	d := Draft{Type: typ, Sender: sender, Persona: p, URL: g.targets[pi], Diverted: diverted, Forgery: forgery}
	switch typ {
	case record.TypeCreate:
		act = sender.CreateNote(s.noteSpec(pi, now, seq))
		d.Object = act.Object.(actors.Note).ID
		d.Vocab = &VocabSent{Note: true, DivertedFrom: reactionDiverted}
	case record.TypeLike:
		d.Object = liked
		act = sender.Like(actors.LikeSpec{Published: now, Seq: seq, Object: d.Object})
		d.Vocab = &VocabSent{Undoable: true, Reaction: &actors.Reaction{Actor: sender.ID, Object: liked, Kind: actors.ReactionLike, ID: act.ID}}
	case record.TypeFollow:
		d.Object = p.ID
		act = sender.Follow(actors.FollowSpec{Published: now, Seq: seq, Object: p.ID})
		d.Vocab = &VocabSent{Undoable: true}
	default:
		var err error
		if act, err = s.draftVocab(&d, pi, now, seq); err != nil {
			return Draft{}, err
		}
	}
	markNote(&act, d.Forgery)
	d.ID = act.ID
	keepVocab(&d)
	s.buf.Reset()
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(act); err != nil {
		return Draft{}, fmt.Errorf("flood: encode %s: %w", typ, err)
	}
	d.Body = bytes.Clone(bytes.TrimRight(s.buf.Bytes(), "\n"))
	return d, nil
}

func (s *Stream) drawType() record.ActivityKind {
	cum := s.g.cum
	x := s.r.Float64() * cum[len(cum)-1]
	for i, c := range cum {
		if x < c {
			return s.g.kinds[i]
		}
	}
	return s.g.kinds[len(cum)-1]
}

// drawSender draws a sender other than the actor avoid (a persona that is
// itself a crowd actor must not mention, like or follow itself).
func (s *Stream) drawSender(avoid string) *actors.Actor {
	if s.dr != nil {
		return s.drawByOrigin(avoid)
	}
	senders := s.g.senders
	n := senders.Len()
	var i int
	if s.zipf != nil {
		i = int(s.zipf.Uint64())
	} else {
		i = s.r.IntN(n)
	}
	a := senders.At(i)
	if a.ID == avoid && n > 1 {
		a = senders.At((i + 1) % n)
	}
	return a
}

// freeSender claims and returns the first sender other than persona, in
// order from a random offset, that claim takes (one that may follow the
// persona, or react to its post); nil when none may. Searching the list,
// not drawing again, diverts a Follow or a reaction only when truly no
// free sender is left, however few there are.
func (s *Stream) freeSender(persona string, claim func(id string) bool) *actors.Actor {
	senders := s.g.senders
	n := senders.Len()
	start := s.r.IntN(n)
	for k := range n {
		a := senders.At((start + k) % n)
		if a.ID != persona && claim(a.ID) {
			return a
		}
	}
	return nil
}

// senderSet is cfg's senders: SenderSet when set, else Senders.
func (cfg GeneratorConfig) senderSet() SenderSet {
	if cfg.SenderSet != nil {
		return cfg.SenderSet
	}
	return senderSlice(cfg.Senders)
}
