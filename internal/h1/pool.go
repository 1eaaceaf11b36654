// The keep-alive pool: resting connections per scheme and host, and the
// requests that wait for one while they dial.

package h1

import (
	"context"
	"net/http/httptrace"
	"time"
)

// get returns a resting connection to key that is still open, else the
// first of a new one dialled for this request and one another request
// hands back (as net/http does: a server slow to accept or handshake then
// holds up no request while a connection is free), and tells the
// context's trace which. The dial goes on when the request stops waiting
// (its connection then rests in the pool), bounded by the dial and
// handshake timeouts.
func (t *Transport) get(ctx context.Context, key poolKey, host string) (*conn, error) {
	for {
		c, idle := t.takeIdle(key, anyLane)
		if c == nil {
			break
		}
		if idle > t.o.IdleTimeout || !c.alive() {
			c.close()
			continue
		}
		gotConn(ctx, httptrace.GotConnInfo{Conn: c.nc, Reused: true, WasIdle: true, IdleTime: idle})
		return c, nil
	}
	type dialed struct {
		c   *conn
		err error
	}
	// The deadline is watched here too: the context of a request with an
	// Aborter may have one that no timer of its own enforces.
	var expired <-chan time.Time
	if d, ok := ctx.Deadline(); ok {
		timer := time.NewTimer(time.Until(d))
		defer timer.Stop()
		expired = timer.C
	}
	handed := t.wait(key)
	result, gone := make(chan dialed), make(chan struct{})
	defer close(gone)
	go func() {
		c, err := t.dial(context.WithoutCancel(ctx), key, host)
		select {
		case result <- dialed{c, err}:
		case <-gone:
			if c != nil {
				t.putIdle(key, c)
			}
		}
	}()
	select {
	case r := <-result:
		t.unwait(key, handed)
		if r.err != nil {
			return nil, r.err
		}
		gotConn(ctx, httptrace.GotConnInfo{Conn: r.c.nc})
		return r.c, nil
	case c := <-handed:
		gotConn(ctx, httptrace.GotConnInfo{Conn: c.nc, Reused: true})
		return c, nil
	case <-ctx.Done():
		t.unwait(key, handed)
		return nil, ctx.Err()
	case <-expired:
		t.unwait(key, handed)
		return nil, context.DeadlineExceeded
	}
}

func gotConn(ctx context.Context, info httptrace.GotConnInfo) {
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.GotConn != nil {
		tr.GotConn(info)
	}
}

// wait queues a request for the next connection to key handed back.
func (t *Transport) wait(key poolKey) chan *conn {
	ch := make(chan *conn, 1)
	t.mu.Lock()
	t.waiting[key] = append(t.waiting[key], ch)
	t.mu.Unlock()
	return ch
}

// unwait takes ch out of key's queue; a connection handed to it
// meanwhile goes back to the pool.
func (t *Transport) unwait(key poolKey, ch chan *conn) {
	t.mu.Lock()
	q := t.waiting[key]
	for i, w := range q {
		if w == ch {
			t.waiting[key] = append(q[:i], q[i+1:]...)
			break
		}
	}
	t.mu.Unlock()
	select {
	case c := <-ch:
		t.putIdle(key, c)
	default:
	}
}

// takeIdle pops one of key's idle connections (nil: none) and tells how
// long it rested: the most recently used of lane's among the laneLook
// most recent, else the most recent (then lane's from now on). Lane
// anyLane takes the most recent.
func (t *Transport) takeIdle(key poolKey, lane int) (*conn, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.idle[key]
	if len(cs) == 0 {
		return nil, 0
	}
	at := len(cs) - 1
	if lane != anyLane {
		for k := at; k >= max(0, len(cs)-laneLook); k-- {
			if cs[k].lane == lane {
				at = k
				break
			}
		}
		cs[at].lane = lane
	}
	c := cs[at]
	copy(cs[at:], cs[at+1:])
	cs[len(cs)-1] = nil
	t.idle[key] = cs[:len(cs)-1]
	return c, time.Since(c.idleSince)
}

// anyLane is takeIdle's lane for a request that keeps to none.
const anyLane = -1

// laneLook bounds the resting connections takeIdle looks through for a
// lane's own: writers taking turns rest theirs alternately on top.
const laneLook = 8

// putIdle hands c to the first request waiting for a connection to key,
// else rests it in key's pool, closing instead the connections that
// rested past the idle timeout (the oldest are first) and c itself when
// the pool is full.
func (t *Transport) putIdle(key poolKey, c *conn) {
	now := time.Now()
	c.idleSince = now
	var stale []*conn
	t.mu.Lock()
	if q := t.waiting[key]; len(q) > 0 {
		t.waiting[key] = q[1:]
		if len(q) == 1 {
			delete(t.waiting, key)
		}
		t.mu.Unlock()
		q[0] <- c // buffered, and only ever sent to once: taken off the queue
		return
	}
	cs := t.idle[key]
	n := 0
	for n < len(cs) && now.Sub(cs[n].idleSince) > t.o.IdleTimeout {
		n++
	}
	if n > 0 {
		stale = append(stale, cs[:n]...)
		cs = append(cs[:0], cs[n:]...)
	}
	if len(cs) < t.o.MaxIdlePerHost {
		cs = append(cs, c)
		c = nil
	}
	t.idle[key] = cs
	t.mu.Unlock()
	for _, s := range stale {
		s.close()
	}
	if c != nil {
		c.close()
	}
}

// CloseIdleConnections closes the connections resting in the pool;
// those in use are closed when their answers end.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[poolKey][]*conn{}
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.close()
		}
	}
}
