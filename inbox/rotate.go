package inbox

import (
	"encoding/json"
	"strconv"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
)

// AnnounceKey queues an Update(Person) of a, carrying its document as it
// stands (after a key rotation: the new key, and the old ones still
// retained), to every remote actor the follow graph relates to a
// (followers, followed, pending or not) and every inbox the activity log
// has a sending to from a. The queue signs each delivery as a does now:
// with the new key, under its new key id, which a SUT does not know yet
// and so fetches, learning the new key from the document it then gets;
// an old key may be the reason for the rotation, so it signs nothing more.
// Mastodon signs its Update(Person) with the actor's current key and
// refetches an actor whose signature fails, so either way a SUT that
// follows the usual rules ends with the new key. It returns how many
// deliveries were queued; they go out once the inbox's workers run.
func (in *Inbox) AnnounceKey(a *actors.Actor) (int, error) {
	now := in.now().UTC()
	upd := actors.Activity{Context: []any{"https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"},
		ID: a.ID + "#updates/" + strconv.FormatInt(now.UnixNano(), 10), Type: "Update", Actor: a.ID,
		Published: now.Format("2006-01-02T15:04:05Z"), To: []string{actors.PublicAudience}, Cc: []string{a.Followers()},
		Object: json.RawMessage(a.DocumentJSON())}
	body, err := marshalActivity(upd)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	var ds []Delivery
	for _, rel := range append(in.world.Graph.Followers(a.ID), in.world.Graph.Following(a.ID)...) {
		if _, local := in.crowdActor(rel.Remote); local || seen[rel.Remote] {
			continue
		}
		seen[rel.Remote] = true
		ds = append(ds, Delivery{Type: "Update", From: a.ID, To: rel.Remote, Activity: body})
	}
	for _, e := range in.alog.Latest(0, Filter{Actor: a.ID, Direction: adminapi.DirOut}) {
		if e.Local != a.ID || e.URL == "" || seen[e.URL] {
			continue
		}
		if _, local := in.world.Origin(actors.HostOf(e.URL)); local {
			continue
		}
		seen[e.URL] = true
		ds = append(ds, Delivery{Type: "Update", From: a.ID, To: e.To, Inbox: e.URL, Activity: body})
	}
	for i, d := range ds {
		if err := in.Enqueue(d); err != nil {
			return i, err
		}
	}
	return len(ds), nil
}
