package actors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"
)

// Media types of ActivityPub documents.
const (
	ContentTypeActivity = "application/activity+json"
	ContentTypeLD       = `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`
	// PublicAudience is the special collection that makes a post public.
	PublicAudience = "https://www.w3.org/ns/activitystreams#Public"
)

// actorContext is what Mastodon and GoToSocial put in an actor's @context:
// ActivityStreams, security v1 (publicKey), and the Mastodon extensions
// whose terms we use.
func actorContext() []any {
	return []any{
		"https://www.w3.org/ns/activitystreams",
		"https://w3id.org/security/v1",
		map[string]any{
			"manuallyApprovesFollowers": "as:manuallyApprovesFollowers",
			"toot":                      "http://joinmastodon.org/ns#",
			"discoverable":              "toot:discoverable",
			"indexable":                 "toot:indexable",
			"featured":                  map[string]any{"@id": "toot:featured", "@type": "@id"},
			"featuredTags":              map[string]any{"@id": "toot:featuredTags", "@type": "@id"},
		},
	}
}

// PublicKeyDoc is the publicKey object of an actor document.
type PublicKeyDoc struct {
	ID           string `json:"id"`
	Owner        string `json:"owner"`
	PublicKeyPem string `json:"publicKeyPem"`
}

// ActorDoc is an actor document as the crowd serves it. Field order is
// the JSON order, kept stable for golden files and caches.
type ActorDoc struct {
	Context                   []any             `json:"@context,omitempty"`
	ID                        string            `json:"id"`
	Type                      string            `json:"type"`
	PreferredUsername         string            `json:"preferredUsername"`
	Name                      string            `json:"name"`
	Summary                   string            `json:"summary"`
	URL                       string            `json:"url"`
	Inbox                     string            `json:"inbox"`
	Outbox                    string            `json:"outbox"`
	Followers                 string            `json:"followers"`
	Following                 string            `json:"following"`
	Featured                  string            `json:"featured"`
	FeaturedTags              string            `json:"featuredTags"`
	Endpoints                 map[string]string `json:"endpoints"`
	PublicKey                 PublicKeyDoc      `json:"publicKey"`
	ManuallyApprovesFollowers bool              `json:"manuallyApprovesFollowers"`
	Discoverable              bool              `json:"discoverable"`
	Indexable                 bool              `json:"indexable"`
	Published                 string            `json:"published"`
	// AdditionalPublicKeys are the keys retained after a rotation
	// (Misskey's extension; rotate.go); omitted when none.
	AdditionalPublicKeys []PublicKeyDoc `json:"additionalPublicKeys,omitempty"`
	// Updated is when the profile last changed (Actor.ProfileVersion);
	// empty for a profile never changed.
	Updated string `json:"updated,omitempty"`
}

// Document is the actor's ActivityPub document with every field real
// servers check: id equal to the URL it is served at, publicKey whose
// owner is the actor, the shared inbox, a display name no other actor of the
// world has, and the collections (each served at its URL).
func (a *Actor) Document() ActorDoc {
	name := DisplayName(a.Name, a.Origin.Host)
	summary := fmt.Sprintf("A member of the crowd on %s, one of the fake servers that load-test and debug federation.", a.Origin.Host)
	if a.Kind == KindApplication {
		name = a.Origin.Host
		summary = "The instance actor of " + a.Origin.Host + "; it signs the crowd's fetches."
	}
	return ActorDoc{
		Context:           actorContext(),
		ID:                a.ID,
		Type:              a.Kind,
		PreferredUsername: a.Name,
		Name:              name,
		Summary:           summary,
		URL:               a.ProfileURL(),
		Inbox:             a.Inbox(),
		Outbox:            a.Outbox(),
		Followers:         a.Followers(),
		Following:         a.Following(),
		Featured:          a.Featured(),
		FeaturedTags:      a.FeaturedTags(),
		Endpoints:         map[string]string{"sharedInbox": a.SharedInbox()},
		PublicKey:         PublicKeyDoc{ID: a.KeyID, Owner: a.ID, PublicKeyPem: a.PublicKeyPEM()},
		Discoverable:      a.Kind == KindPerson,
		Indexable:         a.Kind == KindPerson,
		Published:         a.Published.Format(time.RFC3339),

		AdditionalPublicKeys: a.retained,
	}
}

// DocumentJSON is Document rendered by MarshalDoc, kept in the world's
// bounded cache of rendered documents (and by a shared actor, see
// Origin.SharedActor, itself); callers must not modify it. An actor whose
// key rotated since it was made renders its own, the old key's, each time
// and leaves the cache to the new one. It is nil only when the actor's
// key file cannot be loaded (logged).
func (a *Actor) DocumentJSON() []byte {
	if a.doc != nil { // a shared actor (Origin.SharedActor) keeps its own
		if b := a.doc.Load(); b != nil {
			return *b
		}
	}
	// Rotated since a was made, a renders its own: the cache keeps the
	// document of its new key.
	docs, current := a.Origin.world.docs, a.current()
	var b []byte
	ok := false
	if current {
		b, ok = docs.Get(a.ID)
	}
	if !ok {
		if a.PublicKeyPEM() == "" {
			return nil
		}
		var err error
		if b, err = MarshalDoc(a.Document()); err != nil {
			return nil // an ActorDoc of strings always encodes
		}
		if !current {
			return b
		}
		docs.Add(a.ID, b)
	}
	if a.doc != nil {
		a.doc.Store(&b)
	}
	return b
}

// PublicKeyPEM is the SPKI PEM of the actor's public key, as documents
// carry it ("" when its key file cannot be loaded).
func (a *Actor) PublicKeyPEM() string {
	if a.key == nil {
		return ""
	}
	return a.key.publicPEM()
}

// ProfileHTML is the small page a browser gets for the actor.
func (a *Actor) ProfileHTML() []byte {
	esc := html.EscapeString
	return []byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>` + esc(a.Acct()) + `</title>
<link rel="alternate" type="application/activity+json" href="` + esc(a.ID) + `"></head>
<body><h1>@` + esc(a.Acct()) + `</h1>
<p>` + esc(a.Document().Summary) + `</p>
<p>ActivityPub id: <a href="` + esc(a.ID) + `">` + esc(a.ID) + `</a></p>
</body></html>
`)
}

// CollectionPageSize is how many items one page of a collection holds.
const CollectionPageSize = 50

// CollectionOf is an OrderedCollection or one OrderedCollectionPage of it
// whose items are T: ids, or embedded activities.
type CollectionOf[T any] struct {
	Context      any    `json:"@context"`
	ID           string `json:"id"`
	Type         string `json:"type"`
	TotalItems   int    `json:"totalItems"`
	PartOf       string `json:"partOf,omitempty"`
	First        string `json:"first,omitempty"`
	Next         string `json:"next,omitempty"`
	Prev         string `json:"prev,omitempty"`
	OrderedItems []T    `json:"orderedItems,omitempty"`
}

// Collection is a collection of ids (followers, following).
type Collection = CollectionOf[string]

// OutboxPage is an actor's outbox or one page of it: its items are the
// Create activities the actor sent, embedded as Mastodon embeds them. A
// page with items carries the Note's @context.
type OutboxPage = CollectionOf[Activity]

// CollectionDoc renders a collection of item ids with true counts: page 0
// is the OrderedCollection itself (linking its first page), page n ≥ 1 is
// an OrderedCollectionPage of CollectionPageSize items.
func CollectionDoc(id string, items []string, page int) Collection {
	c, start, end := collectionPage[string](id, len(items), len(items), page)
	if page > 0 {
		c.OrderedItems = append([]string{}, items[start:end]...)
	}
	return c
}

// collectionPage is page of the collection id (page 0 its root) that counts
// total items and lists the first listed of them (listed ≤ total: an
// outbox keeps only its latest), without its items, which are
// [start:end) of those listed.
func collectionPage[T any](id string, total, listed, page int) (c CollectionOf[T], start, end int) {
	if page <= 0 {
		return CollectionOf[T]{Context: asContext, ID: id, Type: "OrderedCollection", TotalItems: total, First: id + "?page=1"}, 0, 0
	}
	c = CollectionOf[T]{Context: asContext, ID: id + "?page=" + strconv.Itoa(page), Type: "OrderedCollectionPage",
		TotalItems: total, PartOf: id}
	start = min((page-1)*CollectionPageSize, listed)
	end = min(start+CollectionPageSize, listed)
	if end < listed {
		c.Next = id + "?page=" + strconv.Itoa(page+1)
	}
	if page > 1 {
		c.Prev = id + "?page=" + strconv.Itoa(page-1)
	}
	return c, start, end
}

// FollowersDoc is the actor's followers collection, page as CollectionDoc.
func (w *World) FollowersDoc(a *Actor, page int) Collection {
	rels := w.Graph.Followers(a.ID)
	items := make([]string, len(rels))
	for i, r := range rels {
		items[i] = r.Remote
	}
	return CollectionDoc(a.Followers(), items, page)
}

// FollowingDoc is the actor's following collection (accepted follows
// only), page as CollectionDoc.
func (w *World) FollowingDoc(a *Actor, page int) Collection {
	var items []string
	for _, r := range w.Graph.Following(a.ID) {
		if r.State == StateAccepted {
			items = append(items, r.Remote)
		}
	}
	return CollectionDoc(a.Following(), items, page)
}

// OutboxDoc is the actor's outbox, paged as CollectionDoc: the Creates it
// sent (World.RecordSent), newest first, each regenerated from its note's
// id. totalItems counts every Create ever recorded; the pages list the
// latest Config.OutboxKeep of them.
func (w *World) OutboxDoc(a *Actor, page int) OutboxPage {
	ids, total := w.Outbox.Latest(a.ID)
	out, start, end := collectionPage[Activity](a.Outbox(), total, len(ids), page)
	for _, id := range ids[start:end] {
		if _, gone := w.Changes.Deleted(id); gone {
			continue // a deleted note leaves the outbox (its Tombstone answers at its id)
		}
		obj, err := w.Current(a, strings.TrimPrefix(id, a.ID)+"/activity")
		if err != nil {
			continue // RecordSent let only regenerable ids in
		}
		act := obj.(Activity)
		act.Context = nil
		out.OrderedItems = append(out.OrderedItems, act)
	}
	if len(out.OrderedItems) > 0 {
		out.Context = noteContext()
	}
	return out
}

// InlineCollection is an OrderedCollection whose items are embedded, as
// Mastodon serves featured collections; OrderedItems is always written.
type InlineCollection struct {
	Context      string   `json:"@context"`
	ID           string   `json:"id"`
	Type         string   `json:"type"`
	TotalItems   int      `json:"totalItems"`
	OrderedItems []string `json:"orderedItems"`
}

// FeaturedDoc is the actor's featured collection: empty, since the crowd
// pins no posts, and complete in one document so no server needs a page.
func FeaturedDoc(a *Actor) InlineCollection {
	return InlineCollection{Context: asContext, ID: a.Featured(), Type: "OrderedCollection", OrderedItems: []string{}}
}

// FeaturedTagsDoc is the actor's featured hashtags collection, empty.
func FeaturedTagsDoc(a *Actor) InlineCollection {
	return InlineCollection{Context: asContext, ID: a.FeaturedTags(), Type: "OrderedCollection", OrderedItems: []string{}}
}

// MarshalDoc renders any document as indented JSON, the one encoding
// every handler uses. HTML in content stays readable (no \u003c escapes).
func MarshalDoc(doc any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
