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
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return true // not a socket (a test's pipe): nothing to peek at
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	// Control, not Read: Read fails at once on a connection whose read
	// deadline has passed, and a resting connection keeps the deadline of
	// the last request that had one (see conn.watch); the peek itself
	// never waits.
	open := false
	err = rc.Control(func(fd uintptr) {
		var b [1]byte
		_, _, perr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = perr == syscall.EAGAIN
	})
	return err == nil && open
}
