package h1

import "syscall"

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

// Arrived looks, without reading and without waiting, at what has
// arrived on w's connection of the answer to w's request, using buf for
// the look (an answer longer than buf is ArrivedUnsure).
func (w Written) Arrived(buf []byte) Arrival {
	c := w.c
	if c == nil || c.nc != c.raw || c.r.Buffered() > 0 || len(buf) == 0 {
		return ArrivedUnsure
	}
	n, err := c.look(buf)
	switch {
	case err == syscall.EAGAIN:
		return ArrivedPart // nothing there yet
	case err != nil || n <= 0:
		return ArrivedUnsure // a close (0) or an error is Read's to tell
	}
	return arrival(buf[:n], n == len(buf), w.a.head)
}
