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
	objNotes     = "notes"
	objLikes     = "likes"
	objFollows   = "follows"
	objAnnounces = "announces"
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
	Updated          string      `json:"updated,omitempty"`
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

	// The fields below are optional (see NoteExtras): a spec without them
	// is the note of old, and its id is the same as before they existed.
	NoteExtras
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

// contextOf is the @context of a document carrying note n: the note's,
// with the Hashtag term Mastodon adds when n has hashtags (ActivityStreams'
// own context leaves it out, so a JSON-LD reader would drop the tags).
func contextOf(n Note) []any {
	c := noteContext()
	for _, t := range n.Tag {
		if t.Type == "Hashtag" {
			c[1].(map[string]any)["Hashtag"] = "as:Hashtag"
			break
		}
	}
	return c
}

// token packs an object's fields into a URL-safe id segment:
// [unix seconds][seq][n][strings…], varints and length-prefixed strings.
func token(published time.Time, seq uint64, n int, strs ...string) string {
	return base64.RawURLEncoding.EncodeToString(tokenBytes(published, seq, n, strs...))
}

// tokenBytes is token before its base64 encoding.
func tokenBytes(published time.Time, seq uint64, n int, strs ...string) []byte {
	buf := make([]byte, 0, 32+len(strs)*64)
	buf = binary.AppendVarint(buf, published.Unix())
	buf = binary.AppendUvarint(buf, seq)
	buf = binary.AppendUvarint(buf, uint64(n))
	for _, s := range strs {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	return buf
}

// untoken reverses token, expecting exactly want strings.
func untoken(tok string, want int) (time.Time, uint64, int, []string, error) {
	pub, seq, n, strs, rest, err := untokenRest(tok, want)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: malformed id", ErrNoObject)
	}
	return pub, seq, n, strs, err
}

// untokenRest reverses token, expecting want strings, and returns the
// bytes after them (a note's extras).
func untokenRest(tok string, want int) (time.Time, uint64, int, []string, []byte, error) {
	buf, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return time.Time{}, 0, 0, nil, nil, fmt.Errorf("%w: %v", ErrNoObject, err)
	}
	bad := fmt.Errorf("%w: malformed id", ErrNoObject)
	sec, k := binary.Varint(buf)
	if k <= 0 {
		return time.Time{}, 0, 0, nil, nil, bad
	}
	buf = buf[k:]
	seq, k := binary.Uvarint(buf)
	if k <= 0 {
		return time.Time{}, 0, 0, nil, nil, bad
	}
	buf = buf[k:]
	n, k := binary.Uvarint(buf)
	if k <= 0 || n > 1<<20 {
		return time.Time{}, 0, 0, nil, nil, bad
	}
	buf = buf[k:]
	strs := make([]string, 0, want)
	for range want {
		l, k := binary.Uvarint(buf)
		if k <= 0 || l > uint64(len(buf)-k) {
			return time.Time{}, 0, 0, nil, nil, bad
		}
		strs = append(strs, string(buf[k:k+int(l)]))
		buf = buf[k+int(l):]
	}
	return time.Unix(sec, 0).UTC(), seq, int(n), strs, buf, nil
}

// NoteID is the id of the note spec describes.
func (a *Actor) NoteID(spec NoteSpec) string {
	b := tokenBytes(spec.Published, spec.Seq, spec.Bytes, spec.MentionID, spec.MentionHandle)
	if !spec.NoteExtras.empty() {
		b = spec.NoteExtras.append(b)
	}
	return a.ID + "/" + objNotes + "/" + base64.RawURLEncoding.EncodeToString(b)
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
	content := "<p>" + mention + spec.NoteExtras.mentionsHTML() + " " + html.EscapeString(filler(a.Acct(), spec.Seq, spec.Bytes)) +
		a.Origin.hashtagsHTML(spec.Hashtags) + "</p>"
	published := spec.Published.UTC().Truncate(time.Second)
	// OStatus tag URIs, the form Mastodon gives atomUri and conversation;
	// both derive from the id, so a regenerated note is the same note.
	tok := strings.TrimPrefix(id, a.ID+"/"+objNotes+"/")
	tag := "tag:" + a.Origin.Host + "," + published.Format(time.DateOnly) + ":objectId=" + tok + ":objectType="
	n := Note{
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
	a.addExtras(&n, spec.NoteExtras)
	return n
}

// newReplies is the empty replies collection at id.
func newReplies(id string) *RepliesDoc {
	return &RepliesDoc{ID: id, Type: "Collection", First: RepliesFirst{Type: "CollectionPage", PartOf: id, Items: []string{}}}
}

// CreateNote is the Create activity that delivers Note(spec); its id is
// the note's id + "/activity".
func (a *Actor) CreateNote(spec NoteSpec) Activity {
	n := a.Note(spec)
	return Activity{Context: contextOf(n), ID: n.ID + "/activity", Type: "Create", Actor: a.ID, Published: n.Published,
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
func (a *Actor) UndoFollow(spec FollowSpec) Activity { return a.Undo(a.Follow(spec)) }

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
