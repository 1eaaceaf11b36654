package adminapi

import "context"

// The vocabulary's routes.
const (
	// RouteChanges records edits and deletions that another process (a
	// separate `crowd flood`) made to objects crowd actors sent (a
	// ChangesRequest): an edited note's id then serves its latest version,
	// a deleted note's or leaver's a Tombstone with 410 (until a later
	// item restores it: its Delete was never sent). It answers the
	// ChangesResult. A body that is not a ChangesRequest, more than
	// MaxChangeItems items, or an item that names no crowd note or actor (or
	// deletes one of the world's own actors) is 400, and then nothing is
	// recorded.
	RouteChanges Route = "POST /api/changes"

	// RouteUnfollow forgets a Follow that another process sent and then
	// undid (a FollowingRequest, as RouteFollowing takes): the relation of
	// local to remote goes, if its follow id is the one named. It answers
	// UnfollowResult; an unknown crowd actor is 404, a bad body 400.
	RouteUnfollow Route = "POST /api/following/undo"
)

// MaxChangeItems is the most items one ChangesRequest may carry.
const MaxChangeItems = 10000

// ChangeItem is one change: a deletion (Deleted, RFC 3339), the
// Version-th edit made at Updated, or the restoration (Restored) of an
// object whose deletion was recorded when its Delete was drafted and whose
// Delete was never sent, of the note or actor ID.
type ChangeItem struct {
	ID       string `json:"id"`
	Deleted  string `json:"deleted,omitempty"`
	Version  int    `json:"version,omitempty"`
	Updated  string `json:"updated,omitempty"`
	Restored bool   `json:"restored,omitempty"`
}

// ChangesRequest is the body of RouteChanges.
type ChangesRequest struct {
	Items []ChangeItem `json:"items"`
}

// ChangesResult is RouteChanges' answer.
type ChangesResult struct {
	// Recorded is how many items were taken (all of the request).
	Recorded int `json:"recorded"`
}

// UnfollowResult is RouteUnfollow's answer.
type UnfollowResult struct {
	// Removed says whether a relation was there to forget.
	Removed bool `json:"removed"`
}

// RecordChanges calls RouteChanges with items, MaxChangeItems at a time.
func (c *Client) RecordChanges(ctx context.Context, items []ChangeItem) error {
	return inBatches(items, MaxChangeItems, func(items []ChangeItem) error {
		var r ChangesResult
		return c.call(ctx, RouteChanges, nil, ChangesRequest{Items: items}, &r)
	})
}

// Unfollow calls RouteUnfollow.
func (c *Client) Unfollow(ctx context.Context, req FollowingRequest) (UnfollowResult, error) {
	var r UnfollowResult
	return r, c.call(ctx, RouteUnfollow, nil, req, &r)
}
