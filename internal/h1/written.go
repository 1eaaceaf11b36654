// A request written by one goroutine and its answer read by another: the
// flood's dispatcher puts a request on the wire at its intended time
// itself, and a worker reads the answer, so that no hand-off between them
// delays the send.

package h1

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Written is a request Write (or WriteHead) put on a resting connection,
// whose answer Read reads. The zero Written is no request.
type Written struct {
	c   *conn
	key poolKey
	a   asked
}

// Write writes req on a connection to req's host resting in the pool, if
// one is open and has rested less than the idle timeout, and returns it
// for Read: ok is false, and nothing is written, when none is (the caller
// then sends req with RoundTrip, which dials and closes what is stale).
// It looks at no more than maxWriteTries resting connections, so that a
// pool the server closed costs the caller a few closes, not one each.
// lane (≥ 0) is the writer's own: Write takes the connection last
// written on in lane among the few most recently rested, if there is
// one, so that writers that each watch the sockets they wrote on (the
// flood's dispatchers, each with its own epoll) keep to their own.
// The write is bounded by deadline. With ok true, err is the request's
// failure (refused by checkRequest, or a write that failed, which closes
// the connection: the request may have been partly sent), and there is
// nothing to Read. req's body is read but not closed, and req may be
// reused once Write returns; no GotConn is reported (the caller knows
// when it wrote). A Written returned with ok and no error holds its
// connection until Read is called with it, which must be.
func (t *Transport) Write(req *http.Request, lane int, deadline time.Time) (w Written, ok bool, err error) {
	if err := checkRequest(req); err != nil {
		return Written{}, true, err
	}
	key := poolKey{scheme: req.URL.Scheme, addr: hostPort(req.URL)}
	c := t.takeAlive(key, lane)
	if c == nil {
		return Written{}, false, nil
	}
	c.setDeadline(deadline)
	if err := c.writeRequest(req); err != nil {
		c.close()
		return Written{}, true, err
	}
	return Written{c: c, key: key, a: askedOf(req)}, true, nil
}

// takeAlive takes, for Write and WriteHead, a connection resting in key's pool (lane's
// own first: see takeIdle) that has rested less than the idle timeout and
// heard nothing since (alive), closing those it passes over; nil when
// none of the first maxWriteTries is.
func (t *Transport) takeAlive(key poolKey, lane int) *conn {
	for range maxWriteTries {
		c, idle := t.takeIdle(key, max(lane, 0))
		if c == nil {
			return nil
		}
		if idle > t.o.IdleTimeout || !c.alive() {
			c.close()
			continue
		}
		return c
	}
	return nil
}

// maxWriteTries bounds the resting connections Write looks at.
const maxWriteTries = 2

// errNothingWritten is Read's error for a Written that holds no request.
var errNothingWritten = errors.New("h1: Read of a request Write did not write")

// Read reads the answer to w's request as RoundTrip reads one, bounded by
// ctx as RoundTrip bounds a request (its deadline and Aborter, or its
// Done): read the returned Body to its end (the connection then goes back
// to the pool) or close it. The answer's Request is nil.
func (t *Transport) Read(ctx context.Context, w Written) (*http.Response, error) {
	c := w.c
	if c == nil {
		return nil, errNothingWritten
	}
	stop, err := c.watch(ctx)
	if err != nil {
		c.close()
		return nil, err
	}
	resp, err := c.readAnswer(w.a)
	if err != nil {
		stop()
		c.close()
		return nil, ctxErr(ctx, err)
	}
	b := resp.Body.(*body)
	b.t, b.key, b.stop, b.ctx = t, w.key, stop, ctx
	if b.done {
		b.finish()
	}
	return resp, nil
}
