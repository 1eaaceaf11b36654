package actors

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// AnnounceSpec is everything an Announce (a boost) is made from.
type AnnounceSpec struct {
	Published time.Time
	Seq       uint64
	// Object is the id of the announced post.
	Object string
	// Author is the actor id of the post's author, cc'd as Mastodon does.
	Author string
}

// Announce is the actor's public Announce of spec.Object.
func (a *Actor) Announce(spec AnnounceSpec) Activity {
	return Activity{Context: asContext, ID: a.ID + "/" + objAnnounces + "/" + token(spec.Published, spec.Seq, 0, spec.Object, spec.Author),
		Type: "Announce", Actor: a.ID, Published: stamp(spec.Published),
		To: []string{PublicAudience}, Cc: []string{spec.Author, a.Followers()}, Object: spec.Object}
}

// stamp is a published date as activities carry it.
func stamp(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// Undo is the actor's Undo of one of its activities (a Like, Announce or
// Follow), embedding it as Mastodon expects; its id is the activity's id +
// "/undo", where it is served.
func (a *Actor) Undo(of Activity) Activity {
	of.Context = nil
	return Activity{Context: asContext, ID: of.ID + "/undo", Type: "Undo", Actor: a.ID, To: of.To, Cc: of.Cc, Object: of}
}

// TombstoneDoc is what a deleted object's id answers (with 410 Gone), and
// what a Delete of a note embeds.
type TombstoneDoc struct {
	Context    any    `json:"@context,omitempty"`
	ID         string `json:"id"`
	Type       string `json:"type"`
	FormerType string `json:"formerType,omitempty"`
	Deleted    string `json:"deleted,omitempty"`
}

// Tombstone is the Tombstone of the object id, a former formerType,
// deleted at deleted.
func Tombstone(id, formerType string, deleted time.Time) TombstoneDoc {
	return TombstoneDoc{Context: asContext, ID: id, Type: "Tombstone", FormerType: formerType, Deleted: stamp(deleted)}
}

// DeleteNote is the actor's Delete of its note noteID, embedding the
// note's Tombstone as Mastodon does (with no date, as Mastodon's: the
// Delete served at its id, the note's id + "/delete", is the one sent).
func (a *Actor) DeleteNote(noteID string) Activity {
	return Activity{Context: asContext, ID: noteID + "/delete", Type: "Delete", Actor: a.ID,
		To: []string{PublicAudience}, Object: TombstoneDoc{ID: noteID, Type: "Tombstone"}}
}

// DeleteSelf is the actor's Delete of itself (an account deletion):
// actor and object are the actor, its id the actor's id + "#delete", as
// Mastodon sends it to every server it knows.
func (a *Actor) DeleteSelf() Activity {
	return Activity{Context: asContext, ID: a.ID + "#delete", Type: "Delete", Actor: a.ID,
		To: []string{PublicAudience}, Object: a.ID}
}

// NoteVersion is the note spec describes as its version-th edit made at
// updated (version 0 is the note as first sent): its content says which
// edit it is, and it carries updated, as an edited Mastodon status does.
func (a *Actor) NoteVersion(spec NoteSpec, version int, updated time.Time) Note {
	n := a.Note(spec)
	if version > 0 {
		n.Updated = stamp(updated)
		n.Content = "<p>Edit " + strconv.Itoa(version) + ".</p>" + n.Content
	}
	return n
}

// UpdateNote is the actor's Update of its note to its version-th edit,
// embedding the edited note; its id is the note's id + "/updates/" and a
// token of the edit, where it is served.
func (a *Actor) UpdateNote(spec NoteSpec, version int, updated time.Time) Activity {
	n := a.NoteVersion(spec, version, updated)
	return Activity{Context: contextOf(n), ID: n.ID + "/updates/" + token(updated, uint64(version), 0), Type: "Update",
		Actor: a.ID, Published: n.Updated, To: n.To, Cc: n.Cc, Object: n}
}

// ProfileVersion is the actor's document after its version-th profile
// change, made at updated: a summary that says so, and updated.
func (a *Actor) ProfileVersion(version int, updated time.Time) ActorDoc {
	d := a.Document()
	if version > 0 {
		d.Summary += " Profile edit " + strconv.Itoa(version) + "."
		d.Updated = stamp(updated)
	}
	return d
}

// UpdateProfile is the actor's Update(Person) of its version-th profile
// change, embedding the new document; its id is the actor's id +
// "#updates/" + the change's time, Mastodon's form.
func (a *Actor) UpdateProfile(version int, updated time.Time) Activity {
	d := a.ProfileVersion(version, updated)
	ctx := d.Context
	d.Context = nil
	return Activity{Context: ctx, ID: a.ID + "#updates/" + strconv.FormatInt(updated.Unix(), 10) + "-" + strconv.Itoa(version),
		Type: "Update", Actor: a.ID, To: []string{PublicAudience}, Object: d}
}

// noteSpecOf reads a note token back into its spec.
func noteSpecOf(tok string) (NoteSpec, error) {
	pub, seq, n, s, rest, err := untokenRest(tok, 2)
	if err != nil {
		return NoteSpec{}, err
	}
	x, err := parseExtras(rest)
	if err != nil {
		return NoteSpec{}, err
	}
	return NoteSpec{Published: pub, Seq: seq, Bytes: n, MentionID: s[0], MentionHandle: s[1], NoteExtras: x}, nil
}

// ParseNoteToken reads the last segment of a note's id (what follows
// /users/{name}/notes/) back into the note's spec, whoever its author; it
// fails with ErrNoObject for a token no NoteID made.
func ParseNoteToken(tok string) (NoteSpec, error) { return noteSpecOf(tok) }

// NoteSpecOf reads a note id of the actor back into its spec; it fails
// with ErrNoObject for an id the actor's NoteID did not make.
func (a *Actor) NoteSpecOf(noteID string) (NoteSpec, error) {
	tok, ok := strings.CutPrefix(noteID, a.ID+"/"+objNotes+"/")
	if !ok || strings.Contains(tok, "/") {
		return NoteSpec{}, ErrNoObject
	}
	return noteSpecOf(tok)
}

// Object regenerates the object or activity at path on the actor (the
// path after the actor id, e.g. "/notes/TOKEN" or "/notes/TOKEN/activity").
// It fails with ErrNoObject for anything the crowd could not have sent.
// It serves every object as first sent; what became of it since (an edit,
// a deletion) is the Changes' to say (World.Current).
func (a *Actor) Object(path string) (any, error) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if a.Kind != KindPerson || len(parts) < 2 || len(parts) > 4 {
		return nil, ErrNoObject
	}
	kind, tok, suffix := parts[0], parts[1], strings.Join(parts[2:], "/")
	switch kind {
	case objNotes:
		return a.noteObject(tok, parts[2:])
	case objLikes, objAnnounces, objFollows:
		act, err := a.activityOf(kind, tok)
		if err != nil {
			return nil, err
		}
		switch suffix {
		case "":
			return act, nil
		case "undo":
			return a.Undo(act), nil
		}
	}
	return nil, ErrNoObject
}

// activityOf regenerates a Like, Announce or Follow from its token.
func (a *Actor) activityOf(kind, tok string) (Activity, error) {
	want := 1
	if kind == objAnnounces {
		want = 2
	}
	pub, seq, _, s, err := untoken(tok, want)
	if err != nil {
		return Activity{}, errors.Join(ErrNoObject, err)
	}
	switch kind {
	case objLikes:
		return a.Like(LikeSpec{Published: pub, Seq: seq, Object: s[0]}), nil
	case objAnnounces:
		return a.Announce(AnnounceSpec{Published: pub, Seq: seq, Object: s[0], Author: s[1]}), nil
	}
	return a.Follow(FollowSpec{Published: pub, Seq: seq, Object: s[0]}), nil
}

// noteObject regenerates the note of tok or what hangs off it (rest):
// its Create, replies, Delete, or an Update.
func (a *Actor) noteObject(tok string, rest []string) (any, error) {
	spec, err := noteSpecOf(tok)
	if err != nil {
		return nil, err
	}
	switch strings.Join(rest, "/") {
	case "":
		note := a.Note(spec)
		note.Context = contextOf(note)
		return note, nil
	case "activity":
		return a.CreateNote(spec), nil
	case "replies":
		// The collection the Note embeds, served at its id.
		r := newReplies(a.NoteID(spec) + "/replies")
		r.Context = asContext
		return *r, nil
	case "delete":
		return a.DeleteNote(a.NoteID(spec)), nil
	}
	if len(rest) == 2 && rest[0] == "updates" {
		at, v, _, _, err := untoken(rest[1], 0)
		if err != nil || v == 0 || v > 1<<20 {
			return nil, errors.Join(ErrNoObject, err)
		}
		return a.UpdateNote(spec, int(v), at), nil
	}
	return nil, ErrNoObject
}

// leaverPrefix starts the name of a leaver: an actor made to be deleted.
const leaverPrefix = "leaver_"

// Leaver is the seq-th leaver of the origin of a (a Person): an account
// that exists to be deleted (Delete of an actor, as account deletions fan
// out), so that deleting it leaves the world's own actors as they were. It
// is a Person like any, with a's key (a key pool: a server cannot tell two
// actors share one) and a name that encodes both, so it is served from its
// name alone: leaver_<a's index>_<seq in base 36>.
func (a *Actor) Leaver(seq uint64) *Actor {
	return a.Origin.leaver(a, a.index, seq)
}

// leaver builds the leaver of owner, the actor of index j on o, and seq.
func (o *Origin) leaver(owner *Actor, j int, seq uint64) *Actor {
	name := leaverPrefix + strconv.Itoa(j) + "_" + strconv.FormatUint(seq, 36)
	l := &Actor{Origin: o, Name: name, Kind: KindPerson, ID: "https://" + o.Host + "/users/" + name,
		Key: owner.Key, key: owner.key, Published: worldEpoch(), index: j, leaver: true}
	l.KeyID = l.ID + "#main-key"
	return l
}

// parseLeaver finds the leaver named name on o.
func (o *Origin) parseLeaver(name string) (*Actor, bool) {
	rest, ok := strings.CutPrefix(name, leaverPrefix)
	if !ok {
		return nil, false
	}
	js, ss, ok := strings.Cut(rest, "_")
	j, err1 := strconv.Atoi(js)
	seq, err2 := strconv.ParseUint(ss, 36, 64)
	if !ok || err1 != nil || err2 != nil || j < 0 || j >= o.NumActors() {
		return nil, false
	}
	l := o.leaver(o.newActor(j), j, seq)
	if l.Name != name {
		return nil, false // not as Leaver writes it (a leading zero, say): no such leaver
	}
	return l, true
}

// IsLeaverName reports whether an actor's name (the last segment of its
// /users/{name}) is a leaver's: by the name's shape alone, as a request
// for it is classified (pasture's fetch-back tally).
func IsLeaverName(name string) bool { return strings.HasPrefix(name, leaverPrefix) }

// IsLeaver reports whether the actor is a leaver (see Leaver).
func (a *Actor) IsLeaver() bool { return a.leaver }
