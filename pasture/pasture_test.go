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

	"github.com/crowdfed/crowd/adminapi"
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
