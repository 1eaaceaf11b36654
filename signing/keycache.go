package signing

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/crowdfed/crowd/internal/redirect"
)

// KeyCacheOptions configures a KeyCache. Zero fields take the defaults shown.
type KeyCacheOptions struct {
	// Client fetches keys; default a client with a 10 s timeout. The cache
	// uses a copy whose redirects are limited to the keyId's host
	// (redirect.SameHost); the client given is left as it was.
	Client *http.Client
	// SignGet signs each key fetch (e.g. with the receiving origin's instance
	// actor), since servers in authorized-fetch mode refuse unsigned GETs.
	// Nil sends unsigned GETs.
	SignGet func(*http.Request) error
	// TTL is how long a fetched key is trusted; default 1 h.
	TTL time.Duration
	// NegativeTTL is how long a failed lookup is remembered, so a burst of
	// requests with a dead keyId costs one fetch; default 10 s. Kept short:
	// the peer may just be starting.
	NegativeTTL time.Duration
	// MinRefresh: a refresh (after a failed signature) is honoured only when the
	// cached entry is at least this old; default 0 (always refetch once), which
	// is what real servers do for key rotation.
	MinRefresh time.Duration
	// MaxEntries bounds the cache (least recently used evicted); default 10000.
	MaxEntries int
	// Timeout bounds one fetch (including an owner confirmation); default 10 s.
	// Fetches are detached from the caller's context so that one impatient
	// caller does not fail the others waiting on the same keyId.
	Timeout time.Duration
	// MaxBodyBytes bounds a fetched document; default 1 MiB.
	MaxBodyBytes int64
	// Now is the clock for TTLs; default time.Now.
	Now func() time.Time
}

// KeyCache is a KeyResolver that fetches keyIds over HTTP(S) with an
// (optionally signed) GET, and caches the result with a TTL in a bounded LRU.
// Concurrent misses for the same keyId share one fetch. It is safe for
// concurrent use.
//
// A keyId is fetched without its #fragment. The answer may be an actor with
// the key embedded (publicKey as an object or an array, or assertionMethod
// Multikeys; the key whose id equals keyId is used, and its owner must be the
// actor), or a standalone key document (id equal to keyId, with an owner). The
// document's id must be on keyId's host, and a redirect to another host is
// refused before the request leaves for it; a standalone key whose owner is on another host is accepted only
// if the owner's actor document lists the same key.
type KeyCache struct {
	o KeyCacheOptions

	mu    sync.Mutex
	lru   *list.List // of *cacheEntry, most recent at the front
	items map[string]*list.Element

	fmu     sync.Mutex
	flights map[string]*flight

	fetches int64 // guarded by fmu; for tests and diagnostics
}

type cacheEntry struct {
	keyID   string
	pk      PublicKey
	err     error
	fetched time.Time
	expires time.Time
}

type flight struct {
	done chan struct{}
	pk   PublicKey
	err  error
}

// NewKeyCache returns a KeyCache for o.
func NewKeyCache(o KeyCacheOptions) *KeyCache {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	o.Client = redirect.Client(o.Client)
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	if o.NegativeTTL <= 0 {
		o.NegativeTTL = 10 * time.Second
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 10000
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &KeyCache{o: o, lru: list.New(), items: make(map[string]*list.Element), flights: make(map[string]*flight)}
}

// ResolveKey returns the key for keyID from the cache or by fetching it. With
// refresh, a cached entry older than MinRefresh is ignored and refetched; if
// that refetch fails, the caller gets the failure but the cached key stays.
// Failures (also cached, for NegativeTTL) wrap ErrKeyUnavailable; a caller
// whose ctx ends while waiting gets an error wrapping both ErrKeyUnavailable
// and ctx.Err(), while the fetch carries on for the others.
func (c *KeyCache) ResolveKey(ctx context.Context, keyID string, refresh bool) (PublicKey, error) {
	now := c.o.Now()
	c.mu.Lock()
	if el, ok := c.items[keyID]; ok {
		e := el.Value.(*cacheEntry)
		if now.Before(e.expires) && !(refresh && now.Sub(e.fetched) >= c.o.MinRefresh) {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			return e.pk, e.err
		}
	}
	c.mu.Unlock()

	c.fmu.Lock()
	f, ok := c.flights[keyID]
	if !ok {
		f = &flight{done: make(chan struct{})}
		c.flights[keyID] = f
		c.fetches++
		go c.run(ctx, keyID, f)
	}
	c.fmu.Unlock()
	select {
	case <-f.done:
		return f.pk, f.err
	case <-ctx.Done():
		return PublicKey{}, fmt.Errorf("%w: waiting for %s: %w", ErrKeyUnavailable, keyID, ctx.Err())
	}
}

// run performs one fetch for keyID, stores the result, then releases waiters.
func (c *KeyCache) run(ctx context.Context, keyID string, f *flight) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.o.Timeout)
	defer cancel()
	pk, err := c.fetchKey(fctx, keyID)
	if err != nil && !errors.Is(err, ErrKeyUnavailable) {
		err = fmt.Errorf("%w: %w", ErrKeyUnavailable, err)
	}
	f.pk, f.err = pk, err
	c.store(keyID, pk, err)
	c.fmu.Lock()
	delete(c.flights, keyID)
	c.fmu.Unlock()
	close(f.done)
}

func (c *KeyCache) store(keyID string, pk PublicKey, err error) {
	now := c.o.Now()
	ttl := c.o.TTL
	if err != nil {
		ttl = c.o.NegativeTTL
	}
	e := &cacheEntry{keyID: keyID, pk: pk, err: err, fetched: now, expires: now.Add(ttl)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[keyID]; ok {
		old := el.Value.(*cacheEntry)
		// A failed refetch (say, a peer restarting) must not throw away a key
		// that is still within its TTL: keep serving it.
		if err == nil || old.err != nil || !now.Before(old.expires) {
			el.Value = e
		}
		c.lru.MoveToFront(el)
		return
	}
	c.items[keyID] = c.lru.PushFront(e)
	for c.lru.Len() > c.o.MaxEntries {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.items, old.Value.(*cacheEntry).keyID)
	}
}

// Invalidate drops keyID from the cache (e.g. on an Update of the actor).
func (c *KeyCache) Invalidate(keyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[keyID]; ok {
		c.lru.Remove(el)
		delete(c.items, keyID)
	}
}

// Len is the number of cached entries, failures included.
func (c *KeyCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Fetches is how many fetches the cache has started (one per keyId per miss,
// however many callers waited on it).
func (c *KeyCache) Fetches() int64 {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	return c.fetches
}

func (c *KeyCache) fetchKey(ctx context.Context, keyID string) (PublicKey, error) {
	u, err := url.Parse(keyID)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return PublicKey{}, fmt.Errorf("%w: keyId %q is not an http(s) URL", ErrKeyUnavailable, keyID)
	}
	body, err := c.get(ctx, stripFragment(keyID))
	if err != nil {
		return PublicKey{}, err
	}
	pk, err := keyFromDocument(body, keyID)
	if !errors.Is(err, errStandalone) {
		return pk, err
	}
	// A key document on one host naming an owner on another: believe it only
	// if the owner's own actor document lists this very key.
	obody, err := c.get(ctx, stripFragment(pk.Owner))
	if err != nil {
		return PublicKey{}, fmt.Errorf("confirming owner of %s: %w", keyID, err)
	}
	var doc keyNode
	if err := json.Unmarshal(obody, &doc); err != nil || doc.ID != pk.Owner {
		return PublicKey{}, fmt.Errorf("%w: owner document %s is not a document with id %s", ErrKeyUnavailable, stripFragment(pk.Owner), pk.Owner)
	}
	opk, err := findEmbeddedKey(&doc, keyID)
	if err != nil {
		return PublicKey{}, fmt.Errorf("owner %s does not list key %s: %w", pk.Owner, keyID, err)
	}
	if !equalKeys(opk.Key, pk.Key) {
		return PublicKey{}, fmt.Errorf("%w: owner %s lists a different key under %s", ErrKeyUnavailable, pk.Owner, keyID)
	}
	return pk, nil
}

// get fetches an ActivityPub document, signed when SignGet is set. Redirects
// to another host are refused by the client before they are followed: the
// document must come from the keyId's origin, and the signed GET must not
// reach a host it was not meant for.
func (c *KeyCache) get(ctx context.Context, target string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", ErrKeyUnavailable, target, err)
	}
	req.Header.Set("Accept", AcceptActivity)
	if c.o.SignGet != nil {
		if err := c.o.SignGet(req); err != nil {
			return nil, fmt.Errorf("%w: signing GET %s: %w", ErrKeyUnavailable, target, err)
		}
	}
	resp, err := c.o.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrKeyUnavailable, target, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("%w: GET %s: %s", ErrKeyUnavailable, target, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.o.MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: reading body: %w", ErrKeyUnavailable, target, err)
	}
	if int64(len(body)) > c.o.MaxBodyBytes {
		return nil, fmt.Errorf("%w: GET %s: document larger than %d bytes", ErrKeyUnavailable, target, c.o.MaxBodyBytes)
	}
	return body, nil
}
