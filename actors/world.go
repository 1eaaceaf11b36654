package actors

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/statedir"
	"github.com/crowdfed/crowd/signing"
)

// Kinds of actor the crowd serves.
const (
	KindPerson      = "Person"
	KindApplication = "Application"
)

// worldEpoch is the stable "published" date of the world: documents stay
// byte-identical across restarts, which golden files and caches rely on.
// It is 2026-01-01T00:00:00Z from Unix seconds: every actor lookup asks for
// it, and time.Date's calendar arithmetic was a tenth of a lookup's cost.
func worldEpoch() time.Time { return time.Unix(1767225600, 0).UTC() }

// World is every origin the crowd serves and the follow graph. Origins are
// built when it opens; their actors are computed from (origin, index) when
// asked, so a world of a million actors opens in milliseconds and holds
// only what is in use. It is only read after Open, except for the Graph,
// which is safe for concurrent use, and the bounded caches inside it.
type World struct {
	// Config is the configuration the world was built from.
	Config Config
	// Origins are the origins this crowd serves (its shard), in index order.
	Origins []*Origin
	// Graph is the persisted follow graph.
	Graph *Graph
	// Outbox is what each actor sent (RecordSent), which its outbox
	// collection lists.
	Outbox *Outbox
	// Changes are the edits and deletions of what the actors sent
	// (RecordChanges), which the objects' ids then answer.
	Changes *Changes
	// Reactions are the actors' Likes and Announces of objects, each kept
	// until its Undo (RecordReactions), so none is sent twice.
	Reactions *Reactions

	byHost    map[string]*Origin
	keys      *keyRing
	docs      *lru.Cache[string, []byte] // rendered actor documents, by actor id
	rotations rotations                  // the rotated actors' keys (rotate.go)
}

// DocCacheSize bounds how many rendered actor documents a world keeps:
// rendering one costs tens of microseconds, so the busiest stay rendered
// and a million-actor world stays small.
const DocCacheSize = 8192

// Origin is one fake fediverse server.
type Origin struct {
	// Index is the 1-based origin number that fills the domain pattern.
	Index int
	// Host is the origin's host name, lower case, no port.
	Host string
	// Instance is the origin's Application actor, used for signed GETs.
	Instance *Actor

	world  *World
	shared []atomic.Pointer[Actor] // the Persons SharedActor made, Person j at j mod len
}

// Actor is one account of an origin, with its key. Actors are values
// computed on demand: two lookups of one actor may return different
// pointers to equal actors, so compare ids, not pointers.
type Actor struct {
	// Origin is the server the actor lives on.
	Origin *Origin
	// Name is the preferredUsername; the instance actor's is its host.
	Name string
	// Kind is KindPerson or KindApplication.
	Kind string
	// ID is the actor's URL and ActivityPub id.
	ID string
	// KeyID is the id of the actor's public key: ID + "#main-key", kept
	// by a rotation, or ID + "#main-key-N" after a rotation to a new key id
	// (rotate.go).
	KeyID string
	// Key is the actor's private key (several actors may share its
	// material; each has its own KeyID). It is parsed from the state
	// directory on first use. Never serve it.
	Key signing.Key
	// Published is the stable creation date shown in the actor document.
	Published time.Time

	key      *keyEntry
	index    int            // a Person's index in its origin
	leaver   bool           // made to be deleted (Leaver)
	retained []PublicKeyDoc // earlier keys still served after a rotation (rotate.go)

	rotation *rotatedKey             // its rotated key when it was made (nil: none); current while the world's is this one
	doc      *atomic.Pointer[[]byte] // a shared actor's rendered document (DocumentJSON); nil for others
}

// Open builds the world described by cfg, checking that every key exists
// in cfg.StateDir or generating and persisting the missing ones (no key is
// parsed until used), and opens the follow graph and the outboxes. A key
// the state held and lost is refused with an error wrapping ErrKeyFile
// (see Config.AllowLostKeys), never made again. It is OpenContext with a
// context that is never done.
func Open(cfg Config) (*World, error) { return OpenContext(context.Background(), cfg) }

// OpenContext is Open, stopped when ctx is done (SIGINT while a first
// start makes thousands of keys): key making ends within one key's time,
// the keys written stay (whole: each is written atomically) for the next
// start, which makes only the others, and the error wraps ctx.Err().
func OpenContext(ctx context.Context, cfg Config) (*World, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := layout(cfg)
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if !cfg.BorrowKeys {
		// One clear error for a --state that cannot hold state, before
		// a key is attempted: not one per key.
		if err := statedir.Prepare(cfg.StateDir); err != nil {
			return nil, err
		}
	}
	keys, err := openKeys(ctx, w, log)
	if err != nil {
		return nil, err
	}
	w.keys = keys
	// Before the first actor is computed: newActor consults the rotations.
	if err := loadRotations(w, log); err != nil {
		return nil, err
	}
	for _, o := range w.Origins {
		o.Instance = o.newActor(cfg.Actors)
	}
	oo := OutboxOptions{Keep: cfg.OutboxKeep, Logger: log}
	if cfg.EphemeralGraph {
		w.Graph, w.Outbox, w.Changes, w.Reactions = NewMemoryGraph(), NewMemoryOutbox(oo), NewMemoryChanges(), NewMemoryReactions()
		return w, nil
	}
	g, err := OpenGraph(cfg.StateDir, log)
	if err != nil {
		return nil, err
	}
	ob, err := OpenOutbox(cfg.StateDir, oo)
	if err != nil {
		g.Close()
		return nil, err
	}
	ch, err := OpenChanges(cfg.StateDir, log)
	if err != nil {
		g.Close()
		ob.Close()
		return nil, err
	}
	rs, err := OpenReactions(cfg.StateDir, log)
	if err != nil {
		g.Close()
		ob.Close()
		ch.Close()
		return nil, err
	}
	w.Graph, w.Outbox, w.Changes, w.Reactions = g, ob, ch, rs
	return w, nil
}

// layout builds the origins of a valid cfg, without keys or graph.
func layout(cfg Config) *World {
	docs, _ := lru.New[string, []byte](DocCacheSize) // only fails for a size < 1
	w := &World{Config: cfg, byHost: map[string]*Origin{}, docs: docs}
	for i := 1; i <= cfg.Origins; i++ {
		if !cfg.Shard.Has(i) {
			continue
		}
		o := &Origin{Index: i, Host: cfg.hostOf(i), world: w}
		w.Origins = append(w.Origins, o)
		w.byHost[o.Host] = o
	}
	// The shared actors keep their documents rendered, so all of them
	// together hold as many as the cache of rendered documents does, or
	// one an origin in a world of more origins than that.
	slots := min(cfg.Actors, max(1, DocCacheSize/max(1, len(w.Origins))))
	for _, o := range w.Origins {
		o.shared = make([]atomic.Pointer[Actor], slots)
	}
	return w
}

// newActor computes actor j of o: Person j (0-based) for j < Config.Actors,
// the instance actor for j == Config.Actors.
func (o *Origin) newActor(j int) *Actor {
	name := o.Host
	if j != o.world.Config.Actors {
		name = ActorName(j)
	}
	return o.namedActor(j, name)
}

// namedActor is newActor for a caller that has the actor's name already
// (ActorName(j), or the host for the instance actor): a lookup by name
// parsed it, and need not build it again.
func (o *Origin) namedActor(j int, name string) *Actor {
	// The id and its key's id share one string: an actor is made on every
	// lookup (each GET of its document), so each string is an allocation.
	const fragment = "#main-key"
	var a *Actor
	if j == o.world.Config.Actors {
		keyID := "https://" + o.Host + "/actor" + fragment
		a = &Actor{Origin: o, Name: name, Kind: KindApplication, ID: keyID[:len(keyID)-len(fragment)], KeyID: keyID, Published: worldEpoch()}
	} else {
		keyID := "https://" + o.Host + "/users/" + name + fragment
		a = &Actor{Origin: o, Name: name, Kind: KindPerson, ID: keyID[:len(keyID)-len(fragment)], KeyID: keyID,
			Published: worldEpoch().Add(time.Duration(j) * time.Minute), index: j}
	}
	if o.world.keys != nil {
		a.key = o.world.keys.entry(o.Index, j)
		a.Key = a.key
	}
	a.rotation = o.world.rotations.apply(a)
	return a
}

// Close writes what the outboxes hold and releases their journal and the
// follow graph's.
func (w *World) Close() error {
	return errors.Join(w.Outbox.Close(), w.Graph.Close(), w.Changes.Close(), w.Reactions.Close())
}

// Origin finds an origin by host name (any case; a port is ignored).
func (w *World) Origin(host string) (*Origin, bool) {
	o, ok := w.byHost[normalizeHost(host)]
	return o, ok
}

// ActorByID finds a crowd actor by its id (URL); a fragment such as
// "#main-key" is ignored, so a keyId finds its owner too; leavers (see
// Actor.Leaver) are found by their ids as well. It parses the id, so it
// costs the same in a world of any size.
func (w *World) ActorByID(id string) (*Actor, bool) {
	id, _, _ = strings.Cut(id, "#")
	rest, ok := strings.CutPrefix(id, "https://")
	if !ok {
		return nil, false
	}
	host, path, ok := strings.Cut(rest, "/")
	if !ok {
		return nil, false
	}
	o, ok := w.byHost[host]
	if !ok {
		return nil, false
	}
	if path == "actor" {
		return o.Instance, true
	}
	name, ok := strings.CutPrefix(path, "users/")
	if !ok {
		return nil, false
	}
	a, ok := o.Actor(name)
	if !ok || a.Kind != KindPerson {
		return nil, false
	}
	return a, true
}

// ActorByKeyID finds the crowd actor whose key has this keyId.
func (w *World) ActorByKeyID(keyID string) (*Actor, bool) {
	a, ok := w.ActorByID(keyID)
	if !ok || a.KeyID != keyID {
		return nil, false
	}
	return a, true
}

// Hosts lists the origins' host names in index order.
func (w *World) Hosts() []string {
	hosts := make([]string, len(w.Origins))
	for i, o := range w.Origins {
		hosts[i] = o.Host
	}
	return hosts
}

// NumPersons is how many Person actors the world (its shard) has.
func (w *World) NumPersons() int { return len(w.Origins) * w.Config.Actors }

// Person is the i-th (0-based, 0 ≤ i < NumPersons) Person of the world, in
// origin order, computed in constant time.
func (w *World) Person(i int) *Actor {
	return w.Origins[i/w.Config.Actors].newActor(i % w.Config.Actors)
}

// Actors lists every Person actor of every origin, in origin order. It
// computes them all: for small worlds and tests; a large world is walked
// with NumPersons and Person.
func (w *World) Actors() []*Actor {
	out := make([]*Actor, w.NumPersons())
	for i := range out {
		out[i] = w.Person(i)
	}
	return out
}

// World is the world the origin belongs to.
func (o *Origin) World() *World { return o.world }

// NumActors is how many Person actors the origin has.
func (o *Origin) NumActors() int { return o.world.Config.Actors }

// Person is the origin's j-th (0-based) Person actor.
func (o *Origin) Person(j int) *Actor { return o.newActor(j) }

// Persons lists the origin's Person actors, in name order.
func (o *Origin) Persons() []*Actor {
	out := make([]*Actor, o.NumActors())
	for j := range out {
		out[j] = o.newActor(j)
	}
	return out
}

// Actor finds a Person by preferredUsername (a leaver too, see
// Actor.Leaver), or the instance actor by its name (the host).
func (o *Origin) Actor(name string) (*Actor, bool) {
	j, a, ok := o.find(name)
	if j < 0 {
		return a, ok
	}
	return o.namedActor(j, name), true // actorIndex took only the name ActorName(j) makes
}

// find looks name up: the index of the Person of that name (its actor not
// made yet), or -1 and the actor of any other name (the instance actor, a
// leaver) with whether there is one.
func (o *Origin) find(name string) (int, *Actor, bool) {
	if name == o.Host {
		return -1, o.Instance, true
	}
	j, ok := actorIndex(name)
	if !ok || j >= o.NumActors() {
		a, ok := o.parseLeaver(name)
		return -1, a, ok
	}
	return j, nil, true
}

// current reports whether a still holds its key: none of its rotations
// happened since it was made.
func (a *Actor) current() bool { return a.rotation == a.Origin.world.rotations.of(a.ID) }

// SharedActor is Actor for a caller that only reads the actor, as a
// document's GET does: the Person it returns may be shared with other
// callers, so that a GET computes no actor and renders no document again,
// and it must not be changed (nor passed to RotateKey or RetireKeys). A
// rotation since it was made is seen: the lookup after it makes the actor
// again.
func (o *Origin) SharedActor(name string) (*Actor, bool) {
	j, a, ok := o.find(name)
	if j < 0 {
		return a, ok
	}
	slot := &o.shared[j%len(o.shared)]
	if kept := slot.Load(); kept != nil && kept.index == j && kept.current() {
		return kept, true
	}
	a = o.namedActor(j, name)
	a.doc = new(atomic.Pointer[[]byte])
	slot.Store(a)
	return a, true
}

// Inbox is the actor's own inbox URL.
func (a *Actor) Inbox() string { return a.ID + "/inbox" }

// SharedInbox is the origin's shared inbox URL.
func (a *Actor) SharedInbox() string { return "https://" + a.Origin.Host + "/inbox" }

// Outbox is the actor's outbox collection URL.
func (a *Actor) Outbox() string { return a.ID + "/outbox" }

// Followers is the actor's followers collection URL.
func (a *Actor) Followers() string { return a.ID + "/followers" }

// Following is the actor's following collection URL.
func (a *Actor) Following() string { return a.ID + "/following" }

// Featured is the actor's featured (pinned posts) collection URL, where
// Mastodon serves it; GoToSocial fetches it for every account it looks up.
func (a *Actor) Featured() string { return a.ID + "/collections/featured" }

// FeaturedTags is the actor's featured hashtags collection URL.
func (a *Actor) FeaturedTags() string { return a.ID + "/collections/tags" }

// ProfileURL is the human-facing page of the actor (its "url").
func (a *Actor) ProfileURL() string {
	if a.Kind == KindApplication {
		return "https://" + a.Origin.Host + "/about"
	}
	return "https://" + a.Origin.Host + "/@" + a.Name
}

// Acct is the actor's WebFinger handle without the "acct:" scheme.
func (a *Actor) Acct() string { return a.Name + "@" + a.Origin.Host }

func normalizeHost(h string) string {
	if strings.HasPrefix(h, "[") {
		return strings.ToLower(h)
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// HostOf is the lower-case host (no port) of an absolute URL, or "" when
// the URL cannot be parsed.
func HostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// PrivateKey is the actor's RSA private key, parsed from the state
// directory on first use; the error names a key file that cannot be used.
func (a *Actor) PrivateKey() (*rsa.PrivateKey, error) {
	if a.key == nil {
		return nil, fmt.Errorf("%w: %s has no key", ErrKeyFile, a.Acct())
	}
	if err := a.key.load(); err != nil {
		return nil, err
	}
	return a.key.key, nil
}
