package actors

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestObjectsAreRegeneratedFromTheirIDs(t *testing.T) {
	w := testWorld(t)
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	note := NoteSpec{Published: at, Seq: 42, Bytes: 500, MentionID: "https://sut.test/users/load3", MentionHandle: "@load3@sut.test"}
	follow := FollowSpec{Published: at, Seq: 9, Object: "https://sut.test/users/load3"}
	like := alice.Like(LikeSpec{Published: at, Seq: 3, Object: "https://sut.test/notes/1"})
	for _, c := range []struct {
		name string
		id   string
		want string // the type of what the id regenerates
	}{
		{"note", alice.NoteID(note), "Note"},
		{"its Create", alice.CreateNote(note).ID, "Create"},
		{"its replies", alice.Note(note).Replies.ID, "Collection"},
		{"a Like", like.ID, "Like"},
		{"a Follow", alice.Follow(follow).ID, "Follow"},
		{"the Undo of a Follow", alice.UndoFollow(follow).ID, "Undo"},
	} {
		obj, err := alice.Object(strings.TrimPrefix(c.id, alice.ID))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var typ, id string
		switch o := obj.(type) {
		case Note:
			typ, id = o.Type, o.ID
		case Activity:
			typ, id = o.Type, o.ID
		case RepliesDoc:
			typ, id = o.Type, o.ID
		}
		if typ != c.want || id != c.id {
			t.Errorf("%s: regenerated %s %s, want %s %s", c.name, typ, id, c.want, c.id)
		}
	}
	if n := alice.Note(note); len(n.Content) < 500 || n.Tag[0].Href != note.MentionID || n.Cc[1] != note.MentionID {
		t.Errorf("note must mention its persona in cc and tag and be about %d bytes: %+v", note.Bytes, n)
	}
}

func TestObjectRejectsUnknownPaths(t *testing.T) {
	w := testWorld(t)
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	for _, c := range []struct{ name, path string }{
		{"empty", ""},
		{"unknown kind", "/posts/AAAA"},
		{"not base64", "/notes/***"},
		{"truncated token", "/notes/AQ"},
		{"unknown suffix", "/notes/" + strings.TrimPrefix(alice.NoteID(NoteSpec{}), alice.ID+"/notes/") + "/shares"},
		{"too deep", "/notes/a/b/c"},
	} {
		if _, err := alice.Object(c.path); !errors.Is(err, ErrNoObject) {
			t.Errorf("%s: Object(%q) = %v, want ErrNoObject", c.name, c.path, err)
		}
	}
}

func FuzzObjectPath(f *testing.F) {
	a := &Actor{Origin: &Origin{Host: "flood1.test"}, Name: "alice", Kind: KindPerson, ID: "https://flood1.test/users/alice"}
	f.Add(strings.TrimPrefix(a.NoteID(NoteSpec{Seq: 1, MentionID: "x", MentionHandle: "@x@y"}), a.ID))
	f.Add("/likes/AAAA")
	f.Add("/follows/AQID/undo")
	f.Fuzz(func(t *testing.T, path string) {
		obj, err := a.Object(path)
		if err == nil && obj == nil {
			t.Fatal("nil object without error")
		}
	})
}

// TestCreateNoteHasMastodonKeys: the Note a flood Create carries has every
// key Mastodon's note serializer writes for a public post that is no reply,
// poll or quote and has no language (no contentMap) (app/serializers/activitypub/note_serializer.rb), with the
// same empty values; a widely deployed PHP server answers 400 to a Note
// without inReplyTo.
func TestCreateNoteHasMastodonKeys(t *testing.T) {
	w := testWorld(t)
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	spec := NoteSpec{Published: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Seq: 7, Bytes: 120,
		MentionID: "https://sut.test/users/load0", MentionHandle: "@load0@sut.test"}
	b, err := MarshalDoc(alice.CreateNote(spec))
	if err != nil {
		t.Fatal(err)
	}
	var create struct {
		Object map[string]json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(b, &create); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		want string // the JSON value, or "" for any value present
	}{
		{"id", ""},
		{"type", `"Note"`},
		{"summary", "null"},   // no content warning
		{"inReplyTo", "null"}, // not a reply: null, never absent
		{"published", `"2026-11-30T12:00:00Z"`},
		{"url", ""},
		{"attributedTo", `"https://flood1.test/users/alice"`},
		{"to", `["https://www.w3.org/ns/activitystreams#Public"]`},                             // public
		{"cc", `["https://flood1.test/users/alice/followers","https://sut.test/users/load0"]`}, // followers, then the mentioned
		{"sensitive", "false"},
		{"atomUri", ""},
		{"inReplyToAtomUri", "null"},
		{"conversation", ""},
		{"content", ""},
		{"attachment", "[]"}, // an array even when empty
		{"tag", `[{"type":"Mention","href":"https://sut.test/users/load0","name":"@load0@sut.test"}]`},
		{"replies", ""}, // local notes embed their replies collection
	} {
		raw, ok := create.Object[c.key]
		if !ok {
			t.Errorf("Note has no %q", c.key)
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			t.Fatal(err)
		}
		if c.want != "" && compact.String() != c.want {
			t.Errorf("%s = %s, want %s", c.key, compact.String(), c.want)
		}
	}
}
