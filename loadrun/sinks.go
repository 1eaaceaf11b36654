package loadrun

import (
	"context"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood/traffic"
)

// The sinks of a flood attached to a crowd serving elsewhere: the flood
// keeps its bookkeeping in the world's own types and speaks only HTTP to
// its target, so the crowd's admin API is reached through these adapters.

// adminOutbox is the outbox sink that lists the Creates sent in the
// attached crowd's outboxes (adminapi.RouteOutbox).
func adminOutbox(c *adminapi.Client) traffic.OutboxSink {
	return adminSink(c.RecordOutbox, func(n actors.SentNote) adminapi.OutboxItem { return adminapi.OutboxItem(n) })
}

// adminReactions is the reaction sink that keeps the Likes and Announces
// sent, and their Undos, in the attached crowd (adminapi.RouteRecordReactions).
func adminReactions(c *adminapi.Client) traffic.ReactionSink {
	return adminSink(c.RecordReactions, func(r actors.Reaction) adminapi.ReactionItem { return adminapi.ReactionItem(r) })
}

// adminChanges is the change sink that records the edits and deletions
// made in the attached crowd (adminapi.RouteChanges).
func adminChanges(c *adminapi.Client) traffic.ChangeSink {
	return adminSink(c.RecordChanges, func(ch actors.Change) adminapi.ChangeItem { return adminapi.ChangeItem(ch) })
}

// adminSink hands a flood sink's batch, each item converted to its wire
// type, to an admin client's record call.
func adminSink[In, Out any](record func(context.Context, []Out) error, conv func(In) Out) func(context.Context, []In) error {
	return func(ctx context.Context, items []In) error {
		out := make([]Out, len(items))
		for i, it := range items {
			out[i] = conv(it)
		}
		return record(ctx, out)
	}
}
