package actors

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// vocabSpec is the note the vocabulary's goldens are about.
func vocabSpec() NoteSpec {
	return NoteSpec{Published: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Seq: 7, Bytes: 80,
		MentionID: "https://sut.test/users/load0", MentionHandle: "@load0@sut.test"}
}

// richSpec is a reply with every extra: a second mention, hashtags, images.
func richSpec(parent string) NoteSpec {
	s := vocabSpec()
	s.NoteExtras = NoteExtras{InReplyTo: parent,
		Mentions: []Mention{{ID: "https://sut.test/users/load1", Handle: "@load1@sut.test"}},
		Hashtags: []string{"crowd", "Load_Test"}, Media: MediaSpec{Count: 2, Width: 64, Height: 48}}
	return s
}

func TestVocabularyMatchesGoldenFiles(t *testing.T) {
	w := testWorld(t)
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	bob, _ := w.ActorByID("https://flood1.test/users/bob")
	spec := vocabSpec()
	at := spec.Published.Add(time.Hour)
	like := alice.Like(LikeSpec{Published: spec.Published, Seq: 3, Object: "https://sut.test/users/load0/posts/1"})
	boost := alice.Announce(AnnounceSpec{Published: spec.Published, Seq: 4, Object: "https://sut.test/users/load0/posts/1",
		Author: "https://sut.test/users/load0"})
	parent := bob.NoteID(vocabSpec())
	leaver := alice.Leaver(12345)
	follow := FollowSpec{Published: spec.Published, Seq: 5, Object: "https://sut.test/users/load0"}
	media := vocabSpec()
	media.Media = MediaSpec{Count: 2, Width: 64, Height: 48}
	for _, c := range []struct {
		file string
		doc  any
	}{
		{"announce.json", boost},                                      // a boost of a persona's post
		{"like.json", like},                                           // a Like of a persona's post
		{"undo_like.json", alice.Undo(like)},                          // the Like embedded
		{"undo_follow.json", alice.UndoFollow(follow)},                // the Follow embedded: an unfollow
		{"media.json", alice.CreateNote(media)},                       // a note with images and nothing else of a reply's
		{"undo_announce.json", alice.Undo(boost)},                     // the Announce embedded, its audience kept
		{"delete_note.json", alice.DeleteNote(alice.NoteID(spec))},    // a Tombstone embedded, as Mastodon
		{"delete_actor.json", leaver.DeleteSelf()},                    // self-signed: actor == object
		{"update_note.json", alice.UpdateNote(spec, 2, at)},           // the second edit: updated, new content
		{"update_person.json", alice.UpdateProfile(1, at)},            // a profile change
		{"tombstone.json", Tombstone(alice.NoteID(spec), "Note", at)}, // what a deleted note's id answers (410)
		{"reply.json", alice.CreateNote(richSpec(parent))},            // a reply with mentions, hashtags, images
		{"actor_leaver.json", leaver.Document()},                      // an actor made to be deleted
	} {
		b, err := MarshalDoc(c.doc)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, c.file, b)
	}
}

func TestVocabularyIsRegeneratedFromItsIDs(t *testing.T) {
	w := testWorld(t)
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	spec := vocabSpec()
	at := spec.Published.Add(time.Hour)
	like := alice.Like(LikeSpec{Published: spec.Published, Seq: 3, Object: "https://sut.test/notes/1"})
	boost := alice.Announce(AnnounceSpec{Published: spec.Published, Seq: 4, Object: "https://sut.test/notes/1", Author: "https://sut.test/users/a"})
	rich := richSpec(alice.NoteID(spec))
	media := vocabSpec()
	media.Media = MediaSpec{Count: 1, Width: 320, Height: 240}
	for _, c := range []struct {
		name string
		want Activity
	}{
		{"an Announce", boost},
		{"the Undo of a Like", alice.Undo(like)},
		{"the Undo of an Announce", alice.Undo(boost)},
		{"the Undo of a Follow", alice.UndoFollow(FollowSpec{Published: spec.Published, Seq: 5, Object: "https://sut.test/users/a"})},
		{"the Create of a note with images", alice.CreateNote(media)},
		{"an Update of a note", alice.UpdateNote(spec, 3, at)},
		{"the Create of a reply with extras", alice.CreateNote(rich)},
	} {
		obj, err := alice.Object(strings.TrimPrefix(c.want.ID, alice.ID))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := MarshalDoc(obj)
		want, _ := MarshalDoc(c.want)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: regenerated\n%s\nwant\n%s", c.name, got, want)
		}
	}
	// A Delete's id is served too (its time is the Changes'), and a note
	// of old keeps its id: extras change nothing for a note without them.
	if _, err := alice.Object(strings.TrimPrefix(alice.NoteID(spec), alice.ID) + "/delete"); err != nil {
		t.Errorf("the Delete of a note: %v", err)
	}
	got, err := alice.NoteSpecOf(alice.NoteID(rich))
	if err != nil || got.InReplyTo != rich.InReplyTo || len(got.Hashtags) != 2 || got.Media != rich.Media || len(got.Mentions) != 1 {
		t.Errorf("NoteSpecOf(rich) = %+v, %v", got, err)
	}
}

func TestExtrasRefuseWhatNoNoteCarries(t *testing.T) {
	for _, c := range []struct {
		name string
		x    NoteExtras
	}{
		{"a hashtag with a space", NoteExtras{Hashtags: []string{"a b"}}},
		{"too many images", NoteExtras{Media: MediaSpec{Count: MaxMedia + 1, Width: 1, Height: 1}}},
		{"an image too wide", NoteExtras{Media: MediaSpec{Count: 1, Width: MaxMediaSide + 1, Height: 1}}},
		{"an image with no height", NoteExtras{Media: MediaSpec{Count: 1, Width: 10}}},
	} {
		if CheckExtras(c.x) == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if err := CheckExtras(richSpec("https://sut.test/notes/1").NoteExtras); err != nil {
		t.Errorf("a valid reply: %v", err)
	}
}

func TestLeaversAreFoundByNameAndIDWithTheirOwnersKey(t *testing.T) {
	w := testWorld(t)
	o, _ := w.Origin("flood1.test")
	bob, _ := o.Actor("bob")
	l := bob.Leaver(99)
	for _, find := range []func() (*Actor, bool){
		func() (*Actor, bool) { return o.Actor(l.Name) },
		func() (*Actor, bool) { return w.ActorByID(l.ID) },
		func() (*Actor, bool) { return w.ActorByKeyID(l.KeyID) },
	} {
		got, ok := find()
		if !ok || got.ID != l.ID || got.Key != bob.Key || !got.IsLeaver() {
			t.Fatalf("leaver %s not found as itself: %+v %v", l.ID, got, ok)
		}
	}
	for _, name := range []string{"leaver_9_1", "leaver_1_", "leaver_1_01", "leaver_x_1", "leaver_1"} {
		if _, ok := o.Actor(name); ok {
			t.Errorf("%s: found, but no leaver has that name", name)
		}
	}
}

func TestChangesAnswerTombstonesAndLatestVersionsAcrossRestarts(t *testing.T) {
	w := testWorld(t)
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	spec := vocabSpec()
	id := alice.NoteID(spec)
	other := alice.NoteID(richSpec(""))
	leaver := alice.Leaver(7)
	at := spec.Published.Add(time.Hour).Format(time.RFC3339)
	rel := strings.TrimPrefix(id, alice.ID)
	must(t, w.RecordChanges([]Change{{ID: other, Version: 2, Updated: at}, {ID: other, Version: 1, Updated: at}}))
	must(t, w.RecordChanges([]Change{{ID: id, Deleted: at}, {ID: leaver.ID, Deleted: at}, {ID: alice.ID, Version: 1, Updated: at}}))
	// A deletion whose Delete was never sent is taken back: a note, an
	// edited note (its edit stays), a leaver.
	unsent, unsentLeaver := alice.NoteID(NoteSpec{Seq: 99, MentionID: spec.MentionID, MentionHandle: spec.MentionHandle}), alice.Leaver(8)
	must(t, w.RecordChanges([]Change{{ID: unsent, Deleted: at}, {ID: unsentLeaver.ID, Deleted: at}, {ID: other, Deleted: at},
		{ID: unsent, Restored: true}, {ID: unsentLeaver.ID, Restored: true}}))
	must(t, w.RecordChanges([]Change{{ID: other, Restored: true}}))
	for _, c := range []struct {
		name string
		ch   Change
	}{
		{"a world actor deleted", Change{ID: alice.ID, Deleted: at}},
		{"no object of the crowd", Change{ID: "https://sut.test/notes/1", Deleted: at}},
		{"a deletion and an edit at once", Change{ID: id, Deleted: at, Version: 1, Updated: at}},
		{"an edit with no time", Change{ID: id, Version: 1}},
		{"a world actor restored", Change{ID: alice.ID, Restored: true}},           // it was never deleted
		{"a restoration with a time", Change{ID: id, Restored: true, Deleted: at}}, // one or the other
	} {
		if err := w.RecordChanges([]Change{c.ch}); !errors.Is(err, ErrChange) {
			t.Errorf("%s: %v, want ErrChange", c.name, err)
		}
	}
	check := func(w *World) {
		t.Helper()
		for _, path := range []string{rel, rel + "/activity", rel + "/replies"} {
			if ts, gone := w.Gone(alice, path); !gone || ts.ID != id || ts.Type != "Tombstone" {
				t.Errorf("%s: %+v %v, want the note's Tombstone", path, ts, gone)
			}
		}
		if _, gone := w.Gone(alice, rel+"/delete"); gone {
			t.Error("the Delete itself must stay served")
		}
		if ts, gone := w.Gone(leaver, ""); !gone || ts.ID != leaver.ID || ts.FormerType != "Person" {
			t.Errorf("the leaver: %+v %v", ts, gone)
		}
		cur, err := w.Current(alice, strings.TrimPrefix(other, alice.ID))
		if n, ok := cur.(Note); err != nil || !ok || n.Updated == "" || !strings.HasPrefix(n.Content, "<p>Edit 2.</p>") {
			t.Errorf("the edited note: %+v %v, want its second edit", cur, err)
		}
		if p := w.Profile(alice); p == nil || p.Updated == "" {
			t.Errorf("the edited profile: %+v", p)
		}
		for _, c := range []struct {
			a    *Actor
			path string
		}{{alice, strings.TrimPrefix(unsent, alice.ID)}, {alice.Leaver(8), ""}, {alice, strings.TrimPrefix(other, alice.ID)}} {
			if ts, gone := w.Gone(c.a, c.path); gone {
				t.Errorf("%s%s: restored, yet %+v", c.a.ID, c.path, ts)
			}
		}
	}
	check(w)
	state := w.Config.StateDir
	must(t, w.Close())
	w2, err := Open(Config{Origins: 1, Actors: 2, Domain: "flood%d.test", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	alice, _ = w2.ActorByID(alice.ID)
	leaver = alice.Leaver(7)
	check(w2)
}

func TestGeneratedImagesAreDeterministicPNGsOfTheirSize(t *testing.T) {
	url := MediaURL("flood1.test", 64, 48, "abc-1")
	w, h, seed, err := ParseMediaPath(strings.TrimPrefix(url, "https://flood1.test"))
	if err != nil || w != 64 || h != 48 || seed != "abc-1" {
		t.Fatalf("ParseMediaPath(%s) = %d %d %q %v", url, w, h, seed, err)
	}
	a, err := NewImages(1).PNG(w, h, seed)
	must(t, err)
	im := NewImages(1)
	b, _ := im.PNG(w, h, seed)
	c, _ := im.PNG(w, h, seed) // from the kept pixels
	other, _ := im.PNG(w, h, "abc-2")
	img, err := png.Decode(bytes.NewReader(c))
	if err != nil || !bytes.Equal(a, b) || !bytes.Equal(b, c) || img.Bounds().Dx() != 64 || img.Bounds().Dy() != 48 {
		t.Fatalf("image: %v, same bytes %v %v", err, bytes.Equal(a, b), bytes.Equal(b, c))
	}
	if bytes.Equal(c, other) {
		t.Error("two URLs answer the same bytes")
	}
	if _, err := png.Decode(bytes.NewReader(other)); err != nil {
		t.Errorf("another seed's image: %v", err)
	}
	for _, p := range []string{"/media/0x1/a.png", "/media/1x3000/a.png", "/media/1x1/a b.png", "/media/1x1/.png", "/media/1x1/a.gif"} {
		if _, _, _, err := ParseMediaPath(p); !errors.Is(err, ErrNoObject) {
			t.Errorf("%s: %v, want ErrNoObject", p, err)
		}
	}
}

func FuzzNoteToken(f *testing.F) {
	o := &Origin{Host: "flood1.test"}
	a := &Actor{Origin: o, Name: "alice", Kind: KindPerson, ID: "https://flood1.test/users/alice"}
	f.Add(strings.TrimPrefix(a.NoteID(richSpec("https://sut.test/notes/1")), a.ID+"/notes/"))
	f.Add(strings.TrimPrefix(a.NoteID(vocabSpec()), a.ID+"/notes/"))
	f.Fuzz(func(t *testing.T, tok string) {
		spec, err := noteSpecOf(tok)
		if err != nil {
			return
		}
		// Whatever reads must be a note that regenerates from its own id.
		again, err := a.NoteSpecOf(a.NoteID(spec))
		if err != nil || a.NoteID(again) != a.NoteID(spec) {
			t.Fatalf("%q read as %+v, which does not regenerate: %v", tok, spec, err)
		}
	})
}

// FuzzParseMediaPath: whatever path reads as an image names one the crowd
// can generate, and MediaURL writes it back to the same path.
func FuzzParseMediaPath(f *testing.F) {
	f.Add("/media/64x48/abc-1.png")
	f.Add("/media/0x1/a.png")
	f.Add("/media/2048x2048/" + strings.Repeat("a", 64) + ".png")
	f.Fuzz(func(t *testing.T, path string) {
		w, h, seed, err := ParseMediaPath(path)
		if err != nil {
			return
		}
		if got := strings.TrimPrefix(MediaURL("o.test", w, h, seed), "https://o.test"); got != path {
			t.Fatalf("%q read as %dx%d %q, written back as %q", path, w, h, seed, got)
		}
		if w > 64 || h > 64 {
			return // generating large images is slow; their bounds are checked above
		}
		if _, err := NewImages(1).PNG(w, h, seed); err != nil {
			t.Fatalf("%q read, but no image: %v", path, err)
		}
	})
}

// TestOutboxLeavesOutDeletedNotesAndShowsEdits: the outbox lists what an
// actor sent as it stands now.
func TestOutboxLeavesOutDeletedNotesAndShowsEdits(t *testing.T) {
	w := testWorld(t)
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	kept, gone := vocabSpec(), vocabSpec()
	gone.Seq = 8
	must(t, w.RecordSent([]SentNote{{Actor: alice.ID, Note: alice.NoteID(kept)}, {Actor: alice.ID, Note: alice.NoteID(gone)}}))
	at := "2026-12-01T00:00:00Z"
	must(t, w.RecordChanges([]Change{{ID: alice.NoteID(gone), Deleted: at}, {ID: alice.NoteID(kept), Version: 1, Updated: at}}))
	page := w.OutboxDoc(alice, 1)
	if len(page.OrderedItems) != 1 {
		t.Fatalf("outbox lists %d items, want the one not deleted", len(page.OrderedItems))
	}
	if n := page.OrderedItems[0].Object.(Note); n.ID != alice.NoteID(kept) || n.Updated == "" {
		t.Errorf("outbox lists %s updated %q, want the kept note at its edit", n.ID, n.Updated)
	}
}

// TestChangesJournalIsCompacted: many edits of one note leave, after a
// restart, one line for it, and its latest version.
func TestChangesJournalIsCompacted(t *testing.T) {
	w := testWorld(t)
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	id := alice.NoteID(vocabSpec())
	for v := 1; v <= 1500; v++ {
		must(t, w.RecordChanges([]Change{{ID: id, Version: v, Updated: "2026-12-01T00:00:00Z"}}))
	}
	state := w.Config.StateDir
	must(t, w.Close())
	w2, err := Open(Config{Origins: 1, Actors: 2, Domain: "flood%d.test", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	b, err := os.ReadFile(filepath.Join(state, ChangesFile))
	must(t, err)
	if n := bytes.Count(b, []byte("\n")); n != 1 {
		t.Errorf("the journal has %d lines after compaction, want 1", n)
	}
	if v, _ := w2.Changes.Version(id); v != 1500 {
		t.Errorf("version %d after compaction, want 1500", v)
	}
}

// TestChangesJournalDamageStopsTheStart: a damaged line (not the last) is
// never dropped silently: opening names the file and line; a torn last
// line is dropped.
func TestChangesJournalDamageStopsTheStart(t *testing.T) {
	w := testWorld(t)
	state := w.Config.StateDir
	must(t, w.Close())
	path := filepath.Join(state, ChangesFile)
	must(t, os.WriteFile(path, []byte("{\"id\":\"x\",\"deleted\":\"yesterday\"}\n{\"id\":\"y\"}\n"), 0o600))
	if _, err := Open(Config{Origins: 1, Actors: 2, Domain: "flood%d.test", StateDir: state}); err == nil || !strings.Contains(err.Error(), ChangesFile+":1") {
		t.Errorf("a damaged first line: %v, want an error naming %s:1", err, ChangesFile)
	}
	must(t, os.WriteFile(path, []byte(`{"id":"x","deleted":"2026-01-01T00:00:00Z"}`+"\n"+`{"id":"y","del`), 0o600))
	w2, err := Open(Config{Origins: 1, Actors: 2, Domain: "flood%d.test", StateDir: state})
	if err != nil {
		t.Fatalf("a torn last line: %v", err)
	}
	defer w2.Close()
	if _, gone := w2.Changes.Deleted("x"); !gone {
		t.Error("the line before the torn one was lost")
	}
}

// BenchmarkImages: an image made from scratch against one from the pixels
// kept for its size (what the origins serve), at the default size and the
// largest:
//
//	go test -run '^$' -bench Images ./actors/
func BenchmarkImages(b *testing.B) {
	for _, size := range [][2]int{{320, 240}, {2048, 1536}} {
		name := fmt.Sprintf("%dx%d", size[0], size[1])
		b.Run("generate/"+name, func(b *testing.B) {
			for i := range b.N {
				if _, err := NewImages(1).PNG(size[0], size[1], strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("kept/"+name, func(b *testing.B) {
			im := NewImages(1)
			for i := range b.N {
				if _, err := im.PNG(size[0], size[1], strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEveryAttachmentHasItsOwnURL: servers deduplicate downloads by URL
// (and some by the bytes' hash), so no two attachments of the crowd share
// either, even between notes of one origin to one persona with the same
// extras; each URL answers a PNG of the size its attachment declares.
func TestEveryAttachmentHasItsOwnURL(t *testing.T) {
	w := testWorld(t)
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	bob, _ := w.ActorByID("https://flood1.test/users/bob")
	im := NewImages(1)
	urls, bodies := map[string]string{}, map[string]string{}
	for _, c := range []struct {
		a   *Actor
		seq uint64
	}{
		{alice, 1}, // two notes of one actor, one second, one persona: only the seq differs
		{alice, 2},
		{bob, 1},   // another actor of the origin, the same spec
		{alice, 3}, // a third, so three images each
	} {
		spec := vocabSpec()
		spec.Seq = c.seq
		spec.Media = MediaSpec{Count: 3, Width: 16, Height: 12}
		n := c.a.Note(spec)
		if len(n.Attachment) != 3 {
			t.Fatalf("%d attachments, want 3", len(n.Attachment))
		}
		for _, att := range n.Attachment {
			img := att.(Image)
			if prev, dup := urls[img.URL]; dup {
				t.Errorf("%s: the URL of an attachment of %s too", img.URL, prev)
			}
			urls[img.URL] = n.ID
			wd, ht, seed, err := ParseMediaPath(strings.TrimPrefix(img.URL, "https://flood1.test"))
			must(t, err)
			b, err := im.PNG(wd, ht, seed)
			must(t, err)
			if prev, dup := bodies[string(b)]; dup {
				t.Errorf("%s answers the bytes of %s", img.URL, prev)
			}
			bodies[string(b)] = img.URL
			dec, err := png.Decode(bytes.NewReader(b))
			if err != nil || img.MediaType != "image/png" || dec.Bounds().Dx() != img.Width || dec.Bounds().Dy() != img.Height {
				t.Errorf("%s: %v, a %s of %v for %dx%d", img.URL, err, img.MediaType, dec.Bounds(), img.Width, img.Height)
			}
		}
	}
}

// TestThreadMarkKeepsOtherIDs: a thread's parent carries its mark in its
// id and regenerates with it; a note without the mark keeps the id it had
// before marks existed (the first encoding of extras, or none).
func TestThreadMarkKeepsOtherIDs(t *testing.T) {
	a := &Actor{ID: "https://flood1.test/users/alice", Kind: KindPerson}
	for _, c := range []struct {
		name    string
		spec    NoteSpec
		version byte // the extras' encoding; 0 for none
	}{
		{"a plain note", vocabSpec(), 0},                                                                 // no extras at all
		{"a reply", richSpec("https://sut.test/notes/1"), extrasV1},                                      // extras, no mark
		{"a thread's root", func() NoteSpec { s := vocabSpec(); s.Thread = true; return s }(), extrasV2}, // the mark alone
		{"a thread's parent", func() NoteSpec { s := richSpec("https://sut.test/notes/1"); s.Thread = true; return s }(), extrasV2},
	} {
		id := a.NoteID(c.spec)
		got, err := a.NoteSpecOf(id)
		if err != nil || got.Thread != c.spec.Thread || a.NoteID(got) != id {
			t.Errorf("%s: read back %+v, %v", c.name, got, err)
		}
		b := tokenBytes(c.spec.Published, c.spec.Seq, c.spec.Bytes, c.spec.MentionID, c.spec.MentionHandle)
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id, a.ID+"/notes/"))
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.version == 0 && len(raw) != len(b):
			t.Errorf("%s: extras where there are none", c.name)
		case c.version != 0 && raw[len(b)] != c.version:
			t.Errorf("%s: extras encoded as v%d, want v%d", c.name, raw[len(b)], c.version)
		}
	}
}
