package inbox

import (
	"fmt"
	"net/http"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
)

// vocabRoutes adds RouteChanges and RouteUnfollow.
func (in *Inbox) vocabRoutes(handle func(pattern string, h http.Handler)) {
	handle(string(adminapi.RouteChanges), http.HandlerFunc(in.handleChanges))
	handle(string(adminapi.RouteUnfollow), http.HandlerFunc(in.handleUnfollow))
}

// RecordChanges takes the edits and deletions another process made to
// objects crowd actors sent (RouteChanges): all of them, or, when one is
// bad, none (ErrBadRequest naming it).
func (in *Inbox) RecordChanges(req adminapi.ChangesRequest) (adminapi.ChangesResult, error) {
	n, err := recordBatch(req.Items, adminapi.MaxChangeItems, func(it adminapi.ChangeItem) actors.Change { return actors.Change(it) },
		in.world.RecordChanges, actors.ErrChange)
	return adminapi.ChangesResult{Recorded: n}, err
}

func (in *Inbox) handleChanges(w http.ResponseWriter, r *http.Request) {
	serveBatch(w, r, "{items: [{id, deleted | version, updated}]}", in.RecordChanges)
}

// Unfollow forgets the crowd actor's Follow of req.Remote once it was
// undone (RouteUnfollow), when its id is req.FollowID: an older or newer
// Follow of the same pair stays.
func (in *Inbox) Unfollow(req adminapi.FollowingRequest) (adminapi.UnfollowResult, error) {
	a, err := in.LocalActor(req.Local)
	if err != nil {
		return adminapi.UnfollowResult{}, err
	}
	r, ok := in.world.Graph.FollowingByRemote(a.ID, req.Remote)
	if !ok || r.FollowID != req.FollowID {
		return adminapi.UnfollowResult{}, nil
	}
	removed, err := in.world.Graph.RemoveFollowing(a.ID, req.Remote)
	return adminapi.UnfollowResult{Removed: removed}, err
}

func (in *Inbox) handleUnfollow(w http.ResponseWriter, r *http.Request) {
	var req adminapi.FollowingRequest
	if err := adminapi.DecodeBody(w, r, 0, &req); err != nil {
		writeError(w, fmt.Errorf("%w: body is not a JSON {local, remote, follow_id}: %w", ErrBadRequest, err))
		return
	}
	res, err := in.Unfollow(req)
	if err != nil {
		writeError(w, err)
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, res)
}
