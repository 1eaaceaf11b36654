package signing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"
)

// KeyFetcher fetches the document a keyId names (the URL without its
// #fragment) and returns the body of a 200 answer. The crowd's is
// apclient.Fetcher: a GET signed as an instance actor (servers in
// authorized-fetch mode refuse unsigned ones), with a body limit, and a
// redirect to another host refused before the request leaves for it.
// signing cannot import apclient (apclient signs through signing), so the
// composition root wires one into KeyCacheOptions.
type KeyFetcher interface {
	FetchKey(ctx context.Context, url string) ([]byte, error)
}

// KeyCacheOptions configures a KeyCache. Zero fields take the defaults shown.
type KeyCacheOptions struct {
	// Fetcher fetches key and owner documents (required; without one every
	// lookup fails with ErrKeyUnavailable). Its context carries the
	// caller's values, so a fetcher can sign as the origin the caller names.
	Fetcher KeyFetcher
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
	// Now is the clock for TTLs; default time.Now.
	Now func() time.Time
}

// KeyCache is a KeyResolver that fetches keyIds through its KeyFetcher
// (normally a signed GET), and caches the result with a TTL in a bounded LRU.
// Concurrent misses for the same keyId share one fetch. It is safe for
// concurrent use.
//
// A keyId is fetched without its #fragment. The answer may be an actor with
// the key embedded (publicKey as an object or an array, or assertionMethod
// Multikeys; the key whose id equals keyId is used, and its owner must be the
// actor), or a standalone key document (id equal to keyId, with an owner). The
// document's id must be on keyId's host (that it was served from there is the
// fetcher's redirect policy); a standalone key whose owner is on another host
// is accepted only if the owner's actor document lists the same key.
type KeyCache struct {
	o KeyCacheOptions

	// The LRU is golang-lru's simplelru under our lock rather than its
	// expirable cache: entries have two TTLs (keys and failures), the clock
	// is injected, and store checks the old entry before replacing it.
	mu  sync.Mutex
	lru *simplelru.LRU[string, cacheEntry]

	flights singleflight.Group
	fetches atomic.Int64 // for tests and diagnostics
}

type cacheEntry struct {
	pk      PublicKey
	err     error
	fetched time.Time
	expires time.Time
}

// NewKeyCache returns a KeyCache for o.
func NewKeyCache(o KeyCacheOptions) *KeyCache {
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
	if o.Now == nil {
		o.Now = time.Now
	}
	lru, _ := simplelru.NewLRU[string, cacheEntry](o.MaxEntries, nil) // errors only for a size ≤ 0
	return &KeyCache{o: o, lru: lru}
}

// ResolveKey returns the key for keyID from the cache or by fetching it. With
// refresh, a cached entry older than MinRefresh is ignored and refetched; if
// that refetch fails, the caller gets the failure but the cached key stays.
// Failures (also cached, for NegativeTTL) wrap ErrKeyUnavailable; a caller
// whose ctx ends while waiting gets an error wrapping both ErrKeyUnavailable
// and ctx.Err(), while the fetch carries on for the others.
func (c *KeyCache) ResolveKey(ctx context.Context, keyID string, refresh bool) (PublicKey, error) {
	if e, ok := c.fresh(keyID, refresh); ok {
		return e.pk, e.err
	}
	// The fetch is detached from ctx so that one impatient caller does not
	// fail the others waiting on the same keyId.
	fctx := context.WithoutCancel(ctx)
	ch := c.flights.DoChan(keyID, func() (any, error) {
		// A flight that ended between this caller's miss and its DoChan has
		// stored its answer: take it rather than fetch the same key again.
		if e, ok := c.fresh(keyID, refresh); ok {
			return e.pk, e.err
		}
		return c.fetch(fctx, keyID)
	})
	select {
	case r := <-ch:
		pk, _ := r.Val.(PublicKey)
		return pk, r.Err
	case <-ctx.Done():
		return PublicKey{}, fmt.Errorf("%w: waiting for %s: %w", ErrKeyUnavailable, keyID, ctx.Err())
	}
}

// fresh returns keyID's cached entry while it may be served: within its TTL
// and, for a refresh, fetched less than MinRefresh ago.
func (c *KeyCache) fresh(keyID string, refresh bool) (cacheEntry, bool) {
	now := c.o.Now()
	c.mu.Lock()
	e, ok := c.lru.Get(keyID)
	c.mu.Unlock()
	return e, ok && now.Before(e.expires) && !(refresh && now.Sub(e.fetched) >= c.o.MinRefresh)
}

// fetch performs one fetch for keyID and stores its result.
func (c *KeyCache) fetch(ctx context.Context, keyID string) (PublicKey, error) {
	c.fetches.Add(1)
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	pk, err := c.fetchKey(ctx, keyID)
	if err != nil && !errors.Is(err, ErrKeyUnavailable) {
		err = fmt.Errorf("%w: %w", ErrKeyUnavailable, err)
	}
	c.store(keyID, pk, err)
	return pk, err
}

func (c *KeyCache) store(keyID string, pk PublicKey, err error) {
	now := c.o.Now()
	ttl := c.o.TTL
	if err != nil {
		ttl = c.o.NegativeTTL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A failed refetch (say, a peer restarting) must not throw away a key
	// that is still within its TTL: keep serving it.
	if old, ok := c.lru.Get(keyID); ok && err != nil && old.err == nil && now.Before(old.expires) {
		return
	}
	c.lru.Add(keyID, cacheEntry{pk: pk, err: err, fetched: now, expires: now.Add(ttl)})
}

// Invalidate drops keyID from the cache (e.g. on an Update of the actor).
func (c *KeyCache) Invalidate(keyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(keyID)
}

// Len is the number of cached entries, failures included.
func (c *KeyCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Fetches is how many fetches the cache has started (one per keyId per miss,
// however many callers waited on it).
func (c *KeyCache) Fetches() int64 { return c.fetches.Load() }

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

// get fetches the document at target through the KeyFetcher.
func (c *KeyCache) get(ctx context.Context, target string) ([]byte, error) {
	if c.o.Fetcher == nil {
		return nil, fmt.Errorf("%w: GET %s: the key cache has no fetcher", ErrKeyUnavailable, target)
	}
	body, err := c.o.Fetcher.FetchKey(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyUnavailable, err)
	}
	return body, nil
}
