// Whether the origins' addresses are this machine's: everything the crowd
// sends as an origin leaves from the origin's address, which only a local
// address allows.

package originaddr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrNotLocal is wrapped when an origin's own address cannot be bound on
// this machine (EADDRNOTAVAIL): the advertised range is not local here,
// so nothing can leave from it. The crowd's set-up, not the SUT's doing.
var ErrNotLocal = errors.New("an origin's address is not local")

// routeHint is docs/large-world.md's fix for block (the --advertise
// range, or a placeholder where it is not known), for the messages.
func routeHint(block string) string {
	return "make the range local on the crowd's machine (namespace, container), as docs/large-world.md shows: ip route add local " + block + " dev lo"
}

// notLocal is BindDial's error for a dial that could not bind local.
func notLocal(local netip.Addr, err error) error {
	return fmt.Errorf("%w: cannot bind the origin's address %s (EADDRNOTAVAIL): is the advertised range local? (%s): %w",
		ErrNotLocal, local, routeHint("<the --advertise range>"), err)
}

// CheckLocal binds (port 0, closed at once) the first and the last address
// of each family of shard i's slice (Slice), the addresses its origins
// send from, and returns an error wrapping ErrNotLocal, naming --advertise,
// the address and the route that makes the range local, when one cannot be
// bound; nil for a Plan whose origins share their addresses (nothing binds
// a shared one: it may be a NAT's). The addresses between are taken to be
// as local as the ends: a local route covers a block, and the ends are
// where a route too narrow shows.
func (p *Plan) CheckLocal(i int) error {
	if !p.PerOrigin() || i < 0 || i >= p.shards || i >= p.origins {
		return nil
	}
	last := i + 1 + (p.origins-i-1)/p.shards*p.shards // the shard's last origin (as Slice)
	for _, f := range []family{p.v4, p.v6} {
		if f.count <= 1 {
			continue // none, or one shared by every origin: maybe a NAT's
		}
		for _, k := range []int{i + 1, last} {
			a, ok := p.addrOf(f, k)
			if !ok {
				continue
			}
			l, err := net.Listen("tcp", net.JoinHostPort(a.String(), "0"))
			if err != nil {
				return fmt.Errorf("%w: --advertise %s: this machine cannot bind %s, origin %d's own address, from which its sends leave (%v): %s",
					ErrNotLocal, p.rng.spec, a, k, err, routeHint(p.routeOf(f, a)))
			}
			l.Close()
		}
	}
	return nil
}

// routeOf is the prefix of f's range that holds a, for the route command
// (a single address as a host prefix).
func (p *Plan) routeOf(f family, a netip.Addr) string {
	for _, pf := range f.seq {
		if pf.Contains(a) {
			return pf.String()
		}
	}
	return a.String()
}
