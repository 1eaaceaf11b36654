package loadrun

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/crowdtest"
)

// TestAdminSinksRecordInTheAttachedCrowd: what an attached flood's sinks
// take, in the world's own types, reaches the crowd serving elsewhere
// through its admin API: the Create is listed by its actor's outbox, the
// Like is kept, the Delete's object is gone.
func TestAdminSinksRecordInTheAttachedCrowd(t *testing.T) {
	cr := crowdtest.Start(t, crowdtest.Options{})
	admin, err := adminapi.New("http://"+cr.Admin, adminapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const alice, bob = "https://flood1.test/users/alice", "https://flood2.test/users/bob"
	a, _ := cr.World.ActorByID(alice)
	note := a.NoteID(actors.NoteSpec{Published: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Seq: 1, Bytes: 50,
		MentionID: bob, MentionHandle: "@bob@flood2.test"})
	gone := a.Leaver(3).ID
	post := "https://sut.test/users/load0/posts/1"
	ctx := context.Background()
	for _, c := range []struct {
		what string
		call func() error
	}{
		{"outbox", func() error { return adminOutbox(admin)(ctx, []actors.SentNote{{Actor: alice, Note: note}}) }},
		{"reactions", func() error {
			return adminReactions(admin)(ctx, []actors.Reaction{{Actor: alice, Object: post, Kind: actors.ReactionLike, ID: alice + "/likes/1"}})
		}},
		{"changes", func() error {
			return adminChanges(admin)(ctx, []actors.Change{{ID: gone, Deleted: "2026-03-01T13:00:00Z"}})
		}},
	} {
		if err := c.call(); err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	if ids, total := cr.World.Outbox.Latest(alice); total != 1 || !slices.Contains(ids, note) {
		t.Errorf("alice's outbox lists %v of %d, want the note sent", ids, total)
	}
	if !cr.World.Reactions.Has(alice, post, actors.ReactionLike) {
		t.Error("the Like sent is not kept")
	}
	if _, ok := cr.World.Changes.Deleted(gone); !ok {
		t.Error("the leaver deleted still stands")
	}
}
