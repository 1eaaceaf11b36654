package originaddr

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// notLocalBlock is a documentation block (TEST-NET-2) that no machine
// should hold: binding it fails with EADDRNOTAVAIL, before any packet
// could leave. (TEST-NET-1, 192.0.2.0/24, numbers some test machines'
// own interfaces.) The test stops if this machine does hold it, and is
// skipped where the kernel binds any address (nothing fails there).
func notLocalBlock(t *testing.T) string {
	t.Helper()
	if sysctl := NonlocalBind(); sysctl != "" {
		t.Skipf("%s is 1: this machine binds any address, local or not", sysctl)
	}
	const block = "198.51.100.0/24"
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && netip.MustParsePrefix(block).Contains(p.Addr()) {
			t.Fatalf("this machine holds %s, in %s: pick another block no interface has", p.Addr(), block)
		}
	}
	return block
}

// TestCheckLocal binds, for real, the ends of each block a shard's slice
// crosses: all of 127.0.0.0/8 is local on Linux; notLocalBlock is not.
func TestCheckLocal(t *testing.T) {
	notLocalBlock(t)
	for _, c := range []struct {
		name    string
		spec    string
		origins int
		shards  int
		shard   int
		say     []string // nil: the slice is local
	}{
		// The docs' loopback block: local with no set-up.
		{"loopback block", "127.1.0.0/16", 20, 0, 0, nil},
		// The walk: a block no route makes local, refused naming the flag, the address and the route.
		{"block not local", "198.51.100.0/24", 20, 0, 0, []string{"--advertise 198.51.100.0/24", "cannot bind 198.51.100.0", "origin 1's", "ip route add local 198.51.100.0/24 dev lo", "docs/large-world.md"}},
		// Local at its start, not at its end (a route too narrow): the second block's first address shows it.
		{"only the start local", "127.1.0.0/24,198.51.100.0/24", 300, 0, 0, []string{"cannot bind 198.51.100.0", "origin 257's", "ip route add local 198.51.100.0/24 dev lo"}},
		// Local at both ends, not in the middle block: each block is checked, not the ends alone.
		{"the middle block not local", "127.1.0.0/24,198.51.100.0/24,127.2.0.0/24", 600, 0, 0, []string{"cannot bind 198.51.100.0", "origin 257's", "ip route add local 198.51.100.0/24 dev lo"}},
		// Shard 0's slice is the local half; shard 1's is not.
		{"shard of the local half", "127.1.0.0/24,198.51.100.0/24", 200, 2, 0, nil},
		{"shard of the other half", "127.1.0.0/24,198.51.100.0/24", 200, 2, 1, []string{"cannot bind 198.51.100.0", "origin 2's"}},
		// One address shared by every origin is never bound (the SUT may reach it through a NAT).
		{"shared address", "198.51.100.5", 20, 0, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := mustPlan(t, c.spec, c.origins, c.shards).CheckLocal(c.shard)
			if c.say == nil {
				if err != nil {
					t.Fatalf("CheckLocal = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrNotLocal) {
				t.Fatalf("CheckLocal = %v, want ErrNotLocal", err)
			}
			for _, s := range c.say {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("CheckLocal = %q, want it to say %q", err, s)
				}
			}
		})
	}
}

// TestCheckLocalWhereAnyAddressBinds: where the kernel binds any address of
// a family (ip_nonlocal_bind), a bind proves nothing: a range of that
// family is said to be unchecked, unless it is loopback (local anyway);
// the other family is checked as ever.
func TestCheckLocalWhereAnyAddressBinds(t *testing.T) {
	v4on := func(v6 bool) string {
		if v6 {
			return ""
		}
		return "net.ipv4.ip_nonlocal_bind"
	}
	for _, c := range []struct {
		name        string
		spec        string
		uncheckable bool
	}{
		// The docs' block on such a machine: said unchecked, naming the sysctl.
		{"a block on a nonlocal-bind machine", "10.251.0.0/16", true},
		// Loopback is local anyway: checked by its binds, which hold.
		{"loopback", "127.1.0.0/16", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := mustPlan(t, c.spec, 20, 0).checkLocal(0, v4on)
			if got := errors.Is(err, ErrUncheckable); got != c.uncheckable || (!c.uncheckable && err != nil) {
				t.Fatalf("checkLocal = %v, want uncheckable %v", err, c.uncheckable)
			}
			if c.uncheckable && !strings.Contains(err.Error(), "net.ipv4.ip_nonlocal_bind is 1") {
				t.Errorf("checkLocal = %q, want the sysctl named", err)
			}
		})
	}
}

// A send from an origin whose address is not local fails saying so (and
// wrapping ErrNotLocal, which a flood tells from the SUT's refused
// connections), over each kind of pool; the server hears nothing.
func TestBindDialSaysTheAddressIsNotLocal(t *testing.T) {
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			rl := startRemoteLog(t) // on loopback: the bind fails before any packet leaves
			tr := k.make(BindDial(&net.Dialer{Timeout: 5 * time.Second}), mustPlan(t, notLocalBlock(t), 5, 0))
			defer tr.CloseIdleConnections()
			err := send(t, tr, rl.url, cavage("flood3.test"))
			if !errors.Is(err, ErrNotLocal) || !strings.Contains(err.Error(), "cannot bind the origin's address 198.51.100.2 (EADDRNOTAVAIL): is the advertised range local?") {
				t.Fatalf("err = %v, want ErrNotLocal naming 198.51.100.2", err)
			}
			if n := len(rl.seen()); n != 0 {
				t.Errorf("%d requests arrived", n)
			}
		})
	}
}
