// The weather below HTTP: the sky adapted to what the TLS configuration,
// the DNS and the listeners understand (they do not know the weather), and
// the listener that resets connections to a down origin's own address.

package pasture

import (
	"net"
	"net/netip"
	"strings"

	"github.com/crowdfed/crowd/pasture/tlsca"
	"github.com/crowdfed/crowd/pasture/weather"
)

// skyHandshake tells the on-demand TLS configuration what a handshake for
// an origin's name does in the weather now: one atomic load when clear.
func skyHandshake(sky *weather.Sky) func(name string) tlsca.Handshake {
	return func(name string) tlsca.Handshake {
		f := sky.Now()
		if f == nil {
			return tlsca.Good
		}
		switch f.Condition(name).Kind {
		case weather.Down:
			return tlsca.Refuse
		case weather.TLSExpired:
			return tlsca.Expired
		case weather.TLSWrongName:
			return tlsca.WrongName
		}
		return tlsca.Good
	}
}

// skyLapsed tells the DNS whether an origin's domain has lapsed now
// (nxdomain): one atomic load when clear.
func skyLapsed(sky *weather.Sky) func() func(host string) bool {
	return func() func(host string) bool {
		f := sky.Now()
		if f == nil {
			return nil // clear weather: one atomic load a query
		}
		return func(host string) bool { return f.Condition(strings.ToLower(host)).Kind == weather.NXDomain }
	}
}

// downListener resets, as soon as it is accepted, a connection made to the
// address of an origin that is down, whatever it would have said: the
// client's connect succeeds (the kernel completed it) and its first read
// or write meets a reset, as with a host whose server process has died
// behind a load balancer. Other connections pass untouched; the accept
// loop goes on.
type downListener struct {
	net.Listener
	sky    *weather.Sky
	hostAt map[netip.Addr]string // an origin's own address -> its host
}

// Accept returns the next connection that is not to a down origin.
func (l *downListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || !l.down(c) {
			return c, err
		}
		resetConn(c)
	}
}

// down reports whether c was made to the address of an origin in down.
func (l *downListener) down(c net.Conn) bool {
	f := l.sky.Now()
	if f == nil {
		return false
	}
	a, ok := c.LocalAddr().(*net.TCPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return false
	}
	host, ok := l.hostAt[ip.Unmap()]
	return ok && f.Condition(host).Kind == weather.Down
}

// resetConn closes c with SO_LINGER 0: the kernel sends a reset (RST), not
// a FIN, so the client sees "connection reset", as from a dead server.
func resetConn(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
