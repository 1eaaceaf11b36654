package h1

import (
	"errors"
	"syscall"
)

// alive reports whether a resting connection may carry a request: nothing
// has arrived on it, not even the server's close. net/http learns the same
// from the reader goroutine it keeps on every connection; here one
// non-blocking peek at the socket does, so a POST is not written on a
// connection the server closed while it rested. A TLS record that arrived
// unasked (a late session ticket) counts as something: the connection is
// closed and another dialled, which costs a handshake, never a request.
func (c *conn) alive() bool {
	if c.r.Buffered() > 0 {
		return false
	}
	_, err := c.look(c.one[:])
	if err == errNoSocket {
		return true // a test's pipe: nothing to peek at
	}
	return err == syscall.EAGAIN
}

// errNoSocket is look's error for a connection that is no socket.
var errNoSocket = errors.New("h1: not a socket")

// look peeks into buf at what has arrived on c's socket (under TLS, the
// TCP connection's), without reading and without waiting: the bytes there
// (0: the server closed), or the error (EAGAIN: nothing yet;
// errNoSocket: c's connection is no socket).
func (c *conn) look(buf []byte) (int, error) {
	if s, ok := c.raw.(*socket); ok {
		return s.peek(buf)
	}
	if c.peek == nil {
		sc, ok := c.raw.(syscall.Conn)
		if !ok {
			return 0, errNoSocket
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return 0, err
		}
		c.peek = newPeeker(rc)
	}
	return c.peek.peek(buf)
}

// peeker is a connection's peek, made once: SyscallConn and a closure
// per peek were two of a send's allocations.
type peeker struct {
	rc syscall.RawConn
	fn func(fd uintptr) // recv, as a value made once

	// A peek's look: into look, looked bytes or lookErr.
	look    []byte
	looked  int
	lookErr error
}

// newPeeker is the peek of the connection whose socket rc reaches.
func newPeeker(rc syscall.RawConn) *peeker {
	p := &peeker{rc: rc}
	p.fn = p.recv
	return p
}

// peek looks into buf as conn.look does. Control, not Read: Read fails at
// once on a connection whose read deadline has passed, and a resting
// connection keeps the deadline of the last request that had one (see
// conn.watch); the peek itself never waits.
func (p *peeker) peek(buf []byte) (int, error) {
	p.look, p.looked, p.lookErr = buf, 0, nil
	err := p.rc.Control(p.fn)
	p.look = nil
	if err != nil {
		return 0, err
	}
	return p.looked, p.lookErr
}

// recv peeks at what has arrived into p.look, without waiting.
func (p *peeker) recv(fd uintptr) {
	p.looked, _, p.lookErr = syscall.Recvfrom(int(fd), p.look, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
}
