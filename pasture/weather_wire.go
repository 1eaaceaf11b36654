// The weather below HTTP: the sky adapted to what the TLS configuration,
// the DNS and the listeners understand (they do not know the weather), the
// listener that resets connections to a down origin's own address, and the
// trace each refusal leaves (a counter, an activity-log entry).

package pasture

import (
	"net"
	"net/netip"
	"strings"

	"github.com/crowdfed/crowd/pasture/tlsca"
	"github.com/crowdfed/crowd/pasture/weather"
)

// refusedLog is an inbox that logs what the weather refused below HTTP
// (the crowd's inbox.Inbox): a connection, a handshake, a lookup.
type refusedLog interface {
	LogRefused(host, condition, remote, reason string)
}

// wireTrace notes what the weather refused below HTTP: counted in the sky
// and, when an inbox logs them, one activity-log entry each. Only the
// refusing paths call it, so clear weather pays nothing for it.
type wireTrace struct {
	sky *weather.Sky
	log func(host, condition, remote, reason string) // nil: counted only
}

// refused notes one refusal a of host, in condition c, by the client at
// remote (nil when not known), and what happened on the wire.
func (t wireTrace) refused(host string, c weather.Condition, a weather.Answer, remote net.Addr, reason string) {
	t.sky.Count(host, a)
	if t.log == nil {
		return
	}
	var from string
	if remote != nil {
		from = remote.String()
	}
	t.log(host, c.String(), from, reason)
}

// skyHandshake tells the on-demand TLS configuration what a handshake for
// an origin's name does in the weather now, and notes each one it breaks:
// one atomic load when clear.
func skyHandshake(sky *weather.Sky, trace wireTrace) func(name string, client net.Addr) tlsca.Handshake {
	return func(name string, client net.Addr) tlsca.Handshake {
		f := sky.Now()
		if f == nil {
			return tlsca.Good
		}
		c := f.Condition(name)
		var hs tlsca.Handshake
		var reason string
		switch c.Kind {
		case weather.Down:
			hs, reason = tlsca.Refuse, "TLS handshake refused: the origin is down"
		case weather.TLSExpired:
			hs, reason = tlsca.Expired, "served an expired certificate"
		case weather.TLSWrongName:
			hs, reason = tlsca.WrongName, "served another name's certificate ("+tlsca.WrongNameHost+")"
		default:
			return tlsca.Good
		}
		trace.refused(name, c, weather.Handshake, client, reason)
		return hs
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

// lapsedLookup notes a query the DNS answered NXDOMAIN for host's lapsed
// domain; the DNS calls it only then, so clear weather never does.
func lapsedLookup(sky *weather.Sky, trace wireTrace) func(host string, client net.Addr) {
	return func(host string, client net.Addr) {
		host = strings.ToLower(host)
		trace.refused(host, sky.Condition(host), weather.Lookup, client, "NXDOMAIN: the domain has lapsed")
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
	trace  wireTrace             // notes each reset
}

// Accept returns the next connection that is not to a down origin.
func (l *downListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return c, err
		}
		host, cond, down := l.down(c)
		if !down {
			return c, nil
		}
		resetConn(c)
		l.trace.refused(host, cond, weather.Connection, c.RemoteAddr(), "connection reset: the origin is down")
	}
}

// down reports whether c was made to the address of an origin in down,
// which origin, and its condition.
func (l *downListener) down(c net.Conn) (string, weather.Condition, bool) {
	f := l.sky.Now()
	if f == nil {
		return "", weather.Condition{}, false
	}
	a, ok := c.LocalAddr().(*net.TCPAddr)
	if !ok {
		return "", weather.Condition{}, false
	}
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return "", weather.Condition{}, false
	}
	host, ok := l.hostAt[ip.Unmap()]
	if !ok {
		return "", weather.Condition{}, false
	}
	cond := f.Condition(host)
	return host, cond, cond.Kind == weather.Down
}

// resetConn closes c with SO_LINGER 0: the kernel sends a reset (RST), not
// a FIN, so the client sees "connection reset", as from a dead server.
func resetConn(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
