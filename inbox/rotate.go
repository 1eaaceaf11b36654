package inbox

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
)

// AnnounceKey queues an Update(Person) of a, carrying its document as it
// stands (after a key rotation: the new key, and the old ones still
// retained), once to each inbox that reaches the remote actors the follow
// graph relates to a (followers, followed, pending or not) and the inboxes
// the activity log has a sending to from a (announceTargets: shared inboxes
// first, each inbox once). The queue signs each delivery as a does now:
// with the new key, under the actor's key id (kept, as real servers
// rotate) or a new one (--new-key-id): a SUT whose cached key fails the
// signature refetches the actor, a new id it fetches at once, and either
// way learns the new key from the document it then gets; an old key may
// be the reason for the rotation, so it signs nothing more.
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
	var related []string
	for _, rel := range append(in.world.Graph.Followers(a.ID), in.world.Graph.Following(a.ID)...) {
		if _, local := in.crowdActor(rel.Remote); !local {
			related = append(related, rel.Remote)
		}
	}
	var sent []sentTo
	for _, e := range in.alog.Latest(0, Filter{Actor: a.ID, Direction: adminapi.DirOut}) {
		if e.Local != a.ID || e.URL == "" {
			continue
		}
		if _, local := in.world.Origin(actors.HostOf(e.URL)); !local {
			sent = append(sent, sentTo{to: e.To, inbox: e.URL})
		}
	}
	var ds []Delivery
	for _, t := range announceTargets(related, sent) {
		ds = append(ds, Delivery{Type: "Update", From: a.ID, To: t.to, Inbox: t.inbox, Activity: body})
	}
	for i, d := range ds {
		if err := in.Enqueue(d); err != nil {
			return i, err
		}
	}
	return len(ds), nil
}

// sentTo is a recipient actor (or "") and the inbox URL a delivery went to.
type sentTo struct{ to, inbox string }

// announceTargets plans an announcement to the related actors and the
// inboxes deliveries went to, each inbox once, as a server delivers an
// Update(Person): shared inboxes first, each standing for every actor of
// its host; then each remaining actor at the inbox it was delivered at
// (inbox empty when none is known: the queue looks it up), then the
// remaining inboxes. An inbox is shared when it is not under its
// recipient's id (Mastodon's and Fedify's /inbox) or took deliveries for
// several actors.
func announceTargets(related []string, sent []sentTo) []sentTo {
	recipients := map[string]map[string]bool{} // inbox -> recipients
	var inboxes []string
	known := map[string]string{} // actor -> an inbox it was delivered at
	for _, s := range sent {
		if recipients[s.inbox] == nil {
			recipients[s.inbox] = map[string]bool{}
			inboxes = append(inboxes, s.inbox)
		}
		recipients[s.inbox][s.to] = true
		if s.to != "" && known[s.to] == "" {
			known[s.to] = s.inbox
		}
	}
	shared := func(inbox string) bool {
		if len(recipients[inbox]) > 1 {
			return true
		}
		for to := range recipients[inbox] {
			return to == "" || !strings.HasPrefix(inbox, to+"/")
		}
		return false
	}
	var out []sentTo
	queued, coveredHost, coveredActor := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, inbox := range inboxes {
		if !shared(inbox) {
			continue
		}
		to := ""
		for r := range recipients[inbox] {
			if r != "" && (to == "" || r < to) {
				to = r
			}
			coveredActor[r] = true
		}
		out = append(out, sentTo{to: to, inbox: inbox})
		queued[inbox], coveredHost[actors.HostOf(inbox)] = true, true
	}
	actorsToo := append(slices.Clone(related), slices.Collect(maps.Keys(known))...)
	slices.Sort(actorsToo[len(related):]) // the log's actors in a stable order, after the graph's
	for _, id := range actorsToo {
		if coveredActor[id] || coveredHost[actors.HostOf(id)] {
			continue
		}
		coveredActor[id] = true
		inbox := known[id]
		if inbox != "" && queued[inbox] {
			continue
		}
		queued[inbox] = inbox != ""
		out = append(out, sentTo{to: id, inbox: inbox})
	}
	for _, inbox := range inboxes {
		if !queued[inbox] && !coveredHost[actors.HostOf(inbox)] {
			queued[inbox] = true
			out = append(out, sentTo{inbox: inbox})
		}
	}
	return out
}
