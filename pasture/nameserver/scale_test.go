package nameserver

import (
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/miekg/dns"
)

// A 10 000-origin zone over a real listener: every origin answers, with
// the address HostAddresses gives it (Advertise when it gives none), and a
// name past the world is NXDOMAIN.
func TestDNSTenThousandOrigins(t *testing.T) {
	cfg := crowdDNSConfig()
	cfg.Records = nil
	cfg.Hosts = nil
	for i := 1; i <= 10000; i++ {
		cfg.Hosts = append(cfg.Hosts, fmt.Sprintf("flood%d.test", i))
	}
	own := map[string][]net.IP{"flood7.test": {net.ParseIP("127.1.0.7").To4()}}
	cfg.HostAddresses = func(host string) []net.IP {
		if ips, ok := own[host]; ok {
			return ips
		}
		return cfg.Advertise
	}
	addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, cfg))
	for _, c := range []struct {
		name  string
		want  []string
		rcode int
	}{
		{"flood1.test.", []string{"127.0.0.1"}, dns.RcodeSuccess},     // the first origin
		{"flood7.test.", []string{"127.1.0.7"}, dns.RcodeSuccess},     // an origin at its own address
		{"flood10000.test.", []string{"127.0.0.1"}, dns.RcodeSuccess}, // the last origin
		{"flood10001.test.", nil, dns.RcodeNameError},                 // past the world
	} {
		r := askDNS(t, "udp", addr, c.name, dns.TypeA)
		if r.Rcode != c.rcode || !slices.Equal(rrStrings(r.Answer), c.want) || !r.Authoritative {
			t.Errorf("%s: rcode %d answer %v (aa %t), want %d %v", c.name, r.Rcode, rrStrings(r.Answer), r.Authoritative, c.rcode, c.want)
		}
	}
}
