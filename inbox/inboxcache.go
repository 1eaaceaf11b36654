package inbox

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// inboxCache remembers where remote actors take deliveries (actor id ->
// inbox) for a while: golang-lru's simplelru under a lock, with expiry
// times read from the inbox's injected clock.
type inboxCache struct {
	mu  sync.Mutex
	lru *simplelru.LRU[string, inboxEntry]
	ttl time.Duration
}

type inboxEntry struct {
	inbox   string
	expires time.Time
}

func newInboxCache(size int, ttl time.Duration) *inboxCache {
	lru, _ := simplelru.NewLRU[string, inboxEntry](size, nil) // errors only for a size <= 0
	return &inboxCache{lru: lru, ttl: ttl}
}

// get returns actorID's inbox while its entry is younger than the TTL.
func (c *inboxCache) get(actorID string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(actorID)
	if !ok || !now.Before(e.expires) {
		return "", false
	}
	return e.inbox, true
}

// put remembers inbox for actorID until now+TTL, evicting the least
// recently used entry when full: losing one costs one GET.
func (c *inboxCache) put(actorID, inbox string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Add(actorID, inboxEntry{inbox: inbox, expires: now.Add(c.ttl)})
}
