package adminapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/crowdtest"
)

// TestChangesThroughTheAdminAPI: an edit and deletions another process
// reports through RouteChanges are what the origin then serves (the latest
// version; 410 and a Tombstone), a batch with a bad item is refused whole,
// a restart keeps them; RouteUnfollow forgets an undone Follow.
func TestChangesThroughTheAdminAPI(t *testing.T) {
	state := t.TempDir()
	cr := crowdtest.Start(t, crowdtest.Options{StateDir: state})
	c := crowd{cr}.client(t)
	ctx := context.Background()
	a, _ := cr.World.ActorByID(alice)
	note := func(seq uint64) string {
		return a.NoteID(actors.NoteSpec{Published: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Seq: seq, Bytes: 50,
			MentionID: bob, MentionHandle: "@bob@flood2.test"})
	}
	leaver := a.Leaver(5)
	at := "2026-03-01T13:00:00Z"
	if err := c.RecordChanges(ctx, []adminapi.ChangeItem{{ID: note(1), Version: 1, Updated: at}, {ID: note(2), Deleted: at},
		{ID: leaver.ID, Deleted: at}}); err != nil {
		t.Fatal(err)
	}
	var apiErr *adminapi.Error
	err := c.RecordChanges(ctx, []adminapi.ChangeItem{{ID: note(3), Deleted: at}, {ID: alice, Deleted: at}})
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("deleting one of the world's own actors: %v, want 400", err)
	}
	check := func(h http.Handler) {
		t.Helper()
		for _, c := range []struct {
			id     string
			status int
			body   string
		}{
			{note(1), 200, `"updated": "2026-03-01T13:00:00Z"`}, // the latest version
			{note(2), 410, `"Tombstone"`},                       // deleted
			{leaver.ID, 410, `"formerType": "Person"`},          // an account deleted
			{note(3), 200, `"Note"`},                            // the refused batch changed nothing
		} {
			r := httptest.NewRequest(http.MethodGet, strings.TrimPrefix(c.id, "https://flood1.test"), nil)
			r.Host = "flood1.test"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.body) {
				t.Errorf("%s: %d, want %d with %s:\n%.300s", c.id, rec.Code, c.status, c.body, rec.Body)
			}
		}
	}
	check(cr.Pasture.Handler())

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cr.World.Graph.AddFollowing(alice, "https://sut.test/users/x", "https://flood1.test/users/alice/follows/1"))
	res, err := c.Unfollow(ctx, adminapi.FollowingRequest{Local: alice, Remote: "https://sut.test/users/x", FollowID: "https://flood1.test/users/alice/follows/other"})
	must(err)
	if res.Removed {
		t.Error("a Follow of another id was forgotten")
	}
	res, err = c.Unfollow(ctx, adminapi.FollowingRequest{Local: alice, Remote: "https://sut.test/users/x", FollowID: "https://flood1.test/users/alice/follows/1"})
	must(err)
	if _, still := cr.World.Graph.FollowingByRemote(alice, "https://sut.test/users/x"); !res.Removed || still {
		t.Error("the undone Follow is still in the graph")
	}

	cr.Stop()
	again := crowdtest.Start(t, crowdtest.Options{StateDir: state, Unstarted: true})
	check(again.Pasture.Handler())
}

// TestRecordChangesSplitsToTheServersLimit: more changes than one request
// may carry (a presign run's Delete marks, gathered in one group commit)
// are recorded all the same, MaxChangeItems a request, in order: the
// latest edit of each note wins as if sent at once.
func TestRecordChangesSplitsToTheServersLimit(t *testing.T) {
	cr := crowdtest.Start(t, crowdtest.Options{})
	c := crowd{cr}.client(t)
	a, _ := cr.World.ActorByID(alice)
	note := func(seq uint64) string {
		return a.NoteID(actors.NoteSpec{Published: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Seq: seq, Bytes: 50,
			MentionID: bob, MentionHandle: "@bob@flood2.test"})
	}
	at := "2026-03-01T13:00:00Z"
	items := make([]adminapi.ChangeItem, 0, adminapi.MaxChangeItems+2)
	for i := range adminapi.MaxChangeItems {
		items = append(items, adminapi.ChangeItem{ID: note(uint64(i % 100)), Version: 1 + i/100, Updated: at})
	}
	last := 1 + (adminapi.MaxChangeItems-1)/100
	items = append(items, adminapi.ChangeItem{ID: note(0), Version: last + 1, Updated: at}, // past the limit
		adminapi.ChangeItem{ID: note(1), Deleted: at})
	if err := c.RecordChanges(context.Background(), items); err != nil {
		t.Fatalf("%d changes: %v", len(items), err)
	}
	if v, _ := cr.World.Changes.Version(note(0)); v != last+1 {
		t.Errorf("note 0 at version %d, want %d: the items past the limit were lost", v, last+1)
	}
	if _, gone := cr.World.Changes.Deleted(note(1)); !gone {
		t.Error("note 1 not deleted: the items past the limit were lost")
	}
}
