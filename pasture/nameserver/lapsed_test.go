package nameserver

import (
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// A lapsed origin's domain is NXDOMAIN with the zone's SOA, as an
// authoritative server answers a name that is not (any more) delegated,
// for the host and every name under it; everything else is answered as in
// clear weather, and the host answers again at the next query once it is
// no longer lapsed.
func TestDNSLapsedDomains(t *testing.T) {
	var lapsed atomic.Pointer[map[string]bool]
	lapsed.Store(&map[string]bool{})
	var asked atomic.Int64
	cfg := crowdDNSConfig()
	cfg.Hosts = append(cfg.Hosts, "flood3.test", "flood9.example")
	cfg.Records["api.flood3.test"] = []net.IP{net.ParseIP("127.0.0.12")}
	cfg.Lapsed = func() func(string) bool {
		return func(host string) bool {
			asked.Add(1)
			return (*lapsed.Load())[host]
		}
	}
	var mu sync.Mutex
	var told []string // "host network" per OnLapsed call since the row began
	cfg.OnLapsed = func(host string, client net.Addr) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, host+" "+client.Network())
	}
	addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, cfg))

	for _, tc := range []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		answer []string
		ns     []string
		told   string // the host OnLapsed is told of, once a query; "" for none
	}{
		// the lapsed host itself: NXDOMAIN, the zone's SOA
		{name: "lapsed host A", qname: "flood3.test.", qtype: dns.TypeA, rcode: dns.RcodeNameError, ns: []string{"SOA test."}, told: "flood3.test"},
		// every type of it: the name does not exist at all
		{name: "lapsed host AAAA", qname: "FLOOD3.test.", qtype: dns.TypeAAAA, rcode: dns.RcodeNameError, ns: []string{"SOA test."}, told: "flood3.test"},
		// a name under it (a media host of the lapsed domain): denied too, as it is in clear weather inside the zone
		{name: "under the lapsed host", qname: "media.flood3.test.", qtype: dns.TypeA, rcode: dns.RcodeNameError, ns: []string{"SOA test."}, told: "flood3.test"},
		// a host outside the zone: itself and a name under it (forwarded in clear weather) are denied
		{name: "lapsed host outside the zone", qname: "flood9.example.", qtype: dns.TypeA, rcode: dns.RcodeNameError, ns: []string{"SOA flood9.example."}, told: "flood9.example"},
		{name: "under a lapsed host outside the zone", qname: "www.flood9.example.", qtype: dns.TypeA, rcode: dns.RcodeNameError, ns: []string{"SOA www.flood9.example."}, told: "flood9.example"},
		// a record under it is the operator's and stays
		{name: "record under it", qname: "api.flood3.test.", qtype: dns.TypeA, answer: []string{"127.0.0.12"}},
		// another origin is untouched
		{name: "clear host", qname: "flood1.test.", qtype: dns.TypeA, answer: []string{"127.0.0.1", "fd00::1"}[:1]},
		// the apex is untouched
		{name: "apex SOA", qname: "test.", qtype: dns.TypeSOA, answer: []string{"SOA test."}},
		// a record of a host's own name overrides the host, lapsed or not
		{name: "record over a lapsed host", qname: "flood2.test.", qtype: dns.TypeA, answer: []string{"127.0.0.11"}},
		// a record outside the zone is untouched
		{name: "record outside", qname: "sut.example.", qtype: dns.TypeA, answer: []string{"127.0.0.9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lapsed.Store(&map[string]bool{"flood3.test": true, "Flood2.TEST.": true, "flood9.example": true})
			mu.Lock()
			told = nil
			mu.Unlock()
			for _, network := range []string{"udp", "tcp"} {
				r := askDNS(t, network, addr, tc.qname, tc.qtype)
				if r.Rcode != tc.rcode || !r.Authoritative {
					t.Fatalf("%s: rcode %s AA=%v, want %s AA", network, dns.RcodeToString[r.Rcode], r.Authoritative, dns.RcodeToString[tc.rcode])
				}
				if got := rrStrings(r.Answer); !slices.Equal(got, tc.answer) {
					t.Errorf("%s: answer %v, want %v", network, got, tc.answer)
				}
				if got := rrStrings(r.Ns); !slices.Equal(got, tc.ns) {
					t.Errorf("%s: authority %v, want %v", network, got, tc.ns)
				}
			}
			var want []string // each network's query, told with the querier's address
			if tc.told != "" {
				want = []string{tc.told + " udp", tc.told + " tcp"}
			}
			mu.Lock()
			got := slices.Clone(told)
			mu.Unlock()
			if !slices.Equal(got, want) {
				t.Errorf("OnLapsed was told %q, want %q", got, want)
			}
		})
	}

	// Renewed: the next query is answered, no restart.
	lapsed.Store(&map[string]bool{})
	for _, q := range []string{"flood3.test.", "media.flood3.test."} {
		r := askDNS(t, "udp", addr, q, dns.TypeA)
		want := dns.RcodeSuccess
		if q != "flood3.test." {
			want = dns.RcodeNameError // as in clear weather: no such name under a host
		}
		if r.Rcode != want || (want == dns.RcodeSuccess && len(r.Answer) != 1) {
			t.Errorf("renewed %s: %v", q, r)
		}
	}
	// Names no host is above never ask.
	before := asked.Load()
	askDNS(t, "udp", addr, "sub.test.", dns.TypeA)
	askDNS(t, "udp", addr, "sut.example.", dns.TypeA)
	if asked.Load() != before {
		t.Error("Lapsed was asked about a name under no host")
	}
}
