// Sending from an origin's address: the connection pool of an
// http.Transport is keyed by the target alone, so one pooled connection
// would carry every origin's requests from whichever address opened it.
// Transport keeps a pool (a clone of the base transport) per source
// address instead, and its dialer binds the local address.

package originaddr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DialFunc dials a network address, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// source is the pair of local addresses a connection may leave from: the
// IPv4 one for an IPv4 peer, the IPv6 one for an IPv6 peer.
type source struct{ v4, v6 netip.Addr }

type sourceKey struct{}

// withSource returns ctx carrying the local addresses for BindDial.
func withSource(ctx context.Context, s source) context.Context {
	return context.WithValue(ctx, sourceKey{}, s)
}

// BindDial returns d's DialContext that binds the connection's local
// address to the one the context carries (set by Transport), of the
// peer's family; a context without one dials as d does. Use it as the
// innermost dialer under Transport: dialguard.GuardOptions.Dial, or an
// http.Transport's DialContext.
func BindDial(d *net.Dialer) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		s, ok := ctx.Value(sourceKey{}).(source)
		if !ok {
			return d.DialContext(ctx, network, addr)
		}
		local := s.v4
		host, _, _ := net.SplitHostPort(addr)
		if ip, err := netip.ParseAddr(host); err == nil && !ip.Unmap().Is4() || !local.IsValid() {
			local = s.v6 // an IPv6 peer, or no IPv4 source (a name then resolves to IPv6 only)
		}
		if !local.IsValid() {
			return d.DialContext(ctx, network, addr)
		}
		bound := *d
		bound.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
		c, err := bound.DialContext(ctx, network, addr)
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			// Said as the crowd's set-up it is: left as the dial's error, a
			// flood counted it with the SUT's refused connections.
			return nil, notLocal(local, err)
		}
		return c, err
	}
}

// Pool is a transport with a connection pool of its own: an
// http.Transport, or another client's (the flood's).
type Pool interface {
	http.RoundTripper
	CloseIdleConnections()
}

// Transport is an http.RoundTripper that sends each request from the
// address of the origin that signed it (the host of its keyId, in
// Signature or Signature-Input), through a connection pool of that
// address's own. A request no origin of the Plan signed, and every request
// when the Plan gives origins no addresses of their own, goes through the
// base transport as it is. Safe for concurrent use.
type Transport struct {
	base  Pool
	plan  *Plan
	dial  DialFunc
	clone func(DialFunc) Pool // base's settings with another dialer

	mu    sync.Mutex
	pools map[source]Pool
}

// NewTransport wraps base (its settings are copied per source address)
// for plan. base.DialContext must bind as BindDial does (dialguard's
// Guard with BindDial as its Dial, or BindDial itself; nil is BindDial of
// a net.Dialer with base's usual timeouts): a connection that still leaves
// from elsewhere fails the request, naming both addresses, rather than
// mislead the server under test about who sent it.
func NewTransport(base *http.Transport, plan *Plan) *Transport {
	dial := DialFunc(base.DialContext)
	if dial == nil {
		dial = BindDial(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second})
	}
	clone := func(d DialFunc) Pool {
		tr := base.Clone()
		tr.DialContext = d
		return tr
	}
	return NewPools(base, dial, clone, plan)
}

// HonoursAborter reports whether t's transports bound and end a request
// whose context holds an h1.Aborter as h1's do: whether base does, since
// every pool is a clone of it.
func (t *Transport) HonoursAborter() bool {
	h, ok := t.base.(interface{ HonoursAborter() bool })
	return ok && h.HonoursAborter()
}

// NewPools is NewTransport for any transport: base sends what no origin
// signed, and clone(d) makes a transport with base's settings that dials
// with d (it wraps dial, which must bind as BindDial does). clone must
// make a transport of base's kind: HonoursAborter answers for every pool
// by asking base.
func NewPools(base Pool, dial DialFunc, clone func(d DialFunc) Pool, plan *Plan) *Transport {
	return &Transport{base: base, plan: plan, dial: dial, clone: clone, pools: map[source]Pool{}}
}

// RoundTrip sends req from its signer's origin's address.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.plan == nil || !t.plan.PerOrigin() {
		return t.base.RoundTrip(req)
	}
	addrs := t.plan.HostAddrs(SignerHost(req.Header))
	if len(addrs) == 0 {
		return t.base.RoundTrip(req)
	}
	return t.pool(sourceOf(addrs)).RoundTrip(req)
}

func sourceOf(addrs []netip.Addr) source {
	var s source
	for _, a := range addrs {
		if a.Is4() {
			s.v4 = a
		} else {
			s.v6 = a
		}
	}
	return s
}

// pool is the transport whose connections leave from s, made on first use.
func (t *Transport) pool(s source) Pool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr, ok := t.pools[s]; ok {
		return tr
	}
	tr := t.clone(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := t.dial(withSource(ctx, s), network, addr)
		if err != nil {
			return nil, err
		}
		if err := checkLocal(c, s); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	})
	t.pools[s] = tr
	return tr
}

// checkLocal fails a connection that does not leave from s: a dialer that
// ignored the source would make every origin one client again, silently.
func checkLocal(c net.Conn, s source) error {
	la, ok := c.LocalAddr().(*net.TCPAddr)
	if !ok {
		return nil // not TCP (a test's pipe): nothing to bind
	}
	got := la.AddrPort().Addr().Unmap()
	if got == s.v4 || got == s.v6 {
		return nil
	}
	want := s.v4
	if !want.IsValid() || got.Is6() && s.v6.IsValid() {
		want = s.v6
	}
	return fmt.Errorf("originaddr: connection to %s left from %s, not the origin's address %s (the dialer does not bind; see originaddr.BindDial)",
		c.RemoteAddr(), got, want)
}

// Sources is how many source addresses have a pool so far.
func (t *Transport) Sources() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pools)
}

// CloseIdleConnections closes the idle connections of every pool.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	pools := make([]Pool, 0, len(t.pools))
	for _, tr := range t.pools {
		pools = append(pools, tr)
	}
	t.mu.Unlock()
	t.base.CloseIdleConnections()
	for _, tr := range pools {
		tr.CloseIdleConnections()
	}
}

// SignerHost is the host of the keyId a request is signed with: the
// draft-cavage Signature's keyId, else RFC 9421 Signature-Input's keyid;
// "" for an unsigned request.
func SignerHost(h http.Header) string {
	if v := h.Get("Signature"); v != "" {
		if host := keyIDHost(v, `keyId="`); host != "" {
			return host
		}
	}
	if v := h.Get("Signature-Input"); v != "" {
		return keyIDHost(v, `keyid="`)
	}
	return ""
}

// keyIDHost finds param (`keyId="`) in a signature header and returns the
// host of the URL that follows: between "://" and the next '/', '#' or '"'.
func keyIDHost(v, param string) string {
	i := strings.Index(v, param)
	if i < 0 {
		return ""
	}
	v = v[i+len(param):]
	if end := strings.IndexByte(v, '"'); end >= 0 {
		v = v[:end]
	}
	_, rest, ok := strings.Cut(v, "://")
	if !ok {
		return ""
	}
	if end := strings.IndexAny(rest, "/#?"); end >= 0 {
		rest = rest[:end]
	}
	return rest
}
