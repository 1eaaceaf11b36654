package adminapi_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/crowdtest"
)

// TestReactionsThroughTheAdminAPI: reactions another process reports
// through RouteRecordReactions are what RouteReactions lists, an Undo
// frees its pair, a batch with a bad item is refused whole (400), and a
// restart keeps what was recorded.
func TestReactionsThroughTheAdminAPI(t *testing.T) {
	state := t.TempDir()
	cr := crowdtest.Start(t, crowdtest.Options{StateDir: state})
	c := crowd{cr}.client(t)
	ctx := context.Background()
	post := "https://sut.test/users/load0/posts/1"
	like := adminapi.ReactionItem{Actor: alice, Object: post, Kind: "Like", ID: alice + "/likes/1"}
	boost := adminapi.ReactionItem{Actor: bob, Object: post, Kind: "Announce", ID: bob + "/announces/2"}
	undone := adminapi.ReactionItem{Actor: bob, Object: post, Kind: "Like", ID: bob + "/likes/3"}
	undo := undone
	undo.Undone = true
	if err := c.RecordReactions(ctx, []adminapi.ReactionItem{like, boost, undone, undo}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name string
		item adminapi.ReactionItem
	}{
		{"an actor the crowd does not have", adminapi.ReactionItem{Actor: "https://sut.test/users/x", Object: post, Kind: "Like", ID: "x/1"}},
		{"a kind that is no reaction", adminapi.ReactionItem{Actor: alice, Object: post, Kind: "Follow", ID: alice + "/follows/1"}},
	} {
		var apiErr *adminapi.Error
		err := c.RecordReactions(ctx, []adminapi.ReactionItem{{Actor: alice, Object: post + "0", Kind: "Like", ID: "l0"}, bad.item})
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
			t.Errorf("%s: %v, want 400", bad.name, err)
		}
	}
	want := []adminapi.ReactionItem{boost, like} // by object, kind, actor; the refused batches kept nothing
	check := func(c *adminapi.Client) {
		t.Helper()
		got, err := c.Reactions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Reactions, want) {
			t.Errorf("kept %+v, want %+v", got.Reactions, want)
		}
	}
	check(c)
	cr.Stop()
	again := crowdtest.Start(t, crowdtest.Options{StateDir: state})
	check(crowd{again}.client(t))
}
