package pasture

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/originaddr"
	"github.com/crowdfed/crowd/pasture/weather"
)

// wirePasture is a three-origin pasture whose origins answer at their own
// addresses (127.1.0.0/24: flood k at 127.1.0.(k-1)) on wildcard HTTPS and
// HTTP listeners, with its DNS on loopback.
func wirePasture(t *testing.T) *Pasture {
	t.Helper()
	w := openWorld(t, actors.Config{Origins: 3, Actors: 1, Domain: "flood%d.test"})
	rng := parseRange(t, "127.1.0.0/24")
	p := testPasture(t, Config{World: w, HTTPSAddr: "0.0.0.0:0", HTTPAddr: "0.0.0.0:0", DNSAddr: "127.0.0.1:0",
		Range: rng, DNSUpstreams: []string{}})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(ctx) })
	return p
}

// originAt is the address of origin host on listener (the port of p's).
func originAt(p *Pasture, listener, host string) string {
	_, port, _ := net.SplitHostPort(p.Addr(listener))
	return net.JoinHostPort(p.plan.HostAddrs(host)[0].String(), port)
}

// handshake is a TLS handshake with origin host's address, the SNI naming
// sni, trusting only the crowd's CA.
func handshake(p *Pasture, host, sni string) error {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", originAt(p, "https", host), &tls.Config{ServerName: sni, RootCAs: caPool(p.CA())})
	if err == nil {
		c.Close()
	}
	return err
}

// plainGet sends a GET for host's actor to its address on plain HTTP and
// reads the answer's head.
func plainGet(p *Pasture, host string) error {
	c, err := net.DialTimeout("tcp", originAt(p, "http", host), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET /users/alice HTTP/1.1\r\nHost: %s\r\nAccept: application/activity+json\r\n\r\n", host); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// lookup asks the pasture's DNS for host's A record.
func lookup(p *Pasture, host string) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(host+".", dns.TypeA)
	in, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, p.Addr("dns"))
	if err != nil {
		return nil, err
	}
	if in.Rcode != dns.RcodeSuccess {
		return in, fmt.Errorf("rcode %s", dns.RcodeToString[in.Rcode])
	}
	return in, nil
}

// Each condition below HTTP, on the wire, with real clients: set at run
// time on flood2.test it gives that origin's clients the failure a real
// one gives, leaves flood1.test and flood3.test as they were, and is
// lifted at the next connection or query once the weather clears.
func TestWeatherBelowHTTP(t *testing.T) {
	p := wirePasture(t)
	reset := func(err error) string {
		if !errors.Is(err, syscall.ECONNRESET) {
			return fmt.Sprintf("%v, want ECONNRESET", err)
		}
		return ""
	}
	https := func(p *Pasture, h string) error { return handshake(p, h, h) }
	for _, c := range []struct {
		name  string
		spec  string
		probe func(p *Pasture, host string) error // reaches host as its clients do
		check func(err error) string              // "" when err is the expected failure
	}{
		// down, by the dialled address: reset before the ClientHello is answered
		{"down https", "down=flood2.test", https, reset},
		// down, by the address whatever the SNI names: a healthy origin's name does not get through
		{"down https other sni", "down=flood2.test", func(p *Pasture, h string) error {
			if h == "flood2.test" {
				return handshake(p, h, "flood1.test")
			}
			return handshake(p, h, h)
		}, reset},
		// down, plain HTTP: reset, no answer
		{"down http", "down=flood2.test", plainGet, reset},
		// an expired certificate: x509's Expired error
		{"tls-expired", "tls-expired=flood2.test", https,
			func(err error) string {
				var inv x509.CertificateInvalidError
				if !errors.As(err, &inv) || inv.Reason != x509.Expired {
					return fmt.Sprintf("%v, want x509's Expired", err)
				}
				return ""
			}},
		// another name's certificate: x509's HostnameError
		{"tls-wrong-name", "tls-wrong-name=flood2.test", https,
			func(err error) string {
				var hn x509.HostnameError
				if !errors.As(err, &hn) {
					return fmt.Sprintf("%v, want a HostnameError", err)
				}
				return ""
			}},
		// a broken certificate means nothing to plain HTTP
		{"tls-expired http", "tls-expired=flood2.test", plainGet, nil},
		// a lapsed domain: NXDOMAIN, the zone's SOA in the authority section
		{"nxdomain", "nxdomain=flood2.test", func(p *Pasture, h string) error {
			in, err := lookup(p, h)
			if in != nil && in.Rcode == dns.RcodeNameError && (len(in.Ns) != 1 || in.Ns[0].Header().Name != "test.") {
				return fmt.Errorf("NXDOMAIN with authority %v, want the zone's SOA", in.Ns)
			}
			return err
		}, func(err error) string {
			if err == nil || err.Error() != "rcode NXDOMAIN" {
				return fmt.Sprintf("%v, want NXDOMAIN", err)
			}
			return ""
		}},
		// a lapsed domain still has its address: HTTPS to it is served
		{"nxdomain https", "nxdomain=flood2.test", https, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			setWeather(t, p, c.spec)
			err := c.probe(p, "flood2.test")
			switch {
			case c.check == nil && err != nil:
				t.Fatalf("flood2.test in %s: %v, want it served", c.spec, err)
			case c.check != nil && err == nil:
				t.Fatalf("flood2.test in %s was served", c.spec)
			case c.check != nil:
				if msg := c.check(err); msg != "" {
					t.Fatalf("flood2.test in %s: %s", c.spec, msg)
				}
			}
			for _, clear := range []string{"flood1.test", "flood3.test"} {
				if err := c.probe(p, clear); err != nil {
					t.Errorf("%s, clear beside it: %v", clear, err)
				}
			}
			if err := p.SetWeather(weather.Spec{}); err != nil {
				t.Fatal(err)
			}
			if err := c.probe(p, "flood2.test"); err != nil {
				t.Errorf("cleared: flood2.test still fails: %v", err)
			}
		})
	}
}

// Without addresses of their own (one shared address), a down origin is
// refused by the SNI its clients name: the reset comes once the ClientHello
// is read.
func TestWeatherDownBySNIAtASharedAddress(t *testing.T) {
	p := testPasture(t, Config{HTTPSAddr: "127.0.0.1:0"})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(ctx) })
	spec, _ := weather.ParseSpec("down=flood2.test")
	if err := p.SetWeather(spec); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sni       string
		wantReset bool
	}{
		{"flood2.test", true},  // the down origin
		{"flood1.test", false}, // the other, at the same address
	} {
		conn, err := tls.Dial("tcp", p.Addr("https"), &tls.Config{ServerName: c.sni, RootCAs: caPool(p.CA())})
		if err == nil {
			conn.Close()
		}
		if got := errors.Is(err, syscall.ECONNRESET); got != c.wantReset || (!c.wantReset && err != nil) {
			t.Errorf("%s: %v; want reset %v", c.sni, err, c.wantReset)
		}
	}
}

// The listener's map of addresses names only addresses that are one
// origin's own: a family given as one shared address names none.
func TestHostsByAddress(t *testing.T) {
	w := testWorld(t)
	for _, c := range []struct {
		advertise string
		want      []string // the addresses mapped, sorted
	}{
		{"127.1.0.0/24", []string{"127.1.0.0", "127.1.0.1"}},                                 // one IPv4 each
		{"127.1.0.0/24,fd00::5", []string{"127.1.0.0", "127.1.0.1"}},                         // the shared IPv6 names no one
		{"127.1.0.0/24,fd00::/120", []string{"127.1.0.0", "127.1.0.1", "fd00::", "fd00::1"}}, // both families
		{"127.0.0.9", nil}, // one shared address: no map at all
	} {
		p := testPasture(t, Config{World: w, Range: parseRange(t, c.advertise)})
		var got []string
		for a, h := range p.hostsByAddress() {
			if want := p.plan.HostAddrs(h); !slices.Contains(want, a) {
				t.Errorf("%s: %s mapped to %s, whose addresses are %v", c.advertise, a, h, want)
			}
			got = append(got, a.String())
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: addresses %v, want %v", c.advertise, got, c.want)
		}
	}
}

// openWorld opens a world of cfg in a temporary state directory, closed
// when t ends.
func openWorld(t testing.TB, cfg actors.Config) *actors.World {
	t.Helper()
	cfg.StateDir = t.TempDir()
	w, err := actors.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// parseRange is the --advertise value s.
func parseRange(t testing.TB, s string) *originaddr.Range {
	t.Helper()
	rng, err := originaddr.ParseRange(s)
	if err != nil {
		t.Fatal(err)
	}
	return &rng
}
