package actors

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"html"
	"strings"
	"time"
)

// ErrNoObject marks a path that names no object the crowd could have sent.
var ErrNoObject = errors.New("no such object")

// Object kinds, the path segment under /users/{name}/ of each.
const (
	objNotes   = "notes"
	objLikes   = "likes"
	objFollows = "follows"
)

// Activity is an ActivityPub activity as the crowd sends it. Object is a
// URL string or an embedded object.
type Activity struct {
	Context   any      `json:"@context,omitempty"`
	ID        string   `json:"id"`
	Type      string   `json:"type"`
	Actor     string   `json:"actor"`
	Published string   `json:"published,omitempty"`
	To        []string `json:"to,omitempty"`
	Cc        []string `json:"cc,omitempty"`
	Object    any      `json:"object"`
}

// Tag is a Mention (or Hashtag) of a Note.
type Tag struct {
	Type string `json:"type"`
	Href string `json:"href"`
	Name string `json:"name"`
}

// Note is a post as the crowd sends and serves it. It carries every key
// Mastodon's note serializer writes for a public post that is no reply, poll
// or quote, in the same order and with the same empty values (null summary
// and inReplyTo, false sensitive, empty attachment), because some servers
// refuse a Note that lacks one of them. contentMap, which Mastodon writes
// only for a post with a language, is left out: it would double the body
// the flood's --note-bytes sizes.
type Note struct {
	Context          any         `json:"@context,omitempty"`
	ID               string      `json:"id"`
	Type             string      `json:"type"`
	Summary          *string     `json:"summary"`
	InReplyTo        *string     `json:"inReplyTo"`
	Published        string      `json:"published"`
	URL              string      `json:"url"`
	AttributedTo     string      `json:"attributedTo"`
	To               []string    `json:"to"`
	Cc               []string    `json:"cc"`
	Sensitive        bool        `json:"sensitive"`
	AtomURI          string      `json:"atomUri"`
	InReplyToAtomURI *string     `json:"inReplyToAtomUri"`
	Conversation     string      `json:"conversation"`
	Content          string      `json:"content"`
	Attachment       []any       `json:"attachment"`
	Tag              []Tag       `json:"tag"`
	Replies          *RepliesDoc `json:"replies"`
}

// RepliesDoc is a Note's replies collection, embedded with its (empty)
// first page as Mastodon embeds it, so no server needs to fetch it.
type RepliesDoc struct {
	Context any          `json:"@context,omitempty"`
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	First   RepliesFirst `json:"first"`
}

// RepliesFirst is the first page of a RepliesDoc; crowd notes get no replies
// the crowd would know of, so Items is always empty.
type RepliesFirst struct {
	Type   string   `json:"type"`
	PartOf string   `json:"partOf"`
	Items  []string `json:"items"`
}

// NoteSpec is everything a Note is made from; the Note's id encodes all of
// it, so the crowd can serve any note it ever sent without storing it.
type NoteSpec struct {
	// Published is when the note was written (second precision is kept).
	Published time.Time
	// Seq makes the id unique among notes of the same author and second.
	Seq uint64
	// Bytes is the approximate length of the content.
	Bytes int
	// MentionID is the actor id of the persona the note mentions; a SUT
	// drops a public note from a stranger that mentions none of its users.
	MentionID string
	// MentionHandle is the persona's handle, "@name@host".
	MentionHandle string
}

// LikeSpec is everything a Like is made from.
type LikeSpec struct {
	Published time.Time
	Seq       uint64
	// Object is the id of the liked post.
	Object string
}

// FollowSpec is everything a Follow is made from.
type FollowSpec struct {
	Published time.Time
	Seq       uint64
	// Object is the id of the followed actor.
	Object string
}

// asContext is the @context of activities the crowd sends.
const asContext = "https://www.w3.org/ns/activitystreams"

// noteContext is the @context of a Create(Note) and a served Note: the
// ActivityStreams context plus the terms of the Note's extension keys, as
// Mastodon writes them, so JSON-LD processors keep sensitive and the OStatus keys.
func noteContext() []any {
	return []any{asContext, map[string]any{
		"ostatus":          "http://ostatus.org#",
		"atomUri":          "ostatus:atomUri",
		"inReplyToAtomUri": "ostatus:inReplyToAtomUri",
		"conversation":     "ostatus:conversation",
		"sensitive":        "as:sensitive",
	}}
}

// token packs an object's fields into a URL-safe id segment:
// [unix seconds][seq][n][strings…], varints and length-prefixed strings.
func token(published time.Time, seq uint64, n int, strs ...string) string {
	buf := make([]byte, 0, 32+len(strs)*64)
	buf = binary.AppendVarint(buf, published.Unix())
	buf = binary.AppendUvarint(buf, seq)
	buf = binary.AppendUvarint(buf, uint64(n))
	for _, s := range strs {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	return base64.RawURLEncoding.EncodeToString(buf)
}

// untoken reverses token, expecting exactly want strings.
func untoken(tok string, want int) (time.Time, uint64, int, []string, error) {
	buf, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return time.Time{}, 0, 0, nil, fmt.Errorf("%w: %v", ErrNoObject, err)
	}
	bad := fmt.Errorf("%w: malformed id", ErrNoObject)
	sec, k := binary.Varint(buf)
	if k <= 0 {
		return time.Time{}, 0, 0, nil, bad
	}
	buf = buf[k:]
	seq, k := binary.Uvarint(buf)
	if k <= 0 {
		return time.Time{}, 0, 0, nil, bad
	}
	buf = buf[k:]
	n, k := binary.Uvarint(buf)
	if k <= 0 || n > 1<<20 {
		return time.Time{}, 0, 0, nil, bad
	}
	buf = buf[k:]
	strs := make([]string, 0, want)
	for range want {
		l, k := binary.Uvarint(buf)
		if k <= 0 || l > uint64(len(buf)-k) {
			return time.Time{}, 0, 0, nil, bad
		}
		strs = append(strs, string(buf[k:k+int(l)]))
		buf = buf[k+int(l):]
	}
	if len(buf) != 0 {
		return time.Time{}, 0, 0, nil, bad
	}
	return time.Unix(sec, 0).UTC(), seq, int(n), strs, nil
}

// NoteID is the id of the note spec describes.
func (a *Actor) NoteID(spec NoteSpec) string {
	return a.ID + "/" + objNotes + "/" + token(spec.Published, spec.Seq, spec.Bytes, spec.MentionID, spec.MentionHandle)
}

// Note is the public note spec describes, mentioning its persona (in cc
// and as a Mention tag, without which servers drop it).
func (a *Actor) Note(spec NoteSpec) Note {
	id := a.NoteID(spec)
	handle := spec.MentionHandle
	user := strings.TrimPrefix(handle, "@")
	user, _, _ = strings.Cut(user, "@")
	mention := `<span class="h-card"><a href="` + html.EscapeString(spec.MentionID) + `" class="u-url mention">@<span>` +
		html.EscapeString(user) + `</span></a></span>`
	content := "<p>" + mention + " " + html.EscapeString(filler(a.Acct(), spec.Seq, spec.Bytes)) + "</p>"
	published := spec.Published.UTC().Truncate(time.Second)
	// OStatus tag URIs, the form Mastodon gives atomUri and conversation;
	// both derive from the id, so a regenerated note is the same note.
	tok := strings.TrimPrefix(id, a.ID+"/"+objNotes+"/")
	tag := "tag:" + a.Origin.Host + "," + published.Format(time.DateOnly) + ":objectId=" + tok + ":objectType="
	return Note{
		ID:           id,
		Type:         "Note",
		Published:    published.Format(time.RFC3339),
		URL:          id,
		AttributedTo: a.ID,
		To:           []string{PublicAudience},
		Cc:           []string{a.Followers(), spec.MentionID},
		AtomURI:      tag + "Status",
		Conversation: tag + "Conversation",
		Content:      content,
		Attachment:   []any{},
		Tag:          []Tag{{Type: "Mention", Href: spec.MentionID, Name: handle}},
		Replies:      newReplies(id + "/replies"),
	}
}

// newReplies is the empty replies collection at id.
func newReplies(id string) *RepliesDoc {
	return &RepliesDoc{ID: id, Type: "Collection", First: RepliesFirst{Type: "CollectionPage", PartOf: id, Items: []string{}}}
}

// CreateNote is the Create activity that delivers Note(spec); its id is
// the note's id + "/activity".
func (a *Actor) CreateNote(spec NoteSpec) Activity {
	n := a.Note(spec)
	return Activity{Context: noteContext(), ID: n.ID + "/activity", Type: "Create", Actor: a.ID, Published: n.Published,
		To: n.To, Cc: n.Cc, Object: n}
}

// Like is the Like of spec.Object by the actor.
func (a *Actor) Like(spec LikeSpec) Activity {
	return Activity{Context: asContext, ID: a.ID + "/" + objLikes + "/" + token(spec.Published, spec.Seq, 0, spec.Object),
		Type: "Like", Actor: a.ID, Published: spec.Published.UTC().Truncate(time.Second).Format(time.RFC3339),
		Object: spec.Object}
}

// Follow is the actor's Follow of spec.Object.
func (a *Actor) Follow(spec FollowSpec) Activity {
	return Activity{Context: asContext, ID: a.ID + "/" + objFollows + "/" + token(spec.Published, spec.Seq, 0, spec.Object),
		Type: "Follow", Actor: a.ID, Published: spec.Published.UTC().Truncate(time.Second).Format(time.RFC3339),
		Object: spec.Object}
}

// UndoFollow is the Undo of the actor's Follow of spec.Object, embedding
// the Follow as Mastodon expects; its id is the Follow's id + "/undo".
func (a *Actor) UndoFollow(spec FollowSpec) Activity {
	f := a.Follow(spec)
	f.Context = nil
	return Activity{Context: asContext, ID: f.ID + "/undo", Type: "Undo", Actor: a.ID, Object: f}
}

// Object regenerates the object or activity at path on the actor (the
// path after the actor id, e.g. "/notes/TOKEN" or "/notes/TOKEN/activity").
// It fails with ErrNoObject for anything the crowd could not have sent.
func (a *Actor) Object(path string) (any, error) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if a.Kind != KindPerson || len(parts) < 2 || len(parts) > 3 {
		return nil, ErrNoObject
	}
	kind, tok := parts[0], parts[1]
	suffix := ""
	if len(parts) == 3 {
		suffix = parts[2]
	}
	switch kind {
	case objNotes:
		pub, seq, n, s, err := untoken(tok, 2)
		if err != nil {
			return nil, err
		}
		spec := NoteSpec{Published: pub, Seq: seq, Bytes: n, MentionID: s[0], MentionHandle: s[1]}
		switch suffix {
		case "":
			note := a.Note(spec)
			note.Context = noteContext()
			return note, nil
		case "activity":
			return a.CreateNote(spec), nil
		case "replies":
			// The collection the Note embeds, served at its id.
			r := newReplies(a.NoteID(spec) + "/replies")
			r.Context = asContext
			return *r, nil
		}
	case objLikes:
		pub, seq, _, s, err := untoken(tok, 1)
		if err != nil || suffix != "" {
			return nil, errors.Join(ErrNoObject, err)
		}
		return a.Like(LikeSpec{Published: pub, Seq: seq, Object: s[0]}), nil
	case objFollows:
		pub, seq, _, s, err := untoken(tok, 1)
		if err != nil {
			return nil, err
		}
		spec := FollowSpec{Published: pub, Seq: seq, Object: s[0]}
		switch suffix {
		case "":
			return a.Follow(spec), nil
		case "undo":
			return a.UndoFollow(spec), nil
		}
	}
	return nil, ErrNoObject
}

// filler is deterministic note text of about n bytes.
func filler(acct string, seq uint64, n int) string {
	head := fmt.Sprintf("Note %d from %s.", seq, acct)
	const words = " The crowd is loud today, and every one of us has something to say about federation."
	var b strings.Builder
	b.Grow(max(n, len(head)))
	b.WriteString(head)
	for b.Len() < n {
		b.WriteString(words[:min(len(words), n-b.Len())])
	}
	return b.String()
}
