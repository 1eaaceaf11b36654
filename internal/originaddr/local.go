// Whether the origins' addresses are this machine's: everything the crowd
// sends as an origin leaves from the origin's address, which only a local
// address allows.

package originaddr

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
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

// ErrUncheckable is wrapped by CheckLocal's error when the kernel lets any
// address be bound (net.ipv4.ip_nonlocal_bind or its IPv6 twin is 1, as on
// many keepalived and Kubernetes nodes): a bind then proves nothing, and a
// send from an address not routed here times out instead of failing.
var ErrUncheckable = errors.New("the origins' addresses cannot be checked")

// CheckLocal binds (port 0, closed at once) the addresses of shard i's
// slice (Slice) that its origins send from, the first and the last of each
// prefix of the range the slice crosses (a local route covers a block, and
// the ends are where a route too narrow shows), and returns an error
// wrapping ErrNotLocal, naming --advertise, the address and the route that
// makes its block local, when one cannot be bound; nil for a Plan whose
// origins share their addresses (nothing binds a shared one: it may be a
// NAT's). Where the kernel binds any address of a family (NonlocalBind)
// and the range's blocks of it are not loopback, the error wraps
// ErrUncheckable.
func (p *Plan) CheckLocal(i int) error { return p.checkLocal(i, nonlocalBindOf) }

// checkLocal is CheckLocal, asking nonlocal whether the kernel binds any
// address of a family (the sysctl's name, "" when it does not).
func (p *Plan) checkLocal(i int, nonlocal func(v6 bool) string) error {
	if !p.PerOrigin() || i < 0 || i >= p.shards || i >= p.origins {
		return nil
	}
	shards := uint64(p.shards)
	n := uint64((p.origins-i-1)/p.shards + 1) // the shard's origins
	for v6, f := range []family{p.v4, p.v6} {
		if f.count <= 1 {
			continue // none, or one shared by every origin: maybe a NAT's
		}
		if sysctl := nonlocal(v6 == 1); sysctl != "" && !f.loopback() {
			return fmt.Errorf("%w: %s is 1, so this machine binds any address: make sure the --advertise range %s is routed to it (ip route show table local)",
				ErrUncheckable, sysctl, p.rng.spec)
		}
		// Shard i's origins hold the addresses lo … hi of the family, in order (addrOf).
		lo := uint64(i) * (f.count / shards)
		hi := lo + n - 1
		base := uint64(0)
		for _, pf := range f.seq {
			end := base + prefixSize(pf) - 1
			if base > hi {
				break
			}
			if end >= lo {
				for _, j := range []uint64{max(base, lo), min(end, hi)} {
					a, k := f.at(j), i+1+int(j-lo)*p.shards
					l, err := net.Listen("tcp", net.JoinHostPort(a.String(), "0"))
					if err != nil {
						return fmt.Errorf("%w: --advertise %s: this machine cannot bind %s, origin %d's own address, from which its sends leave (%v): %s",
							ErrNotLocal, p.rng.spec, a, k, err, routeHint(pf.String()))
					}
					l.Close()
				}
			}
			base = end + 1
		}
	}
	return nil
}

// NonlocalBind names a sysctl that lets this machine bind any address (of
// IPv4 or IPv6) when one is on, "" when neither is (or where there are
// none to read): a test that needs a bind to fail skips there.
func NonlocalBind() string { return cmp.Or(nonlocalBindOf(false), nonlocalBindOf(true)) }

// nonlocalBindOf names the sysctl that lets this machine bind any address
// of the family (IPv6 when v6) when it is on, else "".
func nonlocalBindOf(v6 bool) string {
	name := "net.ipv4.ip_nonlocal_bind"
	if v6 {
		name = "net.ipv6.ip_nonlocal_bind"
	}
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err == nil && strings.TrimSpace(string(b)) == "1" {
		return name
	}
	return ""
}

// loopback reports whether every block of f is loopback (127.0.0.0/8,
// ::1), local on any machine.
func (f family) loopback() bool {
	for _, pf := range f.seq {
		if !pf.Addr().IsLoopback() || (pf.Addr().Is4() && pf.Bits() < 8) {
			return false
		}
	}
	return true
}
