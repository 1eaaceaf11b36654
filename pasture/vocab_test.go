package pasture

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
)

// TestVocabularyIsServed: every object of the vocabulary answers at its id,
// an edited note its latest version, a deleted note or leaver 410 with a
// Tombstone, an image its PNG.
func TestVocabularyIsServed(t *testing.T) {
	p := testPasture(t, Config{Version: "test"})
	w := p.cfg.World
	alice, _ := w.ActorByID("https://flood2.test/users/alice")
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spec := actors.NoteSpec{Published: at, Seq: 1, MentionID: "https://sut.test/users/a", MentionHandle: "@a@sut.test"}
	edited, deleted := spec, spec
	edited.Seq, deleted.Seq = 2, 3
	edited.Media = actors.MediaSpec{Count: 1, Width: 32, Height: 16}
	rel := func(id string) string { return strings.TrimPrefix(id, "https://flood2.test") }
	boost := alice.Announce(actors.AnnounceSpec{Published: at, Seq: 4, Object: "https://sut.test/notes/1", Author: "https://sut.test/users/a"})
	leaver, gone := alice.Leaver(1), alice.Leaver(2)
	later := at.Add(time.Hour).Format(time.RFC3339)
	if err := w.RecordChanges([]actors.Change{{ID: alice.NoteID(edited), Version: 1, Updated: later},
		{ID: alice.NoteID(deleted), Deleted: later}, {ID: gone.ID, Deleted: later}, {ID: alice.ID, Version: 3, Updated: later}}); err != nil {
		t.Fatal(err)
	}
	img := alice.Note(edited).Attachment[0].(actors.Image).URL
	for _, c := range []struct {
		name, path  string
		status      int
		contentType string // prefix
		body        string // substring
	}{
		{"an Announce", rel(boost.ID), 200, "application/activity+json", `"type": "Announce"`},
		{"its Undo", rel(boost.ID) + "/undo", 200, "application/activity+json", `"type": "Undo"`},
		{"an edited note: its latest version", rel(alice.NoteID(edited)), 200, "application/activity+json", `"updated": "2026-11-30T13:00:00Z"`},
		{"its Create carries the edit too", rel(alice.NoteID(edited)) + "/activity", 200, "application/activity+json", `Edit 1.`},
		{"a deleted note: 410 and a Tombstone", rel(alice.NoteID(deleted)), 410, "application/activity+json", `"type": "Tombstone"`},
		{"its Create is gone too", rel(alice.NoteID(deleted)) + "/activity", 410, "application/activity+json", `"formerType": "Note"`},
		{"its Delete stays", rel(alice.NoteID(deleted)) + "/delete", 200, "application/activity+json", `"type": "Delete"`},
		{"an actor after a profile change", "/users/alice", 200, "application/activity+json", `Profile edit 3.`},
		{"a leaver before its deletion", rel(leaver.ID), 200, "application/activity+json", `"publicKeyPem"`},
		{"a deleted leaver: 410", rel(gone.ID), 410, "application/activity+json", `"formerType": "Person"`},
		{"an image", rel(img), 200, "image/png", "PNG"},
		{"an image too large", "/media/9999x1/a.png", 404, "text/plain", "no image"},
		{"a hashtag's page", "/tags/crowd", 200, "text/html", "#crowd"},
		{"a leaver's WebFinger", "/.well-known/webfinger?resource=acct:" + leaver.Acct(), 200, "application/jrd+json", leaver.ID},
		{"a deleted leaver's WebFinger: 410", "/.well-known/webfinger?resource=acct:" + gone.Acct(), 410, "text/plain", "deleted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkGet(t, p.Handler(), "flood2.test", c.path, "", c.status, c.contentType, c.body)
		})
	}
}

// checkGet GETs path on host from h (with Accept, when given) and checks
// the answer's status, Content-Type (a prefix) and body (a substring).
func checkGet(t *testing.T, h http.Handler, host, path, accept string, status int, contentType, body string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Host = host
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %.600s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, contentType) {
		t.Errorf("Content-Type %q, want %q", ct, contentType)
	}
	if !strings.Contains(rec.Body.String(), body) {
		t.Errorf("body lacks %q:\n%.600s", body, rec.Body)
	}
}
