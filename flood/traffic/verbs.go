package traffic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood/record"
)

// MaxReplyDepth bounds --reply-depth: each level of a thread nests its
// parent's id in its own, so ids grow by about a third a level (at 6, a
// reply's id is about 1.5 KB).
const MaxReplyDepth = 6

// VocabConfig configures the vocabulary beyond Create, Like and Follow;
// the zero value is the default.
type VocabConfig struct {
	// ReplyDepth is how deep a reply sits below its thread's root (a
	// persona's post or a crowd note): 1 answers the root itself, n puts
	// n-1 crowd notes between, which the SUT has never seen and must fetch.
	// Default 1, at most MaxReplyDepth.
	ReplyDepth int
	// Mentions is how many more personas each note mentions (Create,
	// reply, media), beside the one it is sent to; at most
	// actors.MaxMentions (and the personas there are).
	Mentions int
	// Hashtags is how many hashtags each note carries, at most
	// actors.MaxHashtags; each links to the origin's /tags/NAME.
	Hashtags int
	// Media is the images a media note carries; default 1 of 320×240.
	Media actors.MediaSpec
	// Deletions, when set, records each Delete's object (a note, a
	// leaver) deleted in the crowd's state as the Delete is drafted, and
	// restores it should the Delete never be sent; nil records none.
	Deletions *Deletions
	// OnUnfollow, when set, is called with a Follow the run undid, once
	// the target answered the Undo 2xx (from Settled: it must not block),
	// so the crowd's follow graph forgets it (see Registrar).
	OnUnfollow func(FollowRegistration)
}

// CheckVocab is c with its zero fields defaulted, or a *record.UsageError
// naming the flag of the first field out of range.
func CheckVocab(c VocabConfig) (VocabConfig, error) { return c.withDefaults() }

// withDefaults fills the zero fields and checks the rest.
func (c VocabConfig) withDefaults() (VocabConfig, error) {
	if c.ReplyDepth == 0 {
		c.ReplyDepth = 1
	}
	if c.Media == (actors.MediaSpec{}) {
		c.Media = actors.MediaSpec{Count: 1, Width: 320, Height: 240}
	}
	switch {
	case c.ReplyDepth < 1 || c.ReplyDepth > MaxReplyDepth:
		return c, usage(strconv.Itoa(c.ReplyDepth), "--reply-depth: want 1 to %d", MaxReplyDepth)
	case c.Mentions < 0 || c.Mentions > actors.MaxMentions:
		return c, usage(strconv.Itoa(c.Mentions), "--mentions: want 0 to %d", actors.MaxMentions)
	case c.Hashtags < 0 || c.Hashtags > actors.MaxHashtags:
		return c, usage(strconv.Itoa(c.Hashtags), "--hashtags: want 0 to %d", actors.MaxHashtags)
	}
	if err := actors.CheckExtras(actors.NoteExtras{Media: c.Media}); err != nil || c.Media.Count < 1 {
		return c, usage(fmt.Sprintf("%d, %dx%d", c.Media.Count, c.Media.Width, c.Media.Height),
			"--media-count and --media-size: want 1 to %d images of 1x1 to %dx%d", actors.MaxMedia, actors.MaxMediaSide, actors.MaxMediaSide)
	}
	return c, nil
}

// ParseMediaSize reads --media-size, WxH (e.g. 320x240). Errors are
// *record.UsageError naming the flag.
func ParseMediaSize(s string) (w, h int, err error) {
	ws, hs, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 1 || h < 1 || w > actors.MaxMediaSide || h > actors.MaxMediaSide {
		return 0, 0, usage(s, "--media-size: want WxH from 1x1 to %dx%d, e.g. 320x240", actors.MaxMediaSide, actors.MaxMediaSide)
	}
	return w, h, nil
}

// poolSize bounds each pool of what the run sent: memory stays bounded
// however long the run, and later verbs act on recent objects.
const poolSize = 4096

// sentItem is one entry of a pool.
type sentItem struct {
	kind     record.ActivityKind
	sender   *actors.Actor
	persona  *Persona
	url      *url.URL
	id       string
	version  int              // a note's edits so far
	reaction *actors.Reaction // the pair a Like or Announce of a persona's post holds
}

// sentPool is a bounded pool of what the run sent: past poolSize, a new
// item replaces the oldest.
type sentPool struct {
	mu    sync.Mutex
	items []sentItem
	next  int
}

func (p *sentPool) add(it sentItem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) < poolSize {
		p.items = append(p.items, it)
		return
	}
	p.items[p.next] = it
	p.next = (p.next + 1) % poolSize
}

// take removes and returns a random item.
func (p *sentPool) take(r *rand.Rand) (sentItem, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) == 0 {
		return sentItem{}, false
	}
	i := r.IntN(len(p.items))
	it := p.items[i]
	last := len(p.items) - 1
	p.items[i] = p.items[last]
	p.items = p.items[:last]
	p.next = 0 // the ring's order is lost once an item is taken: replace from the start
	return it, true
}

// edit returns a random item with its edit count raised by one.
func (p *sentPool) edit(r *rand.Rand) (sentItem, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) == 0 {
		return sentItem{}, false
	}
	i := r.IntN(len(p.items))
	p.items[i].version++
	return p.items[i], true
}

// vocabState is what the generator keeps of the run for the vocabulary.
type vocabState struct {
	notes, undoable sentPool
	met             sentPool     // leavers the SUT met, to delete later
	fallbacks       atomic.Int64 // Undos drawn with nothing to undo and sent as Announces
	likesDiverted   atomic.Int64 // Likes sent as Creates: no sender left that had not liked the post
	boostsDiverted  atomic.Int64 // Announces sent as Creates: no sender left that had not boosted the post
}

// ReactionsDiverted is how many Creates were sent in place of a drawn Like
// and of a drawn Announce of a persona's post because every sender had
// already reacted so to that post (in an earlier run, or earlier in this
// one). Only sends count.
func (g *Generator) ReactionsDiverted() (likes, announces int64) {
	return g.vocab.likesDiverted.Load(), g.vocab.boostsDiverted.Load()
}

// UndosDiverted is how many Announces were sent in place of a drawn Undo
// because nothing the run sent was left to undo when it was drafted (early
// in a run, or a mix with no Like, Announce or Follow). Only sends count.
func (g *Generator) UndosDiverted() int64 { return g.vocab.fallbacks.Load() }

// hashtagNames are the tags notes carry, in order, then tag7, tag8, ….
func hashtagName(i int) string {
	names := [...]string{"crowd", "fediverse", "loadtest", "activitypub", "federation", "flood"}
	if i < len(names) {
		return names[i]
	}
	return "tag" + strconv.Itoa(i+1)
}

// noteSpec is the spec of a note to persona pi: its one mention, and the
// mentions and hashtags VocabConfig asks for.
func (s *Stream) noteSpec(pi int, now time.Time, seq uint64) actors.NoteSpec {
	g := s.g
	p := g.cfg.Personas[pi]
	spec := actors.NoteSpec{Published: now, Seq: seq, Bytes: g.cfg.NoteBytes, MentionID: p.ID, MentionHandle: p.Handle()}
	n := len(g.cfg.Personas)
	for k := range min(g.cfg.Vocab.Mentions, n-1) {
		q := g.cfg.Personas[(pi+1+k)%n]
		spec.Mentions = append(spec.Mentions, actors.Mention{ID: q.ID, Handle: q.Handle()})
	}
	for k := range g.cfg.Vocab.Hashtags {
		spec.Hashtags = append(spec.Hashtags, hashtagName(k))
	}
	return spec
}

// draftVocab drafts d (its Type one of the vocabulary beyond Create, Like
// and Follow) for persona pi: the activity, and d's Object, Vocab and,
// where the verb acts on what an earlier send left, Sender, Persona and URL.
func (s *Stream) draftVocab(d *Draft, pi int, now time.Time, seq uint64) (actors.Activity, error) {
	g, p := s.g, d.Persona
	switch d.Type {
	case record.TypeAnnounce:
		obj, author := "", p.ID
		d.Vocab = &VocabSent{Undoable: true}
		if len(p.Posts) > 0 && s.r.IntN(2) == 0 {
			var a *actors.Actor
			if a, obj = s.reactor(d.Sender, p, s.r.IntN(len(p.Posts)), record.TypeAnnounce); a == nil {
				return s.divertReaction(d, pi, now, seq)
			}
			d.Sender = a
			d.Vocab.Reaction = &actors.Reaction{Actor: a.ID, Object: obj, Kind: actors.ReactionAnnounce}
		}
		if obj == "" {
			// A crowd note never sent to the SUT: it must fetch it, and meet
			// its author, a leaver a later Delete may delete.
			a := s.drawSender(p.ID).Leaver(seq)
			obj, author, d.Vocab.Met = a.NoteID(s.noteSpec(pi, now, seq)), a.ID, a
		}
		d.Object = obj
		act := d.Sender.Announce(actors.AnnounceSpec{Published: now, Seq: seq, Object: obj, Author: author})
		if d.Vocab.Reaction != nil {
			d.Vocab.Reaction.ID = act.ID
		}
		return act, nil
	case record.TypeReply, record.TypeMedia:
		spec := s.noteSpec(pi, now, seq)
		if d.Type == record.TypeMedia {
			spec.Media = g.cfg.Vocab.Media
		} else {
			spec.InReplyTo = s.thread(pi, now, seq)
		}
		act := d.Sender.CreateNote(spec)
		d.Object, d.Vocab = act.Object.(actors.Note).ID, &VocabSent{Note: true}
		return act, nil
	case record.TypeUndo:
		return s.draftUndo(d, pi, now, seq)
	case record.TypeDelete, record.TypeUpdate:
		return s.draftChange(d, now, seq)
	}
	return actors.Activity{}, fmt.Errorf("flood: no activity of kind %q", d.Type)
}

// divertReaction drafts, in place of d's reaction (a Like or an
// Announce of a persona's post that every sender has reacted so to), a
// Create to the persona, as a Follow with no free sender becomes one.
func (s *Stream) divertReaction(d *Draft, pi int, now time.Time, seq uint64) (actors.Activity, error) {
	from := d.Type
	act := d.Sender.CreateNote(s.noteSpec(pi, now, seq))
	d.Type, d.Object = record.TypeCreate, act.Object.(actors.Note).ID
	d.Vocab = &VocabSent{Note: true, DivertedFrom: from}
	return act, nil
}

// thread is the parent of a reply to persona pi: a chain of
// VocabConfig.ReplyDepth-1 crowd notes, by crowd actors drawn in turn,
// below a root that is one of the persona's posts or a crowd note. None of
// them was ever sent: the SUT fetches each from the crowd, which
// regenerates it from its id.
func (s *Stream) thread(pi int, now time.Time, seq uint64) string {
	p := s.g.cfg.Personas[pi]
	var parent string
	// Each crowd note of the thread is marked Thread, so the SUT's fetch
	// of it is credited to the Reply (record: fetch amplification).
	if len(p.Posts) > 0 && s.r.IntN(2) == 0 {
		parent = p.Posts[s.r.IntN(len(p.Posts))]
	} else {
		spec := s.noteSpec(pi, now, seq)
		spec.Thread = true
		parent = s.drawSender(p.ID).NoteID(spec)
	}
	for range s.g.cfg.Vocab.ReplyDepth - 1 {
		spec := s.noteSpec(pi, now, seq)
		spec.InReplyTo, spec.Thread = parent, true
		parent = s.drawSender(p.ID).NoteID(spec)
	}
	return parent
}

// draftUndo undoes a Like, Announce or Follow the run sent, from its
// sender to its persona; with none left it drafts an Announce instead (a
// later Undo will have it), counted in UndosDiverted.
func (s *Stream) draftUndo(d *Draft, pi int, now time.Time, seq uint64) (actors.Activity, error) {
	it, ok := s.g.vocab.undoable.take(s.r)
	if !ok {
		d.Type = record.TypeAnnounce
		act, err := s.draftVocab(d, pi, now, seq)
		if d.Vocab != nil {
			d.Vocab.UndoDiverted = true
		}
		return act, err
	}
	obj, err := it.sender.Object(strings.TrimPrefix(it.id, it.sender.ID) + "/undo")
	if err != nil {
		return actors.Activity{}, fmt.Errorf("flood: undo %s: %w", it.id, err)
	}
	d.Sender, d.Persona, d.URL, d.Object = it.sender, it.persona, it.url, it.id
	switch {
	case it.kind == record.TypeFollow:
		d.Vocab = &VocabSent{Unfollow: &FollowRegistration{Local: it.sender.ID, Remote: it.persona.ID, FollowID: it.id}}
	case it.reaction != nil:
		undo := *it.reaction
		undo.Undone = true
		d.Vocab = &VocabSent{Reaction: &undo}
	}
	return obj.(actors.Activity), nil
}

// draftChange drafts a Delete or an Update: half of them (when the run
// has sent notes) of a note it sent, by its author to the persona it went
// to; the others of an actor: a leaver's self-Delete (an account deletion
// the SUT never met), or a profile change of the drawn sender.
func (s *Stream) draftChange(d *Draft, now time.Time, seq uint64) (actors.Activity, error) {
	g, at := s.g, now.UTC().Format(time.RFC3339)
	if d.Type == record.TypeDelete {
		if it, ok := s.noteToChange(g.vocab.notes.take); ok {
			d.Sender, d.Persona, d.URL, d.Object = it.sender, it.persona, it.url, it.id
			d.Vocab = g.deletion(actors.Change{ID: it.id, Deleted: at}, d.Forgery != nil)
			return it.sender.DeleteNote(it.id), nil
		}
		// An account deletion: of a leaver the SUT met, half of the time
		// when there is one, else of one it never met.
		l := d.Sender.Leaver(seq)
		if it, ok := s.noteToChange(g.vocab.met.take); ok {
			l = it.sender
		}
		d.Sender, d.Object = l, l.ID
		d.Vocab = g.deletion(actors.Change{ID: l.ID, Deleted: at}, d.Forgery != nil)
		return l.DeleteSelf(), nil
	}
	if it, ok := s.noteToChange(g.vocab.notes.edit); ok {
		spec, err := it.sender.NoteSpecOf(it.id)
		if err != nil {
			return actors.Activity{}, fmt.Errorf("flood: update %s: %w", it.id, err)
		}
		d.Sender, d.Persona, d.URL, d.Object = it.sender, it.persona, it.url, it.id
		d.Vocab = &VocabSent{Change: &actors.Change{ID: it.id, Version: it.version, Updated: at}}
		return it.sender.UpdateNote(spec, it.version, now), nil
	}
	// A profile's version is its time: versions of later runs stay higher.
	v := int(now.UnixMilli())
	d.Object = d.Sender.ID
	d.Vocab = &VocabSent{Change: &actors.Change{ID: d.Sender.ID, Version: v, Updated: at}}
	return d.Sender.UpdateProfile(v, now), nil
}

// deletion is the VocabSent of a Delete of it.ID, its deletion recorded
// from now (VocabConfig.Deletions): a real server deletes first and
// federates after, and the SUT may fetch the object while it handles the
// Delete.
func (g *Generator) deletion(it actors.Change, forged bool) *VocabSent {
	if forged {
		// Not the author's Delete: a correct SUT refuses it, and the
		// object stays as it was for the SUT to tell.
		return &VocabSent{}
	}
	v := &VocabSent{Deletion: &it}
	if del := g.cfg.Vocab.Deletions; del != nil {
		v.gone = del.mark(it)
	}
	return v
}

// noteToChange draws, half of the time, a note the run sent with pick.
func (s *Stream) noteToChange(pick func(*rand.Rand) (sentItem, bool)) (sentItem, bool) {
	if s.r.IntN(2) == 0 {
		return sentItem{}, false
	}
	return pick(s.r)
}

// settleVocab keeps what a send answered 2xx left for later verbs, and
// hands its unfollow on (its change is a ChangeFeed's).
func (g *Generator) settleVocab(t *Ticket, d record.Outcome) {
	v := t.Vocab
	if v != nil && d.Sent {
		g.countDiverted(v)
	}
	if v != nil && v.Reaction != nil && !v.Reaction.Undone && (!d.Sent || d.Aborted || d.Class == record.ClassConnError) {
		g.freeReaction(*v.Reaction) // it never reached the target: a later draw may make it
	}
	if del := g.cfg.Vocab.Deletions; v != nil && v.Deletion != nil && !d.Sent && del != nil {
		del.restore(v.Deletion.ID) // never sent: the SUT was never told
	}
	if v == nil || !d.Sent || d.Aborted || !d.Class.OK() {
		return
	}
	if v.Reaction != nil && v.Reaction.Undone {
		g.freeReaction(*v.Reaction) // undone: the pair may react again
	}
	it := sentItem{kind: t.req.Type, sender: v.sender, persona: v.persona, url: v.url, id: v.id, reaction: v.Reaction}
	switch {
	case v.Note:
		g.vocab.notes.add(it)
	case v.Undoable:
		g.vocab.undoable.add(it)
	}
	if v.Met != nil {
		g.vocab.met.add(sentItem{sender: v.Met, id: v.Met.ID})
	}
	if f := v.Unfollow; f != nil {
		g.followed.Delete(followPair{f.Local, f.Remote}) // the pair may follow again
		if g.cfg.Vocab.OnUnfollow != nil {
			g.cfg.Vocab.OnUnfollow(*f)
		}
	}
}

// countDiverted counts a sent activity drafted in place of another.
func (g *Generator) countDiverted(v *VocabSent) {
	if v.UndoDiverted {
		g.vocab.fallbacks.Add(1)
	}
	switch v.DivertedFrom {
	case record.TypeLike:
		g.vocab.likesDiverted.Add(1)
	case record.TypeAnnounce:
		g.vocab.boostsDiverted.Add(1)
	}
}

// freeReaction gives a reaction's pair back to the run's draws.
func (g *Generator) freeReaction(r actors.Reaction) {
	g.reacted.Delete(reactionPair{r.Actor, r.Object, record.ActivityKind(r.Kind)})
	g.full.Delete(fullKey{r.Object, record.ActivityKind(r.Kind)})
}

// ReactionSink takes a batch of the reactions a run sent (and undid) into
// the crowd's state: the crowd's admin API for a crowd serving elsewhere
// (adapted by loadrun), WorldReactions for the world in this process.
type ReactionSink func(context.Context, []actors.Reaction) error

// WorldReactions is the sink of a world that runs in this process.
func WorldReactions(w *actors.World) ReactionSink {
	return func(_ context.Context, items []actors.Reaction) error { return w.RecordReactions(items) }
}

// ReactionFeed is a Settle hook that records in the crowd the
// Likes and Announces of personas' posts a run sent, and their Undos, once
// the target answered them 2xx, in batches (one journal write a second at
// most): only what was sent is kept.
type ReactionFeed = Feed[actors.Reaction]

// NewReactionFeed starts the worker of a ReactionFeed feeding sink.
func NewReactionFeed(sink ReactionSink, o OutboxFeedOptions) *ReactionFeed {
	return newVocabFeed(sink, o, "reactions", func(v *VocabSent) *actors.Reaction { return v.Reaction })
}

// newVocabFeed starts a Feed of what pick finds in a send's VocabSent, once
// the target answered it 2xx; o.What defaults to what.
func newVocabFeed[T any](sink func(context.Context, []T) error, o OutboxFeedOptions, what string, pick func(*VocabSent) *T) *Feed[T] {
	if o.What == "" {
		o.What = what
	}
	return newFeed(sink, o, func(t *Ticket, d record.Outcome) (T, bool) {
		var zero T
		if t.Vocab == nil || !d.Sent || d.Aborted || !d.Class.OK() {
			return zero, false
		}
		if x := pick(t.Vocab); x != nil {
			return *x, true
		}
		return zero, false
	})
}

// keepVocab completes d.Vocab with who sent what to whom, once the draft
// is final.
func keepVocab(d *Draft) {
	if d.Vocab == nil {
		return
	}
	d.Vocab.sender, d.Vocab.persona, d.Vocab.url, d.Vocab.id = d.Sender, d.Persona, d.URL, d.ID
	if d.Vocab.Note {
		d.Vocab.id = d.Object
	}
}

// ChangeFeed is a Settle hook that records in the crowd the
// edits a run's Updates made, once the target answered them 2xx, in
// batches (one journal write a second at most). Deletions are recorded
// earlier, when drafted (Deletions).
type ChangeFeed = Feed[actors.Change]

// NewChangeFeed starts the worker of a ChangeFeed feeding sink.
func NewChangeFeed(sink ChangeSink, o OutboxFeedOptions) *ChangeFeed {
	return newVocabFeed(sink, o, "changes", func(v *VocabSent) *actors.Change { return v.Change })
}
