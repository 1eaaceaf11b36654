package fetchback

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/fetchkind"
)

// TestClassifyFetch: the kind of every URL shape the crowd serves, and of
// those it will serve (media, keys of their own).
func TestClassifyFetch(t *testing.T) {
	for _, c := range []struct {
		path, kind, object string
	}{
		{"/.well-known/webfinger", fetchkind.WebFinger, ""},             // the query is not part of the path
		{"/.well-known/host-meta", fetchkind.HostMeta, ""},              // XRD
		{"/.well-known/host-meta.json", fetchkind.HostMeta, ""},         // JRD
		{"/.well-known/nodeinfo", fetchkind.NodeInfo, ""},               // discovery
		{"/nodeinfo/2.1", fetchkind.NodeInfo, ""},                       // the document
		{"/users/alice", fetchkind.Actor, ""},                           // an actor, and its #main-key
		{"/users/leaver_3_2s", fetchkind.Leaver, ""},                    // a leaver (an account made to be deleted), and its key
		{"/users/leaver_3_2s/notes/AQID", fetchkind.Object, "notes"},    // a leaver's note is an object like any
		{"/actor", fetchkind.Actor, ""},                                 // the instance actor
		{"/users/alice/main-key", fetchkind.Key, ""},                    // a key at a URL of its own
		{"/users/alice/outbox", fetchkind.Collection, ""},               // collections, paged or not
		{"/users/alice/followers", fetchkind.Collection, ""},            //
		{"/actor/following", fetchkind.Collection, ""},                  // the instance actor's
		{"/users/alice/collections/featured", fetchkind.Collection, ""}, // pinned posts
		{"/users/alice/notes/AQID", fetchkind.Object, "notes"},          // a note the crowd sent
		{"/users/alice/likes/AQID", fetchkind.Object, "likes"},          // a Like
		{"/users/alice/follows/AQID", fetchkind.Object, "follows"},      // a Follow
		{"/users/alice/announces/AQID", fetchkind.Object, "announces"},  // a kind added later: counted by its segment
		{"/users/alice/media/AQID", fetchkind.Media, ""},                // an attachment under its actor
		{"/media/AQID", fetchkind.Media, ""},                            // or at the root
		{"/users/alice/notes/AQID/image.png", fetchkind.Media, ""},      // an image by its name
		{"/users/alice/inbox", fetchkind.Other, ""},                     // a GET of an inbox
		{"/@alice", fetchkind.Other, ""},                                // the profile page
		{"/", fetchkind.Other, ""},                                      // the home page
		{"/users/", fetchkind.Other, ""},                                // no name
		{"/wp-login.php", fetchkind.Other, ""},                          // a scanner
	} {
		kind, object := classifyFetch(c.path)
		if kind != c.kind || object != c.object {
			t.Errorf("%s: %s %q, want %s %q", c.path, kind, object, c.kind, c.object)
		}
	}
}

// TestCreditOf: each fetch is credited to the activity type whose object
// it fetched, read from the object's id and the answer: a thread's parents
// to Reply, attachments to Media, what answered 410 to Delete, a boosted
// unseen note (by a leaver) to Announce.
func TestCreditOf(t *testing.T) {
	w, err := actors.Open(actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	path := func(id string) string { return strings.TrimPrefix(id, "https://flood1.test") }
	spec := actors.NoteSpec{Seq: 1, MentionID: "https://sut.test/users/a", MentionHandle: "@a@sut.test"}
	root, reply, media := spec, spec, spec
	root.Thread = true
	reply.InReplyTo = alice.NoteID(root)
	media.Media = actors.MediaSpec{Count: 1, Width: 2, Height: 2}
	leaver := alice.Leaver(9)
	like := alice.Like(actors.LikeSpec{Seq: 2, Object: "https://sut.test/posts/1"})
	boost := alice.Announce(actors.AnnounceSpec{Seq: 3, Object: "https://sut.test/posts/1", Author: "https://sut.test/users/a"})
	follow := alice.Follow(actors.FollowSpec{Seq: 4, Object: "https://sut.test/users/a"})
	note := alice.NoteID(spec)
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{path(note), 200, adminapi.CreditCreate},                                       // a plain note: its Create's
		{path(note) + "/activity", 200, adminapi.CreditCreate},                         // the Create itself
		{path(note), 410, adminapi.CreditDelete},                                       // the same note, deleted
		{path(alice.NoteID(root)), 200, adminapi.CreditReply},                          // a thread's root, made for a reply
		{path(alice.NoteID(reply)), 200, adminapi.CreditReply},                         // a reply, or a parent between
		{path(alice.NoteID(media)), 200, adminapi.CreditMedia},                         // a media note
		{path(actors.MediaURL("flood1.test", 2, 2, "x-0")), 200, adminapi.CreditMedia}, // its image
		{path(leaver.NoteID(spec)), 200, adminapi.CreditAnnounce},                      // a boosted unseen note
		{path(leaver.ID), 200, adminapi.CreditAnnounce},                                // its author, met through it
		{path(leaver.ID), 410, adminapi.CreditDelete},                                  // the same account, deleted
		{path(note) + "/delete", 200, adminapi.CreditDelete},                           // a Delete served at its id
		{path(note) + "/updates/AQID", 200, adminapi.CreditUpdate},                     // an Update
		{path(like.ID), 200, adminapi.CreditLike},                                      // a Like
		{path(like.ID) + "/undo", 200, adminapi.CreditUndo},                            // its Undo
		{path(boost.ID), 200, adminapi.CreditAnnounce},                                 // a boost
		{path(follow.ID), 200, adminapi.CreditFollow},                                  // a Follow
		{path(alice.ID), 200, ""},                                                      // an actor (its key): no one type's
		{"/users/alice/outbox", 200, ""},                                               // a collection
		{"/.well-known/webfinger", 200, ""},                                            // discovery
		{"/users/alice/notes/not-a-token", 404, ""},                                    // no note at all
	} {
		if got := creditOf(c.path, c.status); got != c.want {
			t.Errorf("%.60s (%d): %q, want %q", c.path, c.status, got, c.want)
		}
	}
}

// TestFetchWindowsBounded: MaxFetchbackWindows open at once, then a
// refusal; a window ended long ago gives way.
func TestFetchWindowsBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := New(func() time.Time { return now })
	var first adminapi.FetchbackWindow
	for i := range adminapi.MaxFetchbackWindows {
		w, err := f.Open("run")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = w
		}
	}
	if _, err := f.Open("one more"); !errors.Is(err, ErrTooManyWindows) {
		t.Fatalf("over the bound: %v", err)
	}
	f.End(first.ID)
	now = now.Add(staleEnded + time.Second)
	if _, err := f.Open("one more"); err != nil {
		t.Fatalf("a stale window did not give way: %v", err)
	}
	if len(f.Tallies(first.ID)) != 0 || len(f.Tallies("")) != adminapi.MaxFetchbackWindows {
		t.Errorf("after the stale one gave way: %d windows", len(f.Tallies("")))
	}
}

// FuzzClassifyFetch: any path gets one of the kinds the admin API names,
// and an object kind only with an object.
func FuzzClassifyFetch(f *testing.F) {
	for _, s := range []string{"/", "/users/a", "/users/a/notes/x", "/.well-known/webfinger", "/media/x.png", "//", "/users//x", "/actor/collections/featured"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		kind, object := classifyFetch(path)
		if !slices.Contains(fetchkind.All(), kind) {
			t.Fatalf("%q: kind %q is not one of %v", path, kind, fetchkind.All())
		}
		if (object != "") != (kind == fetchkind.Object) {
			t.Fatalf("%q: kind %q with object %q", path, kind, object)
		}
	})
}

// TestLateFetches: fetches served after a window closed are counted as its
// late ones for FetchbackLateLinger (what the run's grace missed: a SUT's
// media downloads go on after a flood), read back with Lookup; a POST is
// no fetch, and past the linger nothing is counted; the admin page's
// live panel reports them.
func TestLateFetches(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := New(func() time.Time { return now })
	h := f.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	serve := func(method, path string) { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, nil)) }
	w, err := f.Open("media")
	if err != nil {
		t.Fatal(err)
	}
	serve("GET", "/media/a.png") // during the run
	f.End(w.ID)
	if c, _ := f.Close(w.ID); c.Late != 0 || c.Kinds["media"].Fetches != 1 {
		t.Fatalf("closed tally %+v", c)
	}
	for _, step := range []struct {
		after  time.Duration // since the close
		method string
		want   int64 // late fetches counted so far
	}{
		{time.Second, "GET", 1},                                // a download right after the close
		{53 * time.Second, "HEAD", 2},                          // still downloading 53 s on
		{time.Minute, "POST", 2},                               // a delivery, not a fetch
		{adminapi.FetchbackLateLinger + time.Second, "GET", 2}, // past the linger: no longer counted
	} {
		now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(step.after)
		serve(step.method, "/media/b.png")
		got, closed, ok := f.Lookup(w.ID)
		if !ok || !closed || got.Late != step.want {
			t.Fatalf("%s after the close (%s): late %d (closed %v ok %v), want %d", step.after, step.method, got.Late, closed, ok, step.want)
		}
		if live := adminapi.NewFloodFetchback(got, closed); live.Late != step.want { // the admin page's figure
			t.Fatalf("the live panel's late %d, want %d", live.Late, step.want)
		}
	}
}

// TestLateFetchesEndAtTheNextWindow: a ladder's next rung opens a window
// right after the last one closed; what the SUT fetches from then on is
// the new window's, not the old one's late fetches.
func TestLateFetchesEndAtTheNextWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := New(func() time.Time { return now })
	h := f.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	serve := func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/media/a.png", nil)) }
	first, err := f.Open("rung 1")
	if err != nil {
		t.Fatal(err)
	}
	f.End(first.ID)
	f.Close(first.ID)
	now = now.Add(time.Second)
	serve() // after the close, before the next rung: late
	now = now.Add(time.Second)
	next, err := f.Open("rung 2")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	serve() // the next rung's
	old, _, _ := f.Lookup(first.ID)
	cur, _, _ := f.Lookup(next.ID)
	if old.Late != 1 || cur.Kinds["media"].Fetches != 1 {
		t.Fatalf("the first window's late fetches %d (want 1), the next window's media fetches %d (want 1)", old.Late, cur.Kinds["media"].Fetches)
	}
}
