package traffic

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// allVerbs is a mix of every kind the flood sends.
func allVerbs() record.Mix {
	return record.Mix{Create: 1, Like: 1, Follow: 1, Announce: 1, Undo: 1, Delete: 1, Update: 1, Reply: 1, Media: 1}
}

// sentAct is what the test keeps of an activity answered 2xx.
type sentAct struct {
	typ, actor, inbox string
}

// TestVocabularyActsOnWhatTheRunSent drafts every verb, answers each 2xx,
// and checks that Undos, Updates and Deletes act on what the run sent
// (from its sender, to its persona), that replies hang below threads the
// crowd serves, that each change reaches the crowd, and that each id the
// crowd serves regenerates the activity sent.
func TestVocabularyActsOnWhatTheRunSent(t *testing.T) {
	w := testWorld(t, 2, 2)
	var mu sync.Mutex
	var unfollowed []FollowRegistration
	deletions := NewDeletions(WorldChanges(w), 0)
	g := mustGenerator(t, GeneratorConfig{Senders: w.Actors(), Personas: fakePersonas(3), Mix: allVerbs(), Seed: 1,
		Vocab: VocabConfig{ReplyDepth: 3, Mentions: 1, Hashtags: 2, Deletions: deletions, OnUnfollow: func(f FollowRegistration) {
			mu.Lock()
			defer mu.Unlock()
			unfollowed = append(unfollowed, f)
		}}})
	feed := NewChangeFeed(WorldChanges(w), OutboxFeedOptions{Every: time.Millisecond})
	s := g.Stream()
	sent := map[string]sentAct{} // activity id → what was sent
	notes := map[string]string{} // note id → the persona's inbox it went to
	kinds := map[record.ActivityKind]int{}
	var deleted []string
	for range 3000 {
		d := mustDraft(t, s)
		kinds[d.Type]++
		act := checkActsOnSent(t, w, d, sent, notes, &deleted)
		checkServed(t, w, d, act.actor)
		p := (&Ticket{Vocab: d.Vocab}).Attach(&flood.Prepared{Type: d.Type, URL: d.URL, Body: d.Body})
		dl := record.Outcome{Sent: true, Class: record.Class202}
		g.Settled(TicketOf(p), dl)
		feed.Settled(TicketOf(p), dl)
		sent[d.ID] = act
		if d.Vocab != nil && d.Vocab.Note {
			notes[d.Object] = d.URL.String()
		}
	}
	if st := feed.Close(context.Background()); st.Failed > 0 {
		t.Fatalf("changes not recorded: %+v", st)
	}
	if st := deletions.Close(context.Background()); st.Failed > 0 {
		t.Fatalf("deletions not recorded: %+v", st)
	}
	for _, k := range allVerbs().Weights() {
		if kinds[k.Kind] == 0 {
			t.Errorf("no %s drafted in 3000", k.Kind)
		}
	}
	for _, id := range deleted {
		if _, gone := w.Changes.Deleted(id); !gone {
			t.Errorf("%s was deleted, but the crowd does not answer it gone", id)
		}
	}
	if len(unfollowed) == 0 || len(deleted) == 0 {
		t.Errorf("%d Follows undone, %d objects deleted: want some of each", len(unfollowed), len(deleted))
	}
}

// checkActsOnSent checks one draft against what the run sent: an Undo of
// an activity answered 2xx, from its actor to its persona; an Update or
// Delete of a note the run sent (by its author to its persona), of a
// leaver (self-signed) or of the actor's own profile; a reply three levels
// below its root. It keeps the ids deleted and answers the activity read.
func checkActsOnSent(t *testing.T, w *actors.World, d Draft, sent map[string]sentAct, notes map[string]string, deleted *[]string) sentAct {
	t.Helper()
	var act struct {
		Type   string          `json:"type"`
		Actor  string          `json:"actor"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(d.Body, &act); err != nil {
		t.Fatal(err)
	}
	var obj struct {
		ID, Type, InReplyTo string
	}
	_ = json.Unmarshal(act.Object, &obj)
	var objID string
	_ = json.Unmarshal(act.Object, &objID)
	switch d.Type {
	case record.TypeUndo:
		was, ok := sent[obj.ID]
		if !ok || was.actor != act.Actor || was.inbox != d.URL.String() || was.typ != obj.Type {
			t.Fatalf("Undo of %s %s by %s: not an activity of this run answered 2xx (%+v)", obj.Type, obj.ID, act.Actor, was)
		}
		delete(sent, obj.ID)
	case record.TypeDelete, record.TypeUpdate:
		switch {
		case objID != "" && objID == act.Actor && strings.Contains(objID, "/users/leaver_"):
			*deleted = append(*deleted, objID) // an account deletion, self-signed
		case obj.Type == "Person" && obj.ID == act.Actor:
		case notes[obj.ID] == d.URL.String() && strings.HasPrefix(obj.ID, act.Actor+"/notes/"):
			if d.Type == record.TypeDelete {
				*deleted = append(*deleted, obj.ID)
				delete(notes, obj.ID)
			}
		default:
			t.Fatalf("%s of %s %q by %s: not a note of this run, a leaver or the actor itself", d.Type, obj.Type, obj.ID+objID, act.Actor)
		}
	case record.TypeReply:
		if depth := threadDepth(t, w, obj.InReplyTo); depth != 3 {
			t.Fatalf("a reply %d below its thread's root, want 3", depth)
		}
	}
	return sentAct{typ: act.Type, actor: act.Actor, inbox: d.URL.String()}
}

// threadDepth follows a reply's parents through the crowd's regenerated
// notes up to the root (a persona's post, or a crowd note that answers
// none) and counts the levels. Every crowd note of the thread is marked a
// thread's (so its fetch is credited to the Reply, not to a Create).
func threadDepth(t *testing.T, w *actors.World, parent string) int {
	t.Helper()
	depth := 1
	for strings.Contains(parent, "/notes/") {
		owner, _, _ := strings.Cut(parent, "/notes/")
		a, ok := w.ActorByID(owner)
		if !ok {
			t.Fatalf("parent %s: no crowd actor", parent)
		}
		spec, err := a.NoteSpecOf(parent)
		if err != nil {
			t.Fatalf("parent %s is not served: %v", parent, err)
		}
		if !spec.Thread {
			t.Fatalf("parent %s is not marked a thread's: its fetch would be a Create's", parent)
		}
		if spec.InReplyTo == "" {
			return depth
		}
		parent, depth = spec.InReplyTo, depth+1
	}
	return depth
}

// checkServed: the crowd serves the activity sent at its id, the same
// bytes, unless its id is a fragment (a self-Delete, a profile Update, as
// Mastodon's).
func checkServed(t *testing.T, w *actors.World, d Draft, actor string) {
	t.Helper()
	if strings.Contains(d.ID, "#") {
		return
	}
	a, ok := w.ActorByID(actor)
	if !ok {
		t.Fatalf("%s: sender %s is no crowd actor", d.Type, actor)
	}
	obj, err := a.Object(strings.TrimPrefix(d.ID, a.ID))
	if err != nil {
		t.Fatalf("%s %s is not served: %v", d.Type, d.ID, err)
	}
	b, _ := json.Marshal(obj)
	var got, want any
	_ = json.Unmarshal(b, &got)
	_ = json.Unmarshal(d.Body, &want)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("%s %s: served\n%s\nsent\n%s", d.Type, d.ID, gb, wb)
	}
}

// TestUndoWithNothingToUndoIsAnAnnounce: early in a run, nothing is left
// to undo; the draft is an Announce, counted once sent.
func TestUndoWithNothingToUndoIsAnAnnounce(t *testing.T) {
	w := testWorld(t, 1, 2)
	g := mustGenerator(t, GeneratorConfig{Senders: w.Actors(), Personas: fakePersonas(1), Mix: record.Mix{Undo: 1}, Seed: 2})
	d := mustDraft(t, g.Stream())
	if d.Type != record.TypeAnnounce || d.Vocab == nil || !d.Vocab.UndoDiverted {
		t.Fatalf("draft %s %+v, want an Announce in place of the Undo", d.Type, d.Vocab)
	}
	g.Settled(TicketOf((&Ticket{Vocab: d.Vocab}).Attach(&flood.Prepared{Type: d.Type, URL: d.URL})), record.Outcome{})
	if g.UndosDiverted() != 0 {
		t.Error("a draft never sent is counted")
	}
	g.Settled(TicketOf((&Ticket{Vocab: d.Vocab}).Attach(&flood.Prepared{Type: d.Type, URL: d.URL})), record.Outcome{Sent: true, Class: record.Class202})
	if g.UndosDiverted() != 1 {
		t.Errorf("UndosDiverted = %d, want 1", g.UndosDiverted())
	}
	next := mustDraft(t, g.Stream())
	if next.Type != record.TypeUndo {
		t.Errorf("with an Announce sent, the next Undo is %s", next.Type)
	}
}

// TestVocabConfigNamesItsFlag: each bad value is refused naming its flag.
func TestVocabConfigNamesItsFlag(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  VocabConfig
		flag string
	}{
		{"a thread too deep", VocabConfig{ReplyDepth: MaxReplyDepth + 1}, "--reply-depth"},
		{"too many mentions", VocabConfig{Mentions: actors.MaxMentions + 1}, "--mentions"},
		{"negative hashtags", VocabConfig{Hashtags: -1}, "--hashtags"},
		{"images too large", VocabConfig{Media: actors.MediaSpec{Count: 1, Width: 5000, Height: 1}}, "--media-size"},
	} {
		_, err := CheckVocab(c.cfg)
		var ue *record.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%s: %v, want a usage error naming %s", c.name, err, c.flag)
		}
	}
	if _, _, err := ParseMediaSize("320x"); err == nil {
		t.Error("--media-size 320x accepted")
	}
}

// TestPoolsStayBounded: however many notes a run sends, the generator
// keeps poolSize of them.
func TestPoolsStayBounded(t *testing.T) {
	var p sentPool
	for i := range 3 * poolSize {
		p.add(sentItem{id: string(rune(i))})
	}
	if len(p.items) != poolSize {
		t.Fatalf("pool holds %d, want %d", len(p.items), poolSize)
	}
}

// FuzzParseMediaSize: what reads is a size the crowd serves, or a usage error.
func FuzzParseMediaSize(f *testing.F) {
	for _, s := range []string{"320x240", " 1X1 ", "2048x2049", "x", "-1x5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, h, err := ParseMediaSize(s)
		var ue *record.UsageError
		switch {
		case err != nil && !errors.As(err, &ue):
			t.Fatalf("%q: %v is not a usage error", s, err)
		case err == nil && (w < 1 || h < 1 || w > actors.MaxMediaSide || h > actors.MaxMediaSide):
			t.Fatalf("%q read as %dx%d", s, w, h)
		}
	})
}
