package adminapi

import "context"

// The reactions' routes.
const (
	// RouteReactions answers ReactionsInfo: every Like and Announce of the
	// crowd's actors that the crowd keeps (sent, and not undone since), so
	// a flood does not send one a SUT already has.
	RouteReactions Route = "GET /api/reactions"

	// RouteRecordReactions records Likes and Announces that another
	// process (a separate `crowd flood`) sent, and their Undos (a
	// ReactionsRequest, applied in order), each made durable before the
	// answer, ReactionsResult. A body that is not a ReactionsRequest, more
	// than MaxReactionItems items, or an item that names no crowd actor, no
	// object, no id or a kind other than Like and Announce is 400, and then
	// nothing is recorded.
	RouteRecordReactions Route = "POST /api/reactions"
)

// MaxReactionItems is the most items one ReactionsRequest may carry.
const MaxReactionItems = 10000

// ReactionItem is one reaction: crowd actor Actor's Like or Announce
// (Kind) of Object, made by the activity ID; Undone marks its Undo.
type ReactionItem struct {
	Actor  string `json:"actor"`
	Object string `json:"object"`
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Undone bool   `json:"undone,omitempty"`
}

// ReactionsRequest is the body of RouteRecordReactions.
type ReactionsRequest struct {
	Items []ReactionItem `json:"items"`
}

// ReactionsResult is RouteRecordReactions' answer.
type ReactionsResult struct {
	// Recorded is how many items were taken (all of the request).
	Recorded int `json:"recorded"`
}

// ReactionsInfo is RouteReactions' answer.
type ReactionsInfo struct {
	// Reactions are those kept, by object, kind, then actor.
	Reactions []ReactionItem `json:"reactions"`
}

// Reactions calls RouteReactions.
func (c *Client) Reactions(ctx context.Context) (ReactionsInfo, error) {
	var r ReactionsInfo
	return r, c.call(ctx, RouteReactions, nil, nil, &r)
}

// RecordReactions calls RouteRecordReactions with items, MaxReactionItems
// at a time.
func (c *Client) RecordReactions(ctx context.Context, items []ReactionItem) error {
	return inBatches(items, MaxReactionItems, func(items []ReactionItem) error {
		var r ReactionsResult
		return c.call(ctx, RouteRecordReactions, nil, ReactionsRequest{Items: items}, &r)
	})
}
