package inbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/crowdfed/crowd/actors"
)

// dispatch acts on a verified activity. Only the follow protocol changes
// anything; every other type is accepted as it is (counted and logged by
// ServeHTTP).
func (in *Inbox) dispatch(act Activity, body []byte) reply {
	switch act.Type {
	case "Follow":
		return in.onFollow(act, body)
	case "Undo":
		return in.onUndo(act)
	case "Accept":
		return in.onAnswer(act, actors.StateAccepted)
	case "Reject":
		return in.onAnswer(act, actors.StateRejected)
	}
	return reply{status: http.StatusAccepted}
}

// crowdActor finds the crowd actor whose id is exactly id.
func (in *Inbox) crowdActor(id string) (*actors.Actor, bool) {
	a, ok := in.world.ActorByID(id)
	if !ok || a.ID != id {
		return nil, false
	}
	return a, true
}

// graphActors is every crowd actor of the world that has a relation in the
// follow graph: a walk of the graph, not of the world, which may hold a
// million actors.
func (in *Inbox) graphActors() []*actors.Actor {
	var out []*actors.Actor
	for _, id := range in.world.Graph.Locals() {
		if a, ok := in.crowdActor(id); ok {
			out = append(out, a)
		}
	}
	return out
}

// onFollow records the follower durably, then queues the Accept durably;
// only then is the Follow answered 202, so a kill -9 just after the answer
// loses neither.
func (in *Inbox) onFollow(act Activity, body []byte) reply {
	target := act.Object().ID
	if target == "" {
		return reject(http.StatusBadRequest, "a Follow needs an object: the id of the actor to follow")
	}
	local, ok := in.crowdActor(target)
	if !ok {
		return reply{status: http.StatusAccepted, note: fmt.Sprintf("Follow of %s, who is not a crowd actor here: nothing to do", target)}
	}
	follow := followToEmbed(act, body)
	accept, acceptID, err := acceptFor(local, act.Actor, follow)
	if err != nil {
		return reject(http.StatusBadRequest, "cannot embed the Follow in an Accept: %v", err)
	}
	now := in.now().UTC()
	d := &Delivery{ID: deliveryID(acceptID, act.Actor), Type: "Accept", From: local.ID, To: act.Actor,
		Activity: accept, Created: now, NextAt: now}
	// A full queue refuses a new Follow before it is recorded: the sender
	// retries it later, and a flood of Follows cannot grow the graph
	// faster than the crowd can answer them. A repeat of a Follow whose
	// Accept is already queued is still taken.
	if depth := in.queue.depth(); depth >= in.queue.max && !in.queue.has(d.ID) {
		return reply{status: http.StatusServiceUnavailable, retryAfter: 60,
			reason: fmt.Sprintf("%d Accepts are waiting to be delivered; send the Follow again later", depth)}
	}
	if err := in.world.Graph.AddFollower(local.ID, act.Actor, act.ID, follow); err != nil {
		return reject(http.StatusInternalServerError, "could not record the follow: %v", err)
	}
	added, err := in.queue.add(d)
	switch {
	case errors.Is(err, ErrQueueFull):
		return reply{status: http.StatusServiceUnavailable, retryAfter: 60,
			reason: fmt.Sprintf("the follow is recorded but its Accept cannot be queued (%v); send the Follow again later", err)}
	case err != nil:
		return reject(http.StatusInternalServerError, "the follow is recorded but its Accept could not be queued: %v", err)
	case !added:
		return reply{status: http.StatusAccepted, note: "follower recorded; its Accept is already queued"}
	}
	return reply{status: http.StatusAccepted, note: "follower recorded; Accept " + acceptID + " queued"}
}

// maxEmbeddedFollow bounds the Follow kept in the graph and embedded in
// the Accept: a real Follow is a few hundred bytes, and a padded one must
// not bloat the graph's journal.
const maxEmbeddedFollow = 16 << 10

// followToEmbed is the Follow as received, or, when it is larger than
// maxEmbeddedFollow, the fields that identify it (what Mastodon embeds).
func followToEmbed(act Activity, body []byte) json.RawMessage {
	if len(body) <= maxEmbeddedFollow {
		return body
	}
	b, _ := json.Marshal(struct {
		Context string `json:"@context"`
		ID      string `json:"id"`
		Type    string `json:"type"`
		Actor   string `json:"actor"`
		Object  string `json:"object"`
	}{"https://www.w3.org/ns/activitystreams", act.ID, act.Type, act.Actor, act.Object().ID})
	return b
}

// acceptFor builds local's Accept of a Follow, embedding the Follow as
// received (Mastodon and Fedify match the Accept by the embedded Follow's
// id and actor). The Accept's id is derived from the Follow's, so a
// repeated Follow yields the same Accept.
func acceptFor(local *actors.Actor, follower string, follow []byte) ([]byte, string, error) {
	var f struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(follow, &f); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256([]byte(f.ID))
	id := local.ID + "#accepts/follows/" + hex.EncodeToString(sum[:12])
	doc := struct {
		Context string          `json:"@context"`
		ID      string          `json:"id"`
		Type    string          `json:"type"`
		Actor   string          `json:"actor"`
		To      []string        `json:"to"`
		Object  json.RawMessage `json:"object"`
	}{"https://www.w3.org/ns/activitystreams", id, "Accept", local.ID, []string{follower}, json.RawMessage(follow)}
	b, err := json.Marshal(doc)
	return b, id, err
}

// deliveryID names the delivery of activity id to recipient: the same
// pair is queued once at a time.
func deliveryID(activityID, recipient string) string {
	sum := sha256.Sum256([]byte(activityID + "\n" + recipient))
	return hex.EncodeToString(sum[:16])
}

// onUndo removes a follower on Undo(Follow): the Follow may be embedded
// (Mastodon) or named by id. Undo of anything else is just accepted.
func (in *Inbox) onUndo(act Activity) reply {
	obj := act.Object()
	if obj.Embedded != nil && obj.Type != "Follow" {
		return reply{status: http.StatusAccepted}
	}
	if obj.Actor != "" && obj.Actor != act.Actor {
		return reply{status: http.StatusAccepted, note: fmt.Sprintf("ignored: %s undid a Follow by %s", act.Actor, obj.Actor)}
	}
	var local *actors.Actor
	if obj.Object != "" {
		local, _ = in.crowdActor(obj.Object)
	} else if obj.ID != "" {
		local = in.followerOf(obj.ID, act.Actor)
	}
	if local == nil {
		return reply{status: http.StatusAccepted, note: "Undo of " + obj.ID + ": no follow of a crowd actor to remove"}
	}
	removed, err := in.world.Graph.RemoveFollower(local.ID, act.Actor)
	if err != nil {
		return reject(http.StatusInternalServerError, "could not remove the follow: %v", err)
	}
	if !removed {
		return reply{status: http.StatusAccepted, note: act.Actor + " did not follow " + local.ID + ": nothing to remove"}
	}
	return reply{status: http.StatusAccepted, note: "follower removed from " + local.ID}
}

// followerOf finds the crowd actor that remote follows with Follow
// followID (an Undo that names the Follow only by id, to a shared inbox).
func (in *Inbox) followerOf(followID, remote string) *actors.Actor {
	r, ok := in.world.Graph.FollowerByFollowID(followID, remote)
	if !ok {
		return nil
	}
	a, ok := in.crowdActor(r.Local)
	if !ok {
		return nil
	}
	return a
}

// onAnswer applies an Accept or Reject of one of the crowd's own Follows.
// The Follow is found by its embedded form, by regenerating it from its
// id (every crowd Follow id encodes the Follow), or by searching the
// graph. A Follow by a crowd actor of the sender that the graph does not
// know (sent by a separate `crowd flood` process) is recorded from the
// answer, so it still reaches the graph.
func (in *Inbox) onAnswer(act Activity, state string) reply {
	obj := act.Object()
	if obj.Embedded != nil && obj.Type != "Follow" && obj.Type != "" {
		return reply{status: http.StatusAccepted, note: act.Type + " of a " + obj.Type + ": nothing to do"}
	}
	followID, follower, followee := obj.ID, obj.Actor, obj.Object
	if follower == "" && followID != "" {
		if f, ok := in.crowdFollow(followID); ok {
			follower, followee = f.Actor, fmt.Sprint(f.Object)
		} else if r, ok := in.followingByID(followID); ok {
			follower, followee = r.Local, r.Remote
		}
	}
	if follower == "" {
		return reply{status: http.StatusAccepted, note: act.Type + " of " + obj.ID + ": not a Follow the crowd sent: nothing to do"}
	}
	local, ok := in.crowdActor(follower)
	if !ok {
		return reply{status: http.StatusAccepted, note: act.Type + " of a Follow by " + follower + ", who is not a crowd actor: nothing to do"}
	}
	if followee != "" && followee != act.Actor {
		return reply{status: http.StatusAccepted, note: fmt.Sprintf("ignored: %s answered a Follow addressed to %s", act.Actor, followee)}
	}
	g := in.world.Graph
	if followID == "" {
		r, ok := g.FollowingByRemote(local.ID, act.Actor)
		if !ok {
			return reply{status: http.StatusAccepted, note: act.Type + " of a Follow without id that the crowd does not know: nothing to do"}
		}
		followID = r.FollowID
	}
	_, known, err := g.SetFollowingState(followID, state)
	if err == nil && !known {
		if err = g.AddFollowing(local.ID, act.Actor, followID); err == nil {
			_, _, err = g.SetFollowingState(followID, state)
		}
	}
	if err != nil {
		return reject(http.StatusInternalServerError, "could not record the %s: %v", act.Type, err)
	}
	note := fmt.Sprintf("%s's follow of %s is %s", local.Acct(), act.Actor, state)
	if !known {
		// A flood registers its Follows with the crowd as it sends them: a
		// quick SUT's answer can come first, or the Follow was another
		// process's. Neither is a fault; say so.
		note += " (a Follow not registered yet, as when the answer beats a flood's registration of it: recorded from the answer)"
	}
	return reply{status: http.StatusAccepted, note: note}
}

// crowdFollow regenerates a Follow sent by a crowd actor from its id.
func (in *Inbox) crowdFollow(id string) (actors.Activity, bool) {
	i := strings.Index(id, "/follows/")
	if i < 0 {
		return actors.Activity{}, false
	}
	a, ok := in.crowdActor(id[:i])
	if !ok {
		return actors.Activity{}, false
	}
	obj, err := a.Object(id[len(a.ID):])
	if err != nil {
		return actors.Activity{}, false
	}
	f, ok := obj.(actors.Activity)
	if !ok || f.Type != "Follow" {
		return actors.Activity{}, false
	}
	return f, true
}

// followingByID finds the crowd's following relation made by followID.
func (in *Inbox) followingByID(followID string) (actors.Relation, bool) {
	r, ok := in.world.Graph.FollowingByID(followID)
	if !ok {
		return actors.Relation{}, false
	}
	if _, ok := in.crowdActor(r.Local); !ok {
		return actors.Relation{}, false
	}
	return r, true
}
