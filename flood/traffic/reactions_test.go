package traffic

import (
	"context"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// TestReactionsOnlyNewPairs: a Like or an Announce of a persona's post goes
// only from a sender that has not reacted so to that post (before the run,
// or earlier in it); with none left it becomes a Create, marked with the
// kind it stands in for.
func TestReactionsOnlyNewPairs(t *testing.T) {
	senders, personas := fakeSenders(6), fakePersonas(1) // 6 senders × 2 posts = 12 pairs of each kind
	post := personas[0].Posts[0]
	before := map[reactionPair]bool{
		{senders[0].ID, post, record.TypeLike}:     true, // liked before the run
		{senders[1].ID, post, record.TypeAnnounce}: true, // boosted before the run
	}
	many := fakeSenders(200)
	allButOne := map[reactionPair]bool{}
	for i, s := range many {
		for _, p := range personas[0].Posts {
			if i != 137 || p != post {
				allButOne[reactionPair{s.ID, p, record.TypeLike}] = true
			}
		}
	}
	for _, c := range []struct {
		name         string
		senders      []*actors.Actor
		mix          record.Mix
		before       map[reactionPair]bool
		draws        int
		wantOnPosts  int // reactions to the persona's posts, none repeated, none in before
		wantDiverted int // Creates in place of one
	}{
		// No more draws than the free pairs: every Like is new.
		{"likes, pairs left", senders, record.Mix{Like: 1}, before, 11, 11, 0},
		// More draws than the 11 free pairs: the rest become Creates.
		{"likes, pairs run out", senders, record.Mix{Like: 1}, before, 30, 11, 19},
		// Boosts of the posts keep pairs of their own (a Like does not
		// take the Announce's); about half the draws (22 with this seed)
		// boost a crowd note, which no one boosted before.
		{"announces, pairs run out", senders, record.Mix{Announce: 1}, before, 60, 11, 60 - 11 - 22},
		// A post whose likers are all taken sends the Like to the
		// persona's other post: none is diverted while one has a pair.
		{"likes, one post full", senders[:1], record.Mix{Like: 1}, nil, 2, 2, 0},
		// One free liker among 200: found, however many draws collide.
		{"one free sender of many", many, record.Mix{Like: 1}, allButOne, 2, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := mustGenerator(t, GeneratorConfig{Senders: c.senders, Personas: personas, Mix: c.mix, Seed: 3,
				Reacted: func(actor, object string, kind record.ActivityKind) bool {
					return c.before[reactionPair{actor, object, kind}]
				}})
			s := g.Stream()
			seen := map[reactionPair]bool{}
			onPosts, diverted, others := 0, 0, 0
			for range c.draws {
				d := mustDraft(t, s)
				switch {
				case d.Vocab != nil && d.Vocab.DivertedFrom != "":
					if d.Type != record.TypeCreate || d.Vocab.DivertedFrom != c.mix.Weights()[firstKind(c.mix)].Kind {
						t.Errorf("a %s diverted from %q", d.Type, d.Vocab.DivertedFrom)
					}
					diverted++
				case d.Vocab != nil && d.Vocab.Reaction != nil:
					r := d.Vocab.Reaction
					pair := reactionPair{d.Sender.ID, d.Object, d.Type}
					if r.Actor != d.Sender.ID || r.Object != d.Object || r.Kind != string(d.Type) || r.ID != d.ID {
						t.Errorf("the reaction kept %+v is not the draft's (%s %s of %s)", r, d.Sender.ID, d.Type, d.Object)
					}
					if c.before[pair] || seen[pair] {
						t.Errorf("%s of %s by %s again", d.Type, d.Object, d.Sender.ID)
					}
					seen[pair] = true
					onPosts++
				default:
					others++ // an Announce of a crowd note
				}
			}
			if onPosts != c.wantOnPosts || diverted != c.wantDiverted {
				t.Errorf("%d reactions to posts, %d diverted, %d others; want %d and %d", onPosts, diverted, others, c.wantOnPosts, c.wantDiverted)
			}
		})
	}
}

// firstKind is the index in m.Weights() of the kind m weighs.
func firstKind(m record.Mix) int {
	for i, k := range m.Weights() {
		if k.Weight > 0 {
			return i
		}
	}
	return 0
}

// TestSettledKeepsOnlySentReactions: a reaction is kept in the crowd
// (ReactionFeed) once the target answered it 2xx; one that never reached
// the target gives its pair back; an Undo answered 2xx frees the pair for
// the run's draws and the crowd's state; Creates count as diverted once
// sent.
func TestSettledKeepsOnlySentReactions(t *testing.T) {
	for _, c := range []struct {
		name     string
		d        record.Outcome
		kept     bool // in the crowd's reactions
		released bool // the pair may be drawn again
	}{
		// Answered 202: the SUT has it.
		{"202", record.Outcome{Sent: true, Class: record.Class202}, true, false},
		// Refused: not kept, and not drawn again (the SUT saw it).
		{"500", record.Outcome{Sent: true, Class: record.ClassOther5xx}, false, false},
		// No answer in time: the SUT may have it; not drawn again.
		{"timeout", record.Outcome{Sent: true, Class: record.ClassTimeout}, false, false},
		// Refused connection: the SUT never got it.
		{"connection refused", record.Outcome{Sent: true, Class: record.ClassConnError}, false, true},
		// Interrupted in flight.
		{"aborted", record.Outcome{Sent: true, Aborted: true}, false, true},
		// Dropped (no free slot) or left in a buffer at the end.
		{"never sent", record.Outcome{}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := testWorld(t, 1, 1)
			personas := fakePersonas(1)
			personas[0].Posts = personas[0].Posts[:1] // one sender, one post: a single pair
			g := mustGenerator(t, GeneratorConfig{Senders: w.Origins[0].Persons(), Personas: personas, Mix: record.Mix{Like: 1}})
			feed := NewReactionFeed(WorldReactions(w), OutboxFeedOptions{})
			s := g.Stream()
			d := mustDraft(t, s)
			p := (&Ticket{Vocab: d.Vocab}).Attach(&flood.Prepared{Type: d.Type})
			Settle(g.Settled, feed.Settled).Settled(p.Token, c.d)
			if st := feed.Close(context.Background()); st.Failed != 0 {
				t.Fatalf("feed: %+v", st)
			}
			if kept := w.Reactions.Has(d.Sender.ID, d.Object, actors.ReactionLike); kept != c.kept {
				t.Errorf("kept by the crowd %v, want %v", kept, c.kept)
			}
			again := mustDraft(t, s)
			if (again.Type == record.TypeLike) != c.released {
				t.Errorf("second draw is a %s; want the pair released %v", again.Type, c.released)
			}
		})
	}
	t.Run("an Undo frees the pair", func(t *testing.T) {
		w := testWorld(t, 1, 1)
		personas := fakePersonas(1)
		personas[0].Posts = personas[0].Posts[:1]
		g := mustGenerator(t, GeneratorConfig{Senders: w.Origins[0].Persons(), Personas: personas, Mix: record.Mix{Like: 1}})
		feed := NewReactionFeed(WorldReactions(w), OutboxFeedOptions{})
		settle := Settle(g.Settled, feed.Settled).Settled
		ok := record.Outcome{Sent: true, Class: record.Class202}
		s := g.Stream()
		like := mustDraft(t, s)
		settle((&Ticket{Vocab: like.Vocab}).Attach(&flood.Prepared{Type: like.Type}).Token, ok)
		if d := mustDraft(t, s); d.Type != record.TypeCreate {
			t.Fatalf("the pair taken: a %s, want a Create", d.Type)
		}
		undo := *like.Vocab.Reaction
		undo.Undone = true
		settle((&Ticket{Vocab: &VocabSent{Reaction: &undo}}).Attach(&flood.Prepared{Type: record.TypeUndo}).Token, ok)
		feed.Close(context.Background())
		if d := mustDraft(t, s); d.Type != record.TypeLike {
			t.Errorf("after the Undo: a %s, want the Like again", d.Type)
		}
		if w.Reactions.Has(like.Sender.ID, like.Object, actors.ReactionLike) {
			t.Error("the crowd still keeps the undone Like")
		}
	})
	t.Run("diverted counts when sent", func(t *testing.T) {
		g := mustGenerator(t, GeneratorConfig{Senders: fakeSenders(2), Personas: fakePersonas(1), Mix: record.Mix{Like: 1}})
		for _, c := range []struct {
			from record.ActivityKind
			d    record.Outcome
		}{
			{record.TypeLike, record.Outcome{}}, // never sent: not counted
			{record.TypeLike, record.Outcome{Sent: true, Class: record.Class202}},
			{record.TypeAnnounce, record.Outcome{Sent: true, Class: record.Class401}},
		} {
			g.Settled(TicketOf((&Ticket{Vocab: &VocabSent{Note: true, DivertedFrom: c.from}}).Attach(&flood.Prepared{Type: record.TypeCreate})), c.d)
		}
		if likes, boosts := g.ReactionsDiverted(); likes != 1 || boosts != 1 {
			t.Errorf("ReactionsDiverted %d, %d; want 1 Like and 1 Announce", likes, boosts)
		}
	})
}

// TestUndoOfAReactionNamesIt: an Undo of a Like the run sent carries the
// reaction it takes back, so the crowd frees that very pair.
func TestUndoOfAReactionNamesIt(t *testing.T) {
	w := testWorld(t, 1, 2)
	g := mustGenerator(t, GeneratorConfig{Senders: w.Origins[0].Persons(), Personas: fakePersonas(1), Mix: record.Mix{Like: 1, Undo: 1},
		Start: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)})
	s := g.Stream()
	ok := record.Outcome{Sent: true, Class: record.Class202}
	var sent *actors.Reaction
	for range 50 {
		d := mustDraft(t, s)
		g.Settled(TicketOf((&Ticket{Vocab: d.Vocab}).Attach(&flood.Prepared{Type: d.Type})), ok)
		switch {
		case d.Type == record.TypeLike && sent == nil:
			sent = d.Vocab.Reaction
		case d.Type == record.TypeUndo && d.Vocab.Reaction != nil:
			r := d.Vocab.Reaction
			if !r.Undone || r.Kind != actors.ReactionLike || r.Actor != d.Sender.ID || r.ID != d.Object {
				t.Fatalf("the Undo of %s names %+v", d.Object, r)
			}
			return
		}
	}
	t.Fatalf("no Undo of a Like in 50 draws (first Like %+v)", sent)
}

// TestForgedDraftsClaimNothing: a forged draft is not its sender's doing,
// so it takes nothing an honest one would: a forged Like speaks for a
// leaver and claims no crowd actor's pair, and a forged Delete leaves its
// object as it was (a correct SUT refuses it; the object must stay for
// the SUT to tell).
func TestForgedDraftsClaimNothing(t *testing.T) {
	w := testWorld(t, 1, 3)
	for _, tc := range []struct {
		name string
		mix  record.Mix
	}{
		// Likes of the personas' posts, every one forged.
		{"like", record.Mix{Like: 1}},
		// Deletes, every one forged: account deletions of leavers.
		{"delete", record.Mix{Delete: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deletions := NewDeletions(WorldChanges(w), 0)
			g := mustGenerator(t, GeneratorConfig{Senders: w.Actors(), Personas: fakePersonas(1), Seed: 5, Mix: tc.mix,
				Draws: &Draws{Tamper: []signing.Tamper{signing.TamperBody}, TamperShare: 1}, Vocab: VocabConfig{Deletions: deletions}})
			s := g.Stream()
			for range 10 {
				if d := mustDraft(t, s); d.Forgery == nil {
					t.Fatalf("drafted an honest %s", d.Type)
				}
			}
			pairs := 0
			g.reacted.Range(func(_, _ any) bool { pairs++; return true })
			st := deletions.Close(t.Context())
			if pairs != 0 || st.Marked != 0 {
				t.Errorf("10 forged drafts claimed %d reaction pairs and marked %d objects deleted, want none", pairs, st.Marked)
			}
		})
	}
}
