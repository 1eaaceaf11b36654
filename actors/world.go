package actors

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

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
func worldEpoch() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// World is every origin the crowd serves, their actors and the follow
// graph. It is built once by Open and then only read, except for the Graph,
// which is safe for concurrent use.
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

	byHost  map[string]*Origin
	byID    map[string]*Actor
	persons []*Actor
}

// Origin is one fake fediverse server.
type Origin struct {
	// Index is the 1-based origin number that fills the domain pattern.
	Index int
	// Host is the origin's host name, lower case, no port.
	Host string
	// Actors are the origin's Person actors, in name order.
	Actors []*Actor
	// Instance is the origin's Application actor, used for signed GETs.
	Instance *Actor

	byName map[string]*Actor
}

// Actor is one account of an origin, with its key pair.
type Actor struct {
	// Origin is the server the actor lives on.
	Origin *Origin
	// Name is the preferredUsername; the instance actor's is its host.
	Name string
	// Kind is KindPerson or KindApplication.
	Kind string
	// ID is the actor's URL and ActivityPub id.
	ID string
	// KeyID is the id of the actor's public key: ID + "#main-key".
	KeyID string
	// Key is the actor's private key. Never serve it.
	Key *rsa.PrivateKey
	// PublicKeyPEM is the SPKI PEM of the public key, as documents carry it.
	PublicKeyPEM string
	// Published is the stable creation date shown in the actor document.
	Published time.Time

	docJSON []byte // Document() rendered once: it never changes while serving

	signer signing.Key // Key wrapped by the world's backend (SigningKey)

	retained []PublicKeyDoc // earlier keys still served after a rotation (rotate.go)
}

// Open builds the world described by cfg, loading every key from
// cfg.StateDir or generating and persisting the missing ones, and opens
// the follow graph and the outboxes.
func Open(cfg Config) (*World, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w, all := layout(cfg)
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
	if err := loadOrGenerateKeys(cfg.StateDir, all, !cfg.BorrowKeys, log); err != nil {
		return nil, err
	}
	for _, a := range all {
		if err := a.loadRotation(cfg.StateDir, !cfg.BorrowKeys); err != nil {
			return nil, err
		}
	}
	if err := w.wrapKeys(all); err != nil {
		return nil, err
	}
	for _, a := range all {
		doc, err := MarshalDoc(a.Document())
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", a.Acct(), err)
		}
		a.docJSON = doc
	}
	oo := OutboxOptions{Keep: cfg.OutboxKeep, Logger: log}
	if cfg.EphemeralGraph {
		w.Graph, w.Outbox = NewMemoryGraph(), NewMemoryOutbox(oo)
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
	w.Graph, w.Outbox = g, ob
	return w, nil
}

// layout builds the origins and actors of a valid cfg, without keys or
// graph, and returns every actor (persons and instance actors).
func layout(cfg Config) (*World, []*Actor) {
	w := &World{Config: cfg, byHost: map[string]*Origin{}, byID: map[string]*Actor{}}
	var all []*Actor
	for i := 1; i <= cfg.Origins; i++ {
		if !cfg.Shard.Has(i) {
			continue
		}
		o := &Origin{Index: i, Host: strings.ToLower(fmt.Sprintf(cfg.Domain, i)), byName: map[string]*Actor{}}
		for j := range cfg.Actors {
			name := ActorName(j)
			a := &Actor{Origin: o, Name: name, Kind: KindPerson, ID: "https://" + o.Host + "/users/" + name,
				Published: worldEpoch().Add(time.Duration(j) * time.Minute)}
			o.Actors = append(o.Actors, a)
			o.byName[name] = a
		}
		o.Instance = &Actor{Origin: o, Name: o.Host, Kind: KindApplication, ID: "https://" + o.Host + "/actor", Published: worldEpoch()}
		o.byName[o.Host] = o.Instance
		for _, a := range append(append([]*Actor(nil), o.Actors...), o.Instance) {
			a.KeyID = a.ID + "#main-key"
			w.byID[a.ID] = a
			all = append(all, a)
		}
		w.persons = append(w.persons, o.Actors...)
		w.Origins = append(w.Origins, o)
		w.byHost[o.Host] = o
	}
	return w, all
}

// Close writes what the outboxes hold and releases their journal and the
// follow graph's.
func (w *World) Close() error { return errors.Join(w.Outbox.Close(), w.Graph.Close()) }

func (a *Actor) setKey(key *rsa.PrivateKey) error {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encode public key of %s: %w", a.Acct(), err)
	}
	a.Key = key
	a.PublicKeyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	return nil
}

// Origin finds an origin by host name (any case; a port is ignored).
func (w *World) Origin(host string) (*Origin, bool) {
	o, ok := w.byHost[normalizeHost(host)]
	return o, ok
}

// ActorByID finds a crowd actor by its id (URL); a fragment such as
// "#main-key" is ignored, so a keyId finds its owner too.
func (w *World) ActorByID(id string) (*Actor, bool) {
	id, _, _ = strings.Cut(id, "#")
	a, ok := w.byID[id]
	return a, ok
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

// Actors lists every Person actor of every origin, in origin order.
func (w *World) Actors() []*Actor { return w.persons }

// Actor finds a Person by preferredUsername, or the instance actor by its
// name (the host).
func (o *Origin) Actor(name string) (*Actor, bool) {
	a, ok := o.byName[name]
	return a, ok
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
