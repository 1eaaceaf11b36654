package pasture

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/loopback"
	"github.com/crowdfed/crowd/pasture/tlsca"
)

// TestServesOverRealListeners starts every listener on loopback and talks
// to each as a SUT would: HTTPS by SNI trusting only the crowd's CA, plain
// HTTP, DNS over UDP, and the admin API.
func TestServesOverRealListeners(t *testing.T) {
	p := testPasture(t, Config{HTTPSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0",
		AdminAddr: "127.0.0.1:0", Advertise: []net.IP{net.ParseIP("127.0.0.7")}, DNSUpstreams: []string{}})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(ctx) })

	httpsAddr := p.Addr("https")
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: caPool(p.CA())},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, httpsAddr)
		},
	}}
	for _, host := range []string{"flood1.test", "flood2.test"} {
		resp, err := client.Get("https://" + host + "/.well-known/webfinger?resource=acct:alice@" + host)
		if err != nil {
			t.Fatalf("%s over HTTPS: %v", host, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "https://"+host+"/users/alice") {
			t.Errorf("%s: %d %s", host, resp.StatusCode, body)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, "http://"+p.Addr("http")+"/users/bob", nil)
	req.Host = "flood1.test"
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("plain HTTP: %v %v", resp, err)
	}
	resp.Body.Close()

	m := new(dns.Msg)
	m.SetQuestion("flood2.test.", dns.TypeA)
	in, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, p.Addr("dns"))
	if err != nil || len(in.Answer) != 1 || !in.Answer[0].(*dns.A).A.Equal(net.ParseIP("127.0.0.7")) {
		t.Fatalf("DNS A flood2.test: %v %v", in, err)
	}

	resp, err = http.Get("http://" + p.Addr("admin") + adminapi.RouteReady.Path())
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz after start: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestStartNamesTheFlagOfABusyPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		name string
		cfg  Config
		flag string
	}{
		{"https", Config{HTTPSAddr: busy.Addr().String()}, "--https"},
		{"http", Config{HTTPAddr: busy.Addr().String()}, "--http"},
		{"admin", Config{AdminAddr: busy.Addr().String()}, "--admin"},
		{"http after a good https", Config{HTTPSAddr: "127.0.0.1:0", HTTPAddr: busy.Addr().String()}, "--http"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testPasture(t, c.cfg)
			err := p.Start(context.Background())
			if !errors.Is(err, ErrListen) || !strings.Contains(err.Error(), c.flag+" ") {
				t.Fatalf("Start = %v, want ErrListen naming %s", err, c.flag)
			}
		})
	}
}

func TestRestartKeepsTheCA(t *testing.T) {
	w := testWorld(t)
	a := testPasture(t, Config{World: w})
	b := testPasture(t, Config{World: w})
	if string(a.CA().CertPEM()) != string(b.CA().CertPEM()) {
		t.Fatal("the CA changed across restarts")
	}
}

// caPool is a pool holding only the crowd's CA: a client that trusts the crowd and nothing else.
func caPool(ca *tlsca.CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(ca.CertPEM())
	return p
}

// TestStartWarnsOfASkippedDNSUpstream: --dns-upstream naming the crowd's
// own --dns listener would loop, so it is skipped; the start-up log says
// so (naming --dns-upstream, the address and why), and a name then
// refused (a real query) says the upstream was skipped, not that none was
// given.
func TestStartWarnsOfASkippedDNSUpstream(t *testing.T) {
	for _, c := range []struct {
		name string
		warn bool // the upstream is the listener, else there is none
	}{
		// The walk: --dns 127.0.0.1:P --dns-upstream 127.0.0.1:P.
		{"upstream is the listener", true},
		// No upstream at all (not nil: nil reads resolv.conf): nothing was
		// skipped, nothing to warn of.
		{"no upstream", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// --dns needs its port known before it is bound, for
			// --dns-upstream to name it.
			dnsAddr := loopback.FreeTCPAndUDP(t)
			upstreams := []string{}
			if c.warn {
				upstreams = []string{dnsAddr}
			}
			core, logs := observer.New(zap.WarnLevel)
			p := testPasture(t, Config{DNSAddr: dnsAddr, Advertise: []net.IP{net.ParseIP("127.0.0.1")},
				DNSUpstreams: upstreams, Logger: zap.New(core)})
			ctx := context.Background()
			if err := p.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(ctx)
			warned := logs.FilterMessageSnippet("DNS upstream").All()
			if !c.warn {
				if len(warned) != 0 {
					t.Fatalf("warned %+v with no upstream skipped", warned)
				}
				return
			}
			if len(warned) != 1 {
				t.Fatalf("start-up warnings of a skipped upstream: %+v, want one", logs.All())
			}
			why, _ := warned[0].ContextMap()["why"].(string)
			for _, s := range []string{"--dns-upstream " + dnsAddr, "the crowd's own DNS listener (--dns " + dnsAddr + ")", "loop"} {
				if !strings.Contains(why, s) {
					t.Errorf("the warning's why %q does not say %q", why, s)
				}
			}
			m := new(dns.Msg)
			m.SetQuestion("elsewhere.example.", dns.TypeA)
			m.SetEdns0(1232, false)
			r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, p.Addr("dns"))
			if err != nil {
				t.Fatal(err)
			}
			var text string
			if opt := r.IsEdns0(); opt != nil {
				for _, o := range opt.Option {
					if e, ok := o.(*dns.EDNS0_EDE); ok {
						text = e.ExtraText
					}
				}
			}
			if r.Rcode != dns.RcodeRefused || strings.Contains(text, "no --dns-upstream") || !strings.Contains(text, "--dns-upstream "+dnsAddr+" was skipped") {
				t.Errorf("a foreign name: %s %q; want REFUSED saying the --dns-upstream was skipped", dns.RcodeToString[r.Rcode], text)
			}
		})
	}
}
