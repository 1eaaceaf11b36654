// Package dialguard decides where the crowd may send: every host is
// resolved before the first byte goes to it, and a public address is
// refused unless the user passed --allow-public-target. The flood and the
// manual sends (crowd send, the admin API's /api/send) share it, so both
// refuse the same targets.
package dialguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/crowdfed/crowd/internal/originaddr"
)

// ErrPublicTarget is wrapped by every refusal to reach a host that resolves
// to a public address (see Guard). A flood is a denial of service against
// whoever receives it, and a signed manual send speaks for the crowd's
// actors, so both only go to machines the user plausibly runs.
var ErrPublicTarget = errors.New("target resolves to a public address (pass --allow-public-target if you really mean to reach it)")

// Resolver resolves a host name to its addresses. The default is the
// system resolver; tests inject a fake one, so that no test ever needs a
// public address to exist, let alone to be reached.
type Resolver func(ctx context.Context, host string) ([]net.IP, error)

// DialFunc dials a network address, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// IsNonPublic reports whether ip is an address the crowd may send to without
// --allow-public-target: loopback, private (RFC 1918, IPv6 ULA fc00::/7),
// link-local unicast, or the CGNAT range 100.64.0.0/10. Everything else
// (the unspecified address and multicast included) counts as public.
func IsNonPublic(ip net.IP) bool {
	if ip == nil {
		return false
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() {
		return true
	}
	// 100.64.0.0/10, the shared address space of RFC 6598 (carrier-grade
	// NAT, Tailscale, some container networks): not routed on the internet.
	if v4 := ip.To4(); v4 != nil && v4[0] == 100 && v4[1]&0xc0 == 64 {
		return true
	}
	return false
}

// GuardOptions configures a Guard. The zero value refuses public targets,
// resolves with the system resolver and dials with a 5 s timeout.
type GuardOptions struct {
	// AllowPublic lets targets with public addresses through
	// (--allow-public-target).
	AllowPublic bool
	// Resolve resolves host names; nil = the system resolver.
	Resolve Resolver
	// Dial makes the connections; nil = a net.Dialer with a 5 s timeout and
	// 30 s keep-alive that binds the local address originaddr.Transport asks
	// for (originaddr.BindDial).
	Dial DialFunc
	// Hosts maps host names (lower case, no port) to the "ip:port" to
	// connect to instead of resolving them: the crowd's own origins when it
	// runs in-process, or a running crowd whose names this machine's DNS
	// does not know. The address is checked like any other.
	Hosts map[string]string
}

// Guard decides where the crowd may connect, and connects only there. Every
// host is resolved once, before the first byte is sent to it, and refused
// (wrapping ErrPublicTarget) when any of its addresses is public, unless
// AllowPublic; the addresses are then pinned for the Guard's life, so a DNS
// answer that changes mid-run cannot redirect the sends. Use DialContext as
// the transport's dialer: a host nobody checked is checked on the spot.
// A Guard is safe for concurrent use.
type Guard struct {
	o GuardOptions

	mu      sync.Mutex
	checked map[string]guardEntry
}

type guardEntry struct {
	ips []net.IP // resolved and allowed; empty when err is set
	err error
}

// NewGuard returns a Guard for o.
func NewGuard(o GuardOptions) *Guard {
	if o.Resolve == nil {
		o.Resolve = func(ctx context.Context, host string) ([]net.IP, error) {
			return net.DefaultResolver.LookupIP(ctx, "ip", host)
		}
	}
	if o.Dial == nil {
		// Binding, so that a transport sending from an origin's own
		// address (originaddr.Transport) can dial through the guard.
		o.Dial = DialFunc(originaddr.BindDial(&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}))
	}
	hosts := make(map[string]string, len(o.Hosts))
	for h, a := range o.Hosts {
		hosts[normHost(h)] = a
	}
	o.Hosts = hosts
	return &Guard{o: o, checked: map[string]guardEntry{}}
}

func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// Check resolves host (a name or an IP literal, without port) and returns
// its addresses, or an error naming the host: one wrapping ErrPublicTarget
// when an address is public and public targets are not allowed, or the
// resolver's. The answer is remembered: later checks and dials of the host
// use it.
func (g *Guard) Check(ctx context.Context, host string) ([]net.IP, error) {
	host = normHost(host)
	if host == "" {
		return nil, errors.New("empty target host")
	}
	g.mu.Lock()
	e, ok := g.checked[host]
	g.mu.Unlock()
	if ok {
		return e.ips, e.err
	}
	e = g.resolve(ctx, host)
	if e.err != nil && ctx.Err() != nil {
		return nil, e.err // a cancelled lookup says nothing about the host
	}
	g.mu.Lock()
	if prev, ok := g.checked[host]; ok {
		e = prev // a concurrent check won; keep one answer per host
	} else {
		g.checked[host] = e
	}
	g.mu.Unlock()
	return e.ips, e.err
}

func (g *Guard) resolve(ctx context.Context, host string) guardEntry {
	var ips []net.IP
	if addr, ok := g.o.Hosts[host]; ok {
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			h = addr
		}
		ip := net.ParseIP(normHost(h))
		if ip == nil {
			return guardEntry{err: fmt.Errorf("%s is mapped to %q, which is not ip:port", host, addr)}
		}
		ips = []net.IP{ip}
	} else if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		var err error
		ips, err = g.o.Resolve(ctx, host)
		if err != nil {
			return guardEntry{err: fmt.Errorf("resolve %s: %w", host, err)}
		}
		if len(ips) == 0 {
			return guardEntry{err: fmt.Errorf("resolve %s: no addresses", host)}
		}
	}
	if !g.o.AllowPublic {
		for _, ip := range ips {
			if !IsNonPublic(ip) {
				if normHost(host) == ip.String() { // an address literal: saying it twice tells nothing
					return guardEntry{err: fmt.Errorf("%s: %w", host, ErrPublicTarget)}
				}
				return guardEntry{err: fmt.Errorf("%s is %s: %w", host, ip, ErrPublicTarget)}
			}
		}
	}
	return guardEntry{ips: ips}
}

// CheckURL checks the host of an absolute URL (see Check).
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	_, err = g.Check(ctx, u.Hostname())
	return err
}

// DialContext connects to addr ("host:port") through the Guard: the host
// is checked first (nothing is dialed when it is refused), then its pinned
// addresses are dialed in turn (a host in GuardOptions.Hosts: its mapped
// address). Use it as http.Transport.DialContext.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := g.Check(ctx, host)
	if err != nil {
		return nil, err
	}
	if mapped, ok := g.o.Hosts[normHost(host)]; ok {
		if _, _, err := net.SplitHostPort(mapped); err == nil {
			return g.o.Dial(ctx, network, mapped)
		}
	}
	var errs []error
	for _, ip := range ips {
		c, err := g.o.Dial(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 && len(ips) == 1 && net.JoinHostPort(ips[0].String(), port) == addr {
		return nil, errs[0] // an address, not a name: the dial's own error says it
	}
	return nil, fmt.Errorf("dial %s: %w", addr, errors.Join(errs...))
}
