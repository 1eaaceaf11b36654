package pasture

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/inbox"
)

// tracedPasture is wirePasture with the crowd's inbox wired in (its
// activity log takes what the weather refuses) and its admin API on a real
// loopback listener, read with adminapi's Client.
func tracedPasture(t *testing.T) (*Pasture, *inbox.Inbox, *adminapi.Client) {
	t.Helper()
	w := openWorld(t, actors.Config{Origins: 3, Actors: 1, Domain: "flood%d.test"})
	in, err := inbox.New(inbox.Config{World: w, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Shutdown(context.Background()) })
	p := testPasture(t, Config{World: w, Inbox: in, HTTPSAddr: "0.0.0.0:0", HTTPAddr: "0.0.0.0:0", DNSAddr: "127.0.0.1:0",
		AdminAddr: "127.0.0.1:0", Range: parseRange(t, "127.1.0.0/24"), DNSUpstreams: []string{}})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(ctx) })
	c, err := adminapi.New("http://"+p.Addr("admin"), adminapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p, in, c
}

// tlsAt is a TLS handshake with origin at's address naming sni, trusting
// the crowd's CA; it returns the client's own address.
func tlsAt(p *Pasture, at, sni string) (string, error) {
	raw, err := net.DialTimeout("tcp", originAt(p, "https", at), 5*time.Second)
	if err != nil {
		return "", err
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	return raw.LocalAddr().String(), tls.Client(raw, &tls.Config{ServerName: sni, RootCAs: caPool(p.CA())}).Handshake()
}

// getAt sends a plain HTTP GET for host's actor to its address and reads
// the answer's head; it returns the client's own address.
func getAt(p *Pasture, host string) (string, error) {
	c, err := net.DialTimeout("tcp", originAt(p, "http", host), 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	local := c.LocalAddr().String()
	if _, err := fmt.Fprintf(c, "GET /users/alice HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		return local, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return local, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return local, fmt.Errorf("status %d", resp.StatusCode)
	}
	return local, nil
}

// lookupFrom asks the pasture's DNS for host's A record over UDP; it
// returns the client's own address, and an error for any rcode but success.
func lookupFrom(p *Pasture, host string) (string, error) {
	dc := &dns.Client{Timeout: 5 * time.Second}
	conn, err := dc.Dial(p.Addr("dns"))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	m := new(dns.Msg)
	m.SetQuestion(host+".", dns.TypeA)
	in, _, err := dc.ExchangeWithConn(m, conn)
	if err != nil {
		return "", err
	}
	if in.Rcode != dns.RcodeSuccess {
		return conn.LocalAddr().String(), fmt.Errorf("rcode %s", dns.RcodeToString[in.Rcode])
	}
	return conn.LocalAddr().String(), nil
}

// refused waits (wait at most) for the activity log's refusal entries of
// host logged after seq; 0 looks once.
func refused(in *inbox.Inbox, host string, after uint64, wait time.Duration) []inbox.Entry {
	for deadline := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		var got []inbox.Entry
		for _, e := range in.Log().Latest(0, inbox.Filter{}) {
			if e.Seq > after && e.Method == "" && e.URL == host {
				got = append(got, e)
			}
		}
		if len(got) > 0 || time.Now().After(deadline) {
			return got
		}
	}
}

// answeredOf reads what the weather answered for host through the admin
// API; ok is false when host has no counters (it never had weather).
func answeredOf(t *testing.T, c *adminapi.Client, host string) (a adminapi.WeatherAnswered, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.Weather(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, ok = info.Answered[host]
	return a, ok
}

// sameClient reports whether remote, logged, is the client at local; a
// reset can beat the client's connect call (local then unknown, ""), and
// any loopback client address will do.
func sameClient(remote, local string) bool {
	if local != "" {
		return remote == local
	}
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && ap.Addr().IsLoopback() && ap.Port() != 0
}

// moved names the counters that grew from a to b.
func moved(a, b adminapi.WeatherAnswered) []string {
	var out []string
	for _, f := range []struct {
		name string
		a, b int64
	}{{"deliveries", a.Deliveries, b.Deliveries}, {"documents", a.Documents, b.Documents},
		{"connections", a.Connections, b.Connections}, {"handshakes", a.Handshakes, b.Handshakes},
		{"lookups", a.Lookups, b.Lookups}} {
		if f.b > f.a {
			out = append(out, f.name)
		}
	}
	return out
}

// What the weather refuses below HTTP leaves a trace: one real client's
// attempt at flood2.test makes a refusal entry in the activity log (the
// host, the condition, what happened on the wire, the client's address)
// and moves that origin's counter in GET
// /api/weather, and only that counter; the same attempt at flood1.test, in
// clear weather, is served and leaves neither.
func TestWeatherRefusalsAreTraced(t *testing.T) {
	p, in, admin := tracedPasture(t)
	https := func(p *Pasture, h string) (string, error) { return tlsAt(p, h, h) }
	for _, c := range []struct {
		name    string
		spec    string
		probe   func(p *Pasture, host string) (local string, err error)
		counter string // the one counter that moves
		reason  string
	}{
		// down, by the dialled address: the listener resets the TLS client's connection at accept
		{"down by address https", "down=flood2.test", https, "connections", "connection reset: the origin is down"},
		// down, by the dialled address, plain HTTP alike
		{"down by address http", "down=flood2.test", getAt, "connections", "connection reset: the origin is down"},
		// down, by the SNI name at a healthy origin's address: the handshake is refused
		{"down by SNI", "down=flood2.test", func(p *Pasture, h string) (string, error) { return tlsAt(p, "flood3.test", h) },
			"handshakes", "TLS handshake refused: the origin is down"},
		// an expired certificate: the handshake is served, and the client aborts it
		{"tls-expired", "tls-expired=flood2.test", https, "handshakes", "served an expired certificate"},
		// another name's certificate alike
		{"tls-wrong-name", "tls-wrong-name=flood2.test", https, "handshakes", "served another name's certificate"},
		// a lapsed domain: the DNS answers NXDOMAIN
		{"nxdomain", "nxdomain=flood2.test", lookupFrom, "lookups", "NXDOMAIN: the domain has lapsed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			setWeather(t, p, c.spec)
			_, seq := in.Log().TotalsAt()
			before, _ := answeredOf(t, admin, "flood2.test")
			local, err := c.probe(p, "flood2.test")
			if err == nil {
				t.Fatalf("flood2.test in %s was served", c.spec)
			}
			es := refused(in, "flood2.test", seq, 10*time.Second)
			if len(es) == 0 {
				t.Fatalf("%v: no refusal entry for flood2.test", err)
			}
			kind, _, _ := strings.Cut(c.spec, "=")
			for _, e := range es {
				if e.Direction != inbox.DirIn || e.Weather != kind || e.Verdict != inbox.VerdictRejected || e.Status != 0 ||
					!strings.HasPrefix(e.Reason, c.reason) {
					t.Errorf("entry %+v, want %s rejected with %q", e, kind, c.reason)
				}
				if !sameClient(e.Remote, local) {
					t.Errorf("entry's remote %q, want the client's %s", e.Remote, local)
				}
			}
			after, ok := answeredOf(t, admin, "flood2.test")
			if got := moved(before, after); !ok || !slices.Equal(got, []string{c.counter}) {
				t.Errorf("counters moved: %v, want %s", got, c.counter)
			}

			_, seq = in.Log().TotalsAt()
			if _, err := c.probe(p, "flood1.test"); err != nil {
				t.Errorf("flood1.test, clear beside it: %v", err)
			}
			if es := refused(in, "flood1.test", seq, 0); len(es) > 0 {
				t.Errorf("a clear origin's attempt was logged: %+v", es[0])
			}
			if _, ok := answeredOf(t, admin, "flood1.test"); ok {
				t.Error("a clear origin has counters")
			}
		})
	}
}

// What the weather answers on the HTTP path is counted by origin in GET
// /api/weather: a POST to an inbox as a delivery, any other request as a
// document, whichever condition answered it (a slow wait included); a
// request the weather lets through counts nothing, and a clear origin has
// no counters at all.
func TestWeatherHTTPAnswersAreCountedByOrigin(t *testing.T) {
	wc := startWeather(t, "clear")
	srv := httptest.NewServer(wc.p.AdminHandler())
	t.Cleanup(srv.Close)
	admin, err := adminapi.New(srv.URL, adminapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, spec, method, path string
		counter                  string // the counter that moves; "" none
	}{
		// a gone origin's actor: a Tombstone, counted as a document
		{"gone actor", "gone=flood2.test", "GET", "/users/alice", "documents"},
		// its WebFinger: 410, a document too
		{"gone webfinger", "gone=flood2.test", "GET", "/.well-known/webfinger?resource=acct:alice@flood2.test", "documents"},
		// a delivery to it: 410, counted as a delivery
		{"gone delivery", "gone=flood2.test", "POST", "/users/alice/inbox", "deliveries"},
		// a delivery that reached a down origin's handler: reset, a delivery
		{"down delivery", "down=flood2.test", "POST", "/inbox", "deliveries"},
		// a rate-limited actor fetch: 429, a document
		{"limited actor", "limited=flood2.test:30s", "GET", "/users/alice", "documents"},
		// a slow origin's delivery: held, then handed to the inbox; the hold counts
		{"slow delivery", "slow=flood2.test:20ms", "POST", "/users/alice/inbox", "deliveries"},
		// a lapsed domain's actor, reached anyway: served as usual, nothing counted
		{"nxdomain actor", "nxdomain=flood2.test", "GET", "/users/alice", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			wc.set(t, c.spec)
			before, _ := answeredOf(t, admin, "flood2.test")
			body := ""
			if c.method == "POST" {
				body = like(c.name)
			}
			wc.do(c.method, "flood2.test", c.path, body, 30*time.Second) // each condition's answer is tested elsewhere
			after, ok := answeredOf(t, admin, "flood2.test")
			var want []string
			if c.counter != "" {
				want = []string{c.counter}
			}
			if got := moved(before, after); !ok || !slices.Equal(got, want) {
				t.Errorf("counters moved: %v (listed: %v), want %v", got, ok, want)
			}
			if _, _, err := wc.do(c.method, "flood1.test", c.path, body, 30*time.Second); err != nil {
				t.Errorf("flood1.test, clear beside it: %v", err)
			}
			if _, ok := answeredOf(t, admin, "flood1.test"); ok {
				t.Error("a clear origin has counters")
			}
		})
	}
}
