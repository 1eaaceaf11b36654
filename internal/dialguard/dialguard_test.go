package dialguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/internal/dialguard/dialguardtest"
)

func TestIsNonPublic(t *testing.T) {
	for _, c := range []struct {
		ip   string
		want bool
	}{
		{"127.0.0.1", true},        // loopback
		{"127.8.9.10", true},       // all of 127/8 is loopback
		{"::1", true},              // IPv6 loopback
		{"10.1.2.3", true},         // RFC 1918
		{"172.16.0.1", true},       // RFC 1918, the start of 172.16/12
		{"172.31.255.254", true},   // RFC 1918, the end of 172.16/12
		{"172.32.0.1", false},      // just past 172.16/12: public
		{"192.168.1.1", true},      // RFC 1918
		{"fd00::1", true},          // IPv6 unique local (fc00::/7)
		{"169.254.1.1", true},      // IPv4 link-local
		{"fe80::1", true},          // IPv6 link-local
		{"100.64.0.1", true},       // CGNAT 100.64/10, start
		{"100.127.255.254", true},  // CGNAT, end
		{"100.128.0.1", false},     // just past CGNAT: public
		{"100.63.255.255", false},  // just before CGNAT: public
		{"8.8.8.8", false},         // a public resolver
		{"1.1.1.1", false},         // another
		{"2001:4860::8888", false}, // public IPv6
		{"::ffff:10.0.0.1", true},  // IPv4-mapped private
		{"::ffff:8.8.8.8", false},  // IPv4-mapped public
		{"0.0.0.0", false},         // unspecified: not a target
		{"224.0.0.1", false},       // multicast: not a target
		{"255.255.255.255", false}, // broadcast
	} {
		if got := IsNonPublic(net.ParseIP(c.ip)); got != c.want {
			t.Errorf("IsNonPublic(%s) = %v, want %v", c.ip, got, c.want)
		}
	}
	if IsNonPublic(nil) {
		t.Error("IsNonPublic(nil) = true")
	}
}

// lastDial is the address fn dialed last ("" before any).
func lastDial(fn *dialguardtest.FakeNet) string {
	d := fn.Dials()
	if len(d) == 0 {
		return ""
	}
	return d[len(d)-1]
}

func TestGuardRefusesPublicTargetsWithoutSending(t *testing.T) {
	fn := &dialguardtest.FakeNet{Names: map[string][]string{
		"public.example": {"8.8.8.8"},
		"mixed.example":  {"10.0.0.5", "1.1.1.1"},
		"sut.test":       {"10.0.0.7"},
		"v6.test":        {"fd00::7"},
	}}
	g := NewGuard(GuardOptions{Resolve: fn.Resolve, Dial: fn.Dial})
	for _, c := range []struct {
		host   string
		public bool // refused as public
		ok     bool
	}{
		{"public.example", true, false}, // resolves to a public address
		{"mixed.example", true, false},  // one public address among private ones is enough
		{"8.8.8.8", true, false},        // an IP literal is checked without resolving
		{"[2001:4860::8888]", true, false},
		{"sut.test", false, true},      // private
		{"SUT.test.", false, true},     // case and a trailing dot do not matter
		{"v6.test", false, true},       // ULA
		{"127.0.0.1", false, true},     // loopback literal
		{"missing.test", false, false}, // resolver error: not public, but no target
	} {
		_, err := g.Check(context.Background(), c.host)
		if (err == nil) != c.ok || errors.Is(err, ErrPublicTarget) != c.public {
			t.Errorf("Check(%s) = %v; want ok=%v public=%v", c.host, err, c.ok, c.public)
		}
		if err != nil && !strings.Contains(err.Error(), strings.Trim(strings.ToLower(strings.TrimSuffix(c.host, ".")), "[]")) {
			t.Errorf("Check(%s): %q does not name the host", c.host, err)
		}
	}
	// A client whose transport dials through the guard: the request to a
	// public name fails before any connection is attempted.
	client := &http.Client{Transport: &http.Transport{DialContext: g.DialContext}}
	for _, u := range []string{"https://public.example/inbox", "http://8.8.8.8/", "https://mixed.example:8443/x"} {
		if _, err := client.Get(u); !errors.Is(err, ErrPublicTarget) {
			t.Errorf("GET %s: %v, want ErrPublicTarget", u, err)
		}
	}
	if n := len(fn.Dials()); n != 0 {
		t.Fatalf("%d dials happened while refusing public targets (last %v)", n, lastDial(fn))
	}
	// A private name is dialed at its pinned address.
	if _, err := g.DialContext(context.Background(), "tcp", "sut.test:443"); err == nil || len(fn.Dials()) != 1 || lastDial(fn) != "10.0.0.7:443" {
		t.Errorf("dial sut.test: %v, %d dials, last %v; want one dial of 10.0.0.7:443", err, len(fn.Dials()), lastDial(fn))
	}
}

func TestGuardAllowsPublicWhenAsked(t *testing.T) {
	fn := &dialguardtest.FakeNet{Names: map[string][]string{"public.example": {"8.8.8.8"}}}
	g := NewGuard(GuardOptions{AllowPublic: true, Resolve: fn.Resolve, Dial: fn.Dial})
	if _, err := g.Check(context.Background(), "public.example"); err != nil {
		t.Fatalf("AllowPublic: %v", err)
	}
	// The fake dialer is called (and fails): nothing reaches the network.
	g.DialContext(context.Background(), "tcp", "public.example:443")
	if len(fn.Dials()) != 1 || lastDial(fn) != "8.8.8.8:443" {
		t.Errorf("dials %d, last %v", len(fn.Dials()), lastDial(fn))
	}
}

func TestGuardHostsMapping(t *testing.T) {
	fn := &dialguardtest.FakeNet{}
	g := NewGuard(GuardOptions{Resolve: fn.Resolve, Dial: fn.Dial, Hosts: map[string]string{
		"Flood1.test": "127.0.0.1:8443", // the in-process crowd
		"far.test":    "203.0.113.9:443",
	}})
	g.DialContext(context.Background(), "tcp", "flood1.test:443")
	if lastDial(fn) != "127.0.0.1:8443" {
		t.Errorf("mapped host dialed %v, want 127.0.0.1:8443", lastDial(fn))
	}
	// A mapping to a public address is refused like a resolved one.
	if _, err := g.DialContext(context.Background(), "tcp", "far.test:443"); !errors.Is(err, ErrPublicTarget) {
		t.Errorf("mapped to a public address: %v", err)
	}
	if len(fn.Dials()) != 1 {
		t.Errorf("%d dials, want 1", len(fn.Dials()))
	}
}

func TestGuardPinsTheFirstAnswer(t *testing.T) {
	fn := &dialguardtest.FakeNet{Names: map[string][]string{"sut.test": {"10.0.0.1"}}}
	g := NewGuard(GuardOptions{Resolve: fn.Resolve, Dial: fn.Dial})
	if _, err := g.Check(context.Background(), "sut.test"); err != nil {
		t.Fatal(err)
	}
	// DNS now answers with a public address: the pinned one is used.
	fn.Names["sut.test"] = []string{"8.8.8.8"}
	g.DialContext(context.Background(), "tcp", "sut.test:443")
	if lastDial(fn) != "10.0.0.1:443" {
		t.Errorf("dialed %v, want the pinned 10.0.0.1:443", lastDial(fn))
	}
}

// TestGuardDialErrorSaysTheAddressOnce: a refused dial of an address (no
// name to resolve) is the dial's own error, which names it; a name's says
// the name and the address it resolved to.
func TestGuardDialErrorSaysTheAddressOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the dial is refused
	_, port, _ := net.SplitHostPort(addr)
	g := NewGuard(GuardOptions{Resolve: (&dialguardtest.FakeNet{Names: map[string][]string{"sut.test": {"127.0.0.1"}}}).Resolve})
	for _, c := range []struct {
		dial string
		once []string // each said once
	}{
		{addr, []string{addr}},                           // an address
		{"sut.test:" + port, []string{"sut.test", addr}}, // a name, and where it led
	} {
		_, err := g.DialContext(context.Background(), "tcp", c.dial)
		if err == nil {
			t.Fatalf("%s: dialed a port nothing listens on", c.dial)
		}
		for _, s := range c.once {
			if n := strings.Count(err.Error(), s); n != 1 {
				t.Errorf("%s: %q says %s %d times, want once", c.dial, err, s, n)
			}
		}
	}
}
