package h1

import "syscall"

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
	if c.peek == nil {
		sc, ok := c.raw.(syscall.Conn)
		if !ok {
			return true // not a socket (a test's pipe): nothing to peek at
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		// Made once a connection: SyscallConn and a closure per peek were
		// two of a send's allocations.
		c.peek = &peeker{rc: rc, fd: -1}
		c.peek.fn = c.peek.recv
		rc.Control(func(fd uintptr) { c.peek.fd = int(fd) })
	}
	// Control, not Read: Read fails at once on a connection whose read
	// deadline has passed, and a resting connection keeps the deadline of
	// the last request that had one (see conn.watch); the peek itself
	// never waits.
	p := c.peek
	p.look = p.buf[:]
	err := p.rc.Control(p.fn)
	p.look = nil
	return err == nil && p.lookErr == syscall.EAGAIN
}

// peeker is a connection's socket and its peek, made once.
type peeker struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) // recv, as a value made once
	buf [1]byte          // what alive's peek looks into
	fd  int              // the socket's descriptor (-1: unknown), for Socket

	// A peek's look: into look (alive's buf, or Arrived's buffer), looked
	// bytes or lookErr (EAGAIN: nothing has arrived).
	look    []byte
	looked  int
	lookErr error
}

// recv peeks at what has arrived into p.look, without waiting.
func (p *peeker) recv(fd uintptr) {
	p.looked, _, p.lookErr = syscall.Recvfrom(int(fd), p.look, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
}
