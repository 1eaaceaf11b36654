package inbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
)

// reactionRoutes adds RouteReactions and RouteRecordReactions.
func (in *Inbox) reactionRoutes(handle func(pattern string, h http.Handler)) {
	handle(string(adminapi.RouteReactions), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, in.Reactions())
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
	if len(req.Items) > adminapi.MaxReactionItems {
		return adminapi.ReactionsResult{}, fmt.Errorf("%w: %d items, at most %d a request", ErrBadRequest, len(req.Items), adminapi.MaxReactionItems)
	}
	xs := make([]actors.Reaction, len(req.Items))
	for i, it := range req.Items {
		xs[i] = actors.Reaction(it)
	}
	if err := in.world.RecordReactions(xs); err != nil {
		if errors.Is(err, actors.ErrReaction) {
			err = fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		return adminapi.ReactionsResult{}, err
	}
	return adminapi.ReactionsResult{Recorded: len(xs)}, nil
}

func (in *Inbox) handleRecordReactions(w http.ResponseWriter, r *http.Request) {
	var req adminapi.ReactionsRequest
	// An item is three ids of a few hundred bytes: 8 MiB holds the most a request may carry.
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil {
		writeError(w, fmt.Errorf("%w: body is not a JSON {items: [{actor, object, kind, id, undone}]}: %v", ErrBadRequest, err))
		return
	}
	res, err := in.RecordReactions(req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
