// Requests cancelled together: a goroutine that sends one request at a
// time registers its cancellation once, not with every request's context.

package h1

import (
	"context"
	"errors"
	"sync"
	"time"
)

// An Aborter ends the requests of one goroutine that makes them one at a
// time, as a flood's worker does. A request whose context holds one
// (WithAborter) is bounded by its context's deadline on the connection
// itself, and is cancelled by Abort, not by its context's Done: the
// transport then registers nothing with the context per request, where a
// cancellable context (context.WithTimeout, and AfterFunc on it) cost the
// flood's sends about 1.5 µs of CPU and seven allocations each. Its
// context's Done is still watched while the request waits for a
// connection. The zero value is ready to use; safe for concurrent use.
type Aborter struct {
	mu      sync.Mutex
	c       *conn // the connection of the request in progress, if any
	aborted bool
}

// HonoursAborter reports that t bounds and ends a request whose context
// holds an Aborter as Aborter says: always true. A transport made of h1
// transports says the same of itself through this method.
func (t *Transport) HonoursAborter() bool { return true }

// errAborterShared refuses a second request while one holds the Aborter.
var errAborterShared = errors.New("h1: an Aborter is for one request at a time; another holds it")

type aborterKey struct{}

// WithAborter returns ctx carrying a, for the requests made with it.
func WithAborter(ctx context.Context, a *Aborter) context.Context {
	return context.WithValue(ctx, aborterKey{}, a)
}

func aborterOf(ctx context.Context) *Aborter {
	a, _ := ctx.Value(aborterKey{}).(*Aborter)
	return a
}

// Abort ends the request in progress (its reads and writes fail at once;
// the connection is closed) and every later one. It is idempotent.
func (a *Aborter) Abort() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.aborted = true
	if a.c != nil {
		a.c.expire()
	}
}

func (a *Aborter) hasAborted() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.aborted
}

// hold makes c the connection Abort ends, until release; an error when
// the Aborter has aborted or holds another.
func (a *Aborter) hold(c *conn) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.aborted:
		return context.Canceled
	case a.c != nil:
		return errAborterShared
	}
	a.c = c
	return nil
}

// release lets go of c; false when Abort ended it meanwhile, as
// context.AfterFunc's stop reports.
func (a *Aborter) release(c *conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.c == c {
		a.c = nil
	}
	return !a.aborted
}

// watch arranges for c's request to end with ctx: through the Aborter
// in ctx, the deadline set on the connection, else context.AfterFunc. The
// returned stop is AfterFunc's: true when the request was not ended.
func (c *conn) watch(ctx context.Context) (stop func() bool, err error) {
	a := aborterOf(ctx)
	if a == nil {
		c.setDeadline(time.Time{})
		return context.AfterFunc(ctx, c.expire), nil
	}
	deadline, _ := ctx.Deadline()
	c.setDeadline(deadline)
	if err := a.hold(c); err != nil {
		return nil, err
	}
	c.holder = a
	if c.unhold == nil {
		// Made once a connection, not a closure a request.
		c.unhold = func() bool { return c.holder.release(c) }
	}
	return c.unhold, nil
}
