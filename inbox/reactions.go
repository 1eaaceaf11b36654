package inbox

import (
	"net/http"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
)

// reactionRoutes adds RouteReactions and RouteRecordReactions.
func (in *Inbox) reactionRoutes(handle func(pattern string, h http.Handler)) {
	handle(string(adminapi.RouteReactions), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		adminapi.WriteJSON(w, http.StatusOK, in.Reactions())
	}))
	handle(string(adminapi.RouteRecordReactions), http.HandlerFunc(in.handleRecordReactions))
}

// Reactions lists the reactions the crowd keeps (RouteReactions).
func (in *Inbox) Reactions() adminapi.ReactionsInfo {
	kept := in.world.Reactions.List()
	out := adminapi.ReactionsInfo{Reactions: make([]adminapi.ReactionItem, len(kept))}
	for i, x := range kept {
		out.Reactions[i] = adminapi.ReactionItem(x)
	}
	return out
}

// RecordReactions takes the reactions and Undos another process sent from
// crowd actors (RouteRecordReactions): all of them, or, when one is bad,
// none (ErrBadRequest naming it).
func (in *Inbox) RecordReactions(req adminapi.ReactionsRequest) (adminapi.ReactionsResult, error) {
	n, err := recordBatch(req.Items, adminapi.MaxReactionItems, func(it adminapi.ReactionItem) actors.Reaction { return actors.Reaction(it) },
		in.world.RecordReactions, actors.ErrReaction)
	return adminapi.ReactionsResult{Recorded: n}, err
}

func (in *Inbox) handleRecordReactions(w http.ResponseWriter, r *http.Request) {
	serveBatch(w, r, "{items: [{actor, object, kind, id, undone}]}", in.RecordReactions)
}
