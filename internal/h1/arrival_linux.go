package h1

import (
	"syscall"
	"time"
)

// Socket is w's connection's socket when it is a plain TCP connection
// whose bytes Arrived can see (not TLS, not a test's pipe), else false
// (also when its descriptor cannot be duplicated). It takes the socket
// out of the Go runtime's poller at once (see socket), so that the
// caller's event loop alone is woken by what arrives, the answer to w
// included, until a read or a write on it must wait. FD is h1's: it
// stays open, the same number, until the connection closes, and the
// caller must not close it.
func (w Written) Socket() (Socket, bool) {
	c := w.c
	if c == nil || c.nc != c.raw {
		return Socket{}, false
	}
	s, ok := c.raw.(*socket)
	if !ok || s.unpoll() != nil {
		return Socket{}, false
	}
	return Socket{FD: s.fd, conn: c}, true
}

// Arrived looks, without waiting, at what has arrived on w's connection
// of the answer to w's request, using buf for the look (an answer longer
// than buf is ArrivedUnsure), and says how many bytes of buf it looked
// at: the whole answer's, when ArrivedWhole. On an unpolled socket (see
// Socket) it takes those bytes off the descriptor, and the connection
// holds them for Read, ReadArrived and the next Arrived, which read them
// first: nothing is lost to a caller that looks and then leaves the
// answer to Read, and reading it costs no second system call.
func (w Written) Arrived(buf []byte) (Arrival, int) {
	c := w.c
	if c == nil || c.nc != c.raw || c.r.Buffered() > 0 || len(buf) == 0 {
		return ArrivedUnsure, 0
	}
	n, err := c.arrived(buf)
	switch {
	case err == syscall.EAGAIN:
		return ArrivedPart, 0 // nothing there yet
	case err != nil || n <= 0:
		return ArrivedUnsure, 0 // a close (0) or an error is Read's to tell
	}
	return arrival(buf[:n], n == len(buf), w.a.head), n
}

// ArrivedAt is when the kernel received the last of the bytes that w's
// Arrived took off the socket and the connection still holds (the
// socket's receive stamp: a wall-clock time, with no monotonic reading),
// and false when it holds none or the kernel gave no stamp (the socket is
// not one Arrived takes from, or not Stamped). Call it before ReadArrived
// or Read takes them: an answer Arrived found whole was whole from then
// on, however long after it was looked at.
func (w Written) ArrivedAt() (time.Time, bool) {
	c := w.c
	if c == nil {
		return time.Time{}, false
	}
	s, ok := c.raw.(*socket)
	if !ok || len(s.held) == 0 || s.heldAt == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, s.heldAt), true
}

// Stamped reports whether the kernel stamps what arrives on s with the
// time it received it, so that ArrivedAt tells when an answer arrived.
func (s Socket) Stamped() bool {
	if s.conn == nil {
		return false // not a Written's socket
	}
	raw, ok := s.conn.raw.(*socket)
	return ok && raw.stamped
}

// ReadArrived reads the answer to w that Arrived found whole in got
// (exactly the bytes that Arrived looked at), without waiting: as Read
// would read it, and with the same refusals, but with no Response: its
// status, its body's length, and of its header fields only those keep
// says to keep (by name, in any case, the name valid only during the
// call; nil keeps none), so that a caller that asks little of an answer
// makes none of the rest. It takes the bytes off the connection (into
// got), and gives the connection back to the pool, or closes it when the
// answer or the request said close (an HTTP/1.0 answer: unless it said
// keep-alive), or on an error. It has no context: a caller with one
// whose deadline has passed, or that is done, calls Read, which tells
// so. ErrNotPlain: nothing was taken, and Read is to read it.
func (t *Transport) ReadArrived(w Written, got []byte, keep func(name []byte) bool) (Answer, error) {
	c := w.c
	if c == nil || c.nc != c.raw || c.r.Buffered() > 0 {
		return Answer{}, ErrNotPlain
	}
	s, ok := c.raw.(*socket)
	if !ok || s.polled.Load() != nil || s.fd < 0 || s.expired() || arrival(got, false, w.a.head) != ArrivedWhole {
		return Answer{}, ErrNotPlain
	}
	a, keepAlive, bad := parseArrived(got, w.a, keep)
	if bad == ErrNotPlain {
		return Answer{}, ErrNotPlain
	}
	if err := s.take(got); err != nil {
		c.close()
		return Answer{}, err
	}
	if bad != nil {
		c.close()
		return Answer{}, bad
	}
	if !keepAlive {
		c.close()
		return a, nil
	}
	t.putIdle(w.key, c)
	return a, nil
}

// arrived is Arrived's look: a taking one (socket.arrived) on an unpolled
// socket, a peek (look) on any other connection.
func (c *conn) arrived(buf []byte) (int, error) {
	if s, ok := c.raw.(*socket); ok && s.polled.Load() == nil && s.fd >= 0 {
		return s.arrived(buf)
	}
	return c.look(buf)
}
