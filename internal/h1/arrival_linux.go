package h1

import "syscall"

// Socket is w's connection's socket when it is a plain TCP connection
// whose bytes Arrived can see (not TLS, not a test's pipe), else false.
func (w Written) Socket() (Socket, bool) {
	c := w.c
	if c == nil || c.nc != c.raw || c.peek == nil || c.peek.fd < 0 {
		return Socket{}, false
	}
	return Socket{FD: c.peek.fd, conn: c}, true
}

// Arrived looks, without reading and without waiting, at what has
// arrived on w's connection of the answer to w's request, using buf for
// the look (an answer longer than buf is ArrivedUnsure).
func (w Written) Arrived(buf []byte) Arrival {
	c := w.c
	if c == nil || c.nc != c.raw || c.peek == nil || c.r.Buffered() > 0 || len(buf) == 0 {
		return ArrivedUnsure
	}
	p := c.peek
	p.look, p.looked, p.lookErr = buf, 0, nil
	if err := p.rc.Control(p.fn); err != nil || p.lookErr != nil || p.looked <= 0 {
		// Nothing there at all is EAGAIN, ArrivedPart; a close (0) or
		// an error is Read's to tell.
		p.look = nil
		if p.lookErr == syscall.EAGAIN {
			return ArrivedPart
		}
		return ArrivedUnsure
	}
	got := buf[:p.looked]
	p.look = nil
	return arrival(got, len(got) == len(buf), w.a.head)
}
