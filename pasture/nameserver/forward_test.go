package nameserver

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// upstreamStub is a real DNS server playing a recursive resolver.
type upstreamStub struct {
	addr     string
	udpHits  atomic.Int32
	tcpHits  atomic.Int32
	lastName atomic.Value // string: the last question name as received
}

func startUpstream(t *testing.T, addr string, rcode int) *upstreamStub {
	t.Helper()
	u := &upstreamStub{}
	u.addr = startDNS(t, addr, dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		_, udp := w.RemoteAddr().(*net.UDPAddr)
		if udp {
			u.udpHits.Add(1)
		} else {
			u.tcpHits.Add(1)
		}
		q := req.Question[0]
		u.lastName.Store(q.Name)
		m := new(dns.Msg)
		m.SetReply(req)
		m.RecursionAvailable = true
		if rcode != dns.RcodeSuccess {
			m.Rcode = rcode
			w.WriteMsg(m)
			return
		}
		switch strings.ToLower(q.Name) {
		case "example.org.":
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300}, A: net.ParseIP("192.0.2.1")})
		case "big.example.":
			if udp {
				m.Truncated = true // as a real server does when the answer does not fit
				break
			}
			for i := range 60 {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300}, A: net.IPv4(192, 0, 2, byte(i+1))})
			}
		default:
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	}))
	return u
}

// TestDNSForwardsOnlyForLocalClients: the crowd's names answer any client, but a name it
// forwards is forwarded only for a client on loopback, a private or link-local network, at
// one of the machine's own addresses, or in a network given (--dns-forward-for); any other is
// REFUSED, with an Extended DNS Error that
// says so, the upstream never hears of it, and no answer to it claims recursion available: a
// crowd on a public address is no open resolver.
func TestDNSForwardsOnlyForLocalClients(t *testing.T) {
	up := startUpstream(t, "127.0.0.2:0", dns.RcodeSuccess)
	cfg := crowdDNSConfig()
	cfg.Upstreams = []string{up.addr}
	// --dns-forward-for: a SUT's public network (given unmasked, as people
	// write an address and its length) and an IPv6 one.
	cfg.ForwardFor = []netip.Prefix{netip.MustParsePrefix("192.0.2.77/24"), netip.MustParsePrefix("2001:db8:1::/48")}
	own := netip.MustParseAddr("203.0.113.7") // the machine's public address
	h, err := newHandler(cfg, func() []netip.Addr { return []netip.Addr{own} })
	if err != nil {
		t.Fatal(err)
	}
	udp := func(ip string) net.Addr { return &net.UDPAddr{IP: net.ParseIP(ip), Port: 4242} }
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 4242} }
	for _, c := range []struct {
		name     string
		client   net.Addr
		forwards bool
	}{
		{"loopback", udp("127.0.0.9"), true},
		{"IPv6 loopback, over TCP", tcp("::1"), true},
		{"a podman network (RFC 1918)", udp("10.88.0.5"), true},
		{"a compose network (RFC 1918)", udp("172.20.0.3"), true},
		{"a home network (RFC 1918)", tcp("192.168.1.20"), true},
		{"IPv6 unique local", udp("fd00::5"), true},
		{"IPv6 link-local", udp("fe80::1"), true},
		{"carrier-grade NAT space (RFC 6598)", udp("100.100.1.1"), true},
		{"the machine's own public address", udp(own.String()), true},
		{"an IPv4-mapped private address", udp("::ffff:10.0.0.1"), true},
		{"a public IPv4 address", udp("198.51.100.23"), false},
		{"a public IPv4 address, over TCP", tcp("198.51.100.23"), false},
		{"a public IPv6 address", udp("2001:db8::1"), false},
		{"an IPv4-mapped public address", udp("::ffff:198.51.100.23"), false},
		{"the next address after the shared space", udp("100.128.0.1"), false},
		{"a public address in a --dns-forward-for network", udp("192.0.2.5"), true},
		{"the same over TCP, IPv4-mapped", tcp("::ffff:192.0.2.250"), true},
		{"a public IPv6 address in a --dns-forward-for network", udp("2001:db8:1::9"), true},
		{"the next address after a --dns-forward-for network", udp("192.0.3.0"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := up.udpHits.Load() + up.tcpHits.Load()
			w := &dnsTestWriter{remote: c.client}
			q := new(dns.Msg)
			q.SetQuestion("example.org.", dns.TypeA)
			q.SetEdns0(dnsEDNSSize, false)
			h.ServeDNS(w, q)
			r := w.msgs[len(w.msgs)-1]
			asked := up.udpHits.Load()+up.tcpHits.Load() > before
			if c.forwards {
				if r.Rcode != dns.RcodeSuccess || !slices.Equal(rrStrings(r.Answer), []string{"192.0.2.1"}) || !asked || !r.RecursionAvailable {
					t.Fatalf("want the upstream's answer, recursion available (asked %v):\n%v", asked, r)
				}
				return
			}
			if r.Rcode != dns.RcodeRefused || asked || r.RecursionAvailable {
				t.Fatalf("want REFUSED without asking the upstream, no recursion available (asked %v):\n%v", asked, r)
			}
			var ede *dns.EDNS0_EDE
			if opt := r.IsEdns0(); opt != nil {
				for _, o := range opt.Option {
					if e, ok := o.(*dns.EDNS0_EDE); ok {
						ede = e
					}
				}
			}
			if ede == nil || ede.InfoCode != dns.ExtendedErrorCodeProhibited || !strings.Contains(ede.ExtraText, "loopback, private and link-local") ||
				!strings.Contains(ede.ExtraText, "--dns-forward-for CIDR") {
				t.Errorf("want an Extended DNS Error Prohibited saying which clients are forwarded for, got %v", ede)
			}
			// The crowd's own names still answer it, with authority.
			q = new(dns.Msg)
			q.SetQuestion("flood1.test.", dns.TypeA)
			h.ServeDNS(w, q)
			r = w.msgs[len(w.msgs)-1]
			if r.Rcode != dns.RcodeSuccess || !r.Authoritative || r.RecursionAvailable || !slices.Equal(rrStrings(r.Answer), []string{"127.0.0.1"}) {
				t.Errorf("flood1.test: want the crowd's authoritative answer, no recursion available, got\n%v", r)
			}
		})
	}
}

func TestDNSForwarding(t *testing.T) {
	good := startUpstream(t, "127.0.0.2:0", dns.RcodeSuccess)
	failing := startUpstream(t, "127.0.0.3:0", dns.RcodeServerFailure)
	refusing := startUpstream(t, "127.0.0.3:0", dns.RcodeRefused)
	// A socket that reads queries and never answers: an upstream that times out.
	silent, err := net.ListenPacket("udp", "127.0.0.4:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })

	cfg := crowdDNSConfig()
	cfg.Timeout = 300 * time.Millisecond
	cfg.Upstreams = []string{silent.LocalAddr().String(), failing.addr, refusing.addr, good.addr}
	addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, cfg))

	t.Run("answer relayed", func(t *testing.T) {
		r := askDNS(t, "udp", addr, "Example.ORG.", dns.TypeA)
		if r.Rcode != dns.RcodeSuccess || !slices.Equal(rrStrings(r.Answer), []string{"192.0.2.1"}) {
			t.Fatalf("got\n%v", r)
		}
		if r.Authoritative || !r.RecursionAvailable {
			t.Errorf("AA=%v RA=%v, want a recursive answer", r.Authoritative, r.RecursionAvailable)
		}
		if r.Question[0].Name != "Example.ORG." {
			t.Errorf("question %q, want the asker's case", r.Question[0].Name)
		}
		if failing.udpHits.Load() == 0 || refusing.udpHits.Load() == 0 {
			t.Errorf("earlier upstreams not tried: servfail=%d refused=%d", failing.udpHits.Load(), refusing.udpHits.Load())
		}
	})
	t.Run("NXDOMAIN relayed", func(t *testing.T) {
		r := askDNS(t, "udp", addr, "nothing.example.", dns.TypeA)
		if r.Rcode != dns.RcodeNameError {
			t.Fatalf("rcode %s", dns.RcodeToString[r.Rcode])
		}
	})
	t.Run("truncated upstream answer fetched over TCP", func(t *testing.T) {
		before := good.tcpHits.Load()
		r := askDNS(t, "tcp", addr, "big.example.", dns.TypeA)
		if len(r.Answer) != 60 || r.Truncated {
			t.Fatalf("%d answers, TC=%v; want all 60", len(r.Answer), r.Truncated)
		}
		if good.tcpHits.Load() == before {
			t.Fatal("upstream was not asked over TCP")
		}
		// A UDP client without EDNS gets what fits in 512 bytes and TC, and would retry on TCP.
		r = askDNS(t, "udp", addr, "big.example.", dns.TypeA)
		if !r.Truncated || len(r.Answer) >= 60 {
			t.Fatalf("UDP: %d answers, TC=%v; want truncated", len(r.Answer), r.Truncated)
		}
		// With EDNS 4096 it all fits.
		m := new(dns.Msg)
		m.SetQuestion("big.example.", dns.TypeA)
		m.SetEdns0(4096, false)
		r, _, err := (&dns.Client{Net: "udp", Timeout: 5 * time.Second}).Exchange(m, addr)
		if err != nil {
			t.Fatal(err)
		}
		if r.Truncated || len(r.Answer) != 60 {
			t.Fatalf("EDNS UDP: %d answers, TC=%v", len(r.Answer), r.Truncated)
		}
	})
	t.Run("no upstream answers: SERVFAIL", func(t *testing.T) {
		cfg := crowdDNSConfig()
		cfg.Timeout = 200 * time.Millisecond
		cfg.Upstreams = []string{silent.LocalAddr().String(), failing.addr}
		addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, cfg))
		r := askDNS(t, "udp", addr, "example.org.", dns.TypeA)
		if r.Rcode != dns.RcodeServerFailure {
			t.Fatalf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
		}
	})
	t.Run("in-zone names are never forwarded", func(t *testing.T) {
		before := good.udpHits.Load() + good.tcpHits.Load()
		askDNS(t, "udp", addr, "flood77.test.", dns.TypeA)
		if good.udpHits.Load()+good.tcpHits.Load() != before {
			t.Fatal("an in-zone name was forwarded")
		}
	})
}

// TestDNSSelfLoop: an upstream that is the crowd's own DNS is skipped, and if it is not
// recognized, the query that comes back is stopped at once.
func TestDNSSelfLoop(t *testing.T) {
	good := startUpstream(t, "127.0.0.2:0", dns.RcodeSuccess)

	var current atomic.Pointer[dnsHandler]
	var served atomic.Int32
	addr := startDNS(t, "127.0.0.1:0", dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		served.Add(1)
		current.Load().ServeDNS(w, r)
	}))
	_, port, _ := net.SplitHostPort(addr)

	tests := []struct {
		name      string
		self      []string
		upstreams []string
		wantUps   []string // upstreams left after the self filter
		rcode     int      // for example.org A
		served    int32    // queries the crowd's server saw for one client query
	}{
		// The crowd listens on 127.0.0.1:P and is its own only upstream: nothing left, REFUSED.
		{"exact self", []string{addr}, []string{addr}, nil, dns.RcodeRefused, 1},
		// It listens on every address (":P"): a loopback upstream on P is itself.
		{"wildcard self", []string{":" + port}, []string{"127.0.0.1:" + port}, nil, dns.RcodeRefused, 1},
		// Same, written as 0.0.0.0; a real upstream remains and is used.
		{"self then real", []string{"0.0.0.0:" + port}, []string{"127.0.0.1:" + port, good.addr}, []string{good.addr}, dns.RcodeSuccess, 1},
		// Self not told (e.g. NAT hides it): the forwarded query comes back once and is stopped.
		{"undetected loop", nil, []string{addr}, []string{addr}, dns.RcodeServerFailure, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := crowdDNSConfig()
			cfg.Self = tc.self
			cfg.Upstreams = tc.upstreams
			cfg.Timeout = 3 * time.Second
			h := mustDNSHandler(t, cfg)
			if got := h.Upstreams(); !slices.Equal(got, tc.wantUps) {
				t.Fatalf("upstreams %v, want %v", got, tc.wantUps)
			}
			current.Store(h)
			served.Store(0)
			m := new(dns.Msg)
			m.SetQuestion("example.org.", dns.TypeA)
			// The client timeout is below the upstream timeout: a loop that waited for a
			// timeout would fail here.
			r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if r.Rcode != tc.rcode {
				t.Fatalf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
			}
			if got := served.Load(); got != tc.served {
				t.Fatalf("server saw %d queries, want %d", got, tc.served)
			}
		})
	}
}

func TestDNSSelfMatching(t *testing.T) {
	local := func() []netip.Addr {
		return []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("fe80::1")}
	}
	advertise := []net.IP{net.ParseIP("192.168.9.9")}
	tests := []struct {
		self     []string
		upstream string
		want     bool
	}{
		{[]string{":53"}, "127.0.0.1:53", true},            // wildcard receives loopback
		{[]string{":53"}, "127.0.0.53:53", true},           // all of 127/8 is loopback
		{[]string{":53"}, "[::1]:53", true},                // v6 loopback
		{[]string{":53"}, "10.1.2.3:53", true},             // a local interface address
		{[]string{":53"}, "192.168.9.9:53", true},          // the advertised address (NAT'ed to us)
		{[]string{":53"}, "10.9.9.9:53", false},            // another machine
		{[]string{":53"}, "127.0.0.1:5353", false},         // another port
		{[]string{"[::]:53"}, "127.0.0.1:53", true},        // a v6 wildcard is dual-stack
		{[]string{"0.0.0.0:domain"}, "0.0.0.0:53", true},   // named port; unspecified means this host
		{[]string{"127.0.0.1:53"}, "127.0.0.1:53", true},   // exact
		{[]string{"127.0.0.1:53"}, "127.0.0.53:53", false}, // a specific bind does not get other loopbacks
		{[]string{"localhost:53"}, "[::1]:53", true},       // localhost means both loopbacks
		{nil, "127.0.0.1:53", false},                       // nothing declared
	}
	for _, tc := range tests {
		s, err := newDNSSelf(tc.self, advertise, local)
		if err != nil {
			t.Fatalf("%v: %v", tc.self, err)
		}
		ap, err := dnsParseUpstream(tc.upstream)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.has(ap); got != tc.want {
			t.Errorf("self %v, upstream %s: %v, want %v", tc.self, tc.upstream, got, tc.want)
		}
	}
}

// A resolv.conf shared with a SUT that names the crowd itself: the default upstreams skip it.
func TestDNSDefaultUpstreamsFromResolvConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(path, []byte("search test\nnameserver 127.0.0.1\nnameserver 10.1.2.3\nnameserver 192.0.2.53\n"), 0o644)
	cfg := crowdDNSConfig()
	cfg.Upstreams = nil
	cfg.ResolvConf = path
	cfg.Self = []string{":53"}
	h, err := newHandler(cfg, func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("10.1.2.3")} })
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Upstreams(); !slices.Equal(got, []string{"192.0.2.53:53"}) {
		t.Fatalf("upstreams %v", got)
	}
	if got := h.Skipped(); !slices.Equal(got, []string{"127.0.0.1:53", "10.1.2.3:53"}) {
		t.Fatalf("skipped %v", got)
	}
	// The exported constructor's result offers the same, for the start-up log.
	pub, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pub.(interface {
		Upstreams() []string
		Skipped() []string
	}); !ok {
		t.Fatal("NewHandler result lacks Upstreams/Skipped")
	}
	// A missing resolv.conf means no forwarding, not an error.
	cfg.ResolvConf = filepath.Join(t.TempDir(), "absent")
	h = mustDNSHandler(t, cfg)
	if len(h.Upstreams()) != 0 {
		t.Fatalf("upstreams %v", h.Upstreams())
	}
}

// The wrapper around miekg/dns's reader keeps what the handler can dial: addresses only, each
// once, with OpenBSD's bracketed port.
func TestResolvConfUpstreams(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		// The common file: search and options lines are the library's, nameservers ours.
		{"typical", "# generated\nsearch lan\nnameserver 192.168.1.1\nnameserver 1.1.1.1\noptions ndots:1\n", []string{"192.168.1.1:53", "1.1.1.1:53"}},
		// IPv6 keeps its brackets in ip:port, a link-local zone stays.
		{"ipv6 and zone", "nameserver 2001:db8::1\nnameserver fe80::1%eth0\n", []string{"[2001:db8::1]:53", "[fe80::1%eth0]:53"}},
		// One upstream asked twice would only double a timeout.
		{"duplicates dropped", "nameserver 10.0.0.1\nnameserver 10.0.0.1\n", []string{"10.0.0.1:53"}},
		// A name would need DNS to reach DNS; an out-of-range address is no address.
		{"names and bad addresses left out", "nameserver\nnameserver dns.example\nnameserver 300.1.1.1\n", nil},
		// OpenBSD's form, and port 0, which nothing listens on.
		{"bracketed port", "nameserver [127.0.0.1]:5353\nnameserver [::1]:5353\nnameserver [::1]:0\n", []string{"127.0.0.1:5353", "[::1]:5353"}},
		// A v4-mapped address is dialled as the IPv4 one it is.
		{"v4-mapped unmapped", "nameserver ::ffff:10.0.0.1\n", []string{"10.0.0.1:53"}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolvConfUpstreams(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDNSSkippedUpstreamsSayWhy: an upstream that is the crowd's own DNS listener, given with
// --dns-upstream or read from a resolv.conf that names the crowd, is skipped, and the handler
// says so naming where it was given and the --dns listener it is; a name then refused for want
// of upstreams (asked over real UDP) says they were skipped and why, not "no --dns-upstream",
// which would send the user looking for a flag they did give.
func TestDNSSkippedUpstreamsSayWhy(t *testing.T) {
	// The crowd's own listener, on a real socket: the address the walk gave both flags.
	var current atomic.Pointer[dnsHandler]
	addr := startDNS(t, "127.0.0.1:0", dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { current.Load().ServeDNS(w, r) }))
	_, port, _ := net.SplitHostPort(addr)
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(resolv, []byte("nameserver [127.0.0.1]:"+port+"\n"), 0o644)
	for _, c := range []struct {
		name      string
		upstreams []string // nil: resolv
		self      []string
		reason    []string // in SkipReason and in the refusal's text; none: nothing skipped
		refusal   []string // also in the refusal's text
	}{
		// The walk: --dns and --dns-upstream the same address.
		{"flag names the listener", []string{addr}, []string{addr},
			[]string{"--dns-upstream " + addr + " was skipped", "the crowd's own DNS listener (--dns " + addr + ")", "loop"},
			[]string{"--dns-record", "not the crowd"}},
		// A wildcard --dns receives every loopback address on its port.
		{"flag names a loopback of a wildcard listener", []string{"127.0.0.1:" + port}, []string{":" + port},
			[]string{"--dns-upstream 127.0.0.1:" + port + " was skipped", "(--dns :" + port + ")"},
			[]string{"--dns-record"}},
		// Without --dns-upstream, a resolv.conf (shared with a SUT, say) that names the crowd.
		{"resolv.conf names the listener", nil, []string{addr},
			[]string{"the nameserver " + addr + " of " + resolv + " (read without --dns-upstream) was skipped", "--dns " + addr},
			[]string{"--dns-upstream IP of a resolver that is not the crowd"}},
		// Nothing given, nothing skipped: the refusal says so as before.
		{"no upstream given", []string{}, []string{addr}, nil, []string{"no --dns-upstream"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := crowdDNSConfig()
			cfg.Upstreams, cfg.ResolvConf, cfg.Self = c.upstreams, resolv, c.self
			h := mustDNSHandler(t, cfg)
			if len(h.Upstreams()) != 0 {
				t.Fatalf("upstreams %v, want none left", h.Upstreams())
			}
			why := h.SkipReason()
			if (why == "") != (c.reason == nil) {
				t.Fatalf("SkipReason %q; want one only when an upstream was skipped", why)
			}
			for _, want := range c.reason {
				if !strings.Contains(why, want) {
					t.Errorf("SkipReason %q does not say %q", why, want)
				}
			}
			current.Store(h)
			m := new(dns.Msg)
			m.SetQuestion("elsewhere.example.", dns.TypeA)
			m.SetEdns0(1232, false)
			r, _, err := (&dns.Client{Net: "udp", Timeout: 5 * time.Second}).Exchange(m, addr)
			if err != nil {
				t.Fatal(err)
			}
			text := edeText(r)
			if r.Rcode != dns.RcodeRefused {
				t.Fatalf("rcode %s, want REFUSED", dns.RcodeToString[r.Rcode])
			}
			for _, want := range append(c.reason, c.refusal...) {
				if !strings.Contains(text, want) {
					t.Errorf("refusal %q does not say %q", text, want)
				}
			}
			if c.reason != nil && strings.Contains(text, "no --dns-upstream") {
				t.Errorf("refusal %q says no --dns-upstream, though one was given and skipped", text)
			}
		})
	}
}

// TestDNSRefusalsNameTheFlags: a name the crowd's DNS cannot answer (no upstream, or none
// that answers) is refused over real UDP with an Extended DNS Error (RFC 8914) whose text
// names --dns-record and --dns-upstream, and logged once per name saying the same: a
// resolver only shows "server misbehaving".
func TestDNSRefusalsNameTheFlags(t *testing.T) {
	failing := startUpstream(t, "127.0.0.1:0", dns.RcodeServerFailure)
	for _, c := range []struct {
		name      string
		upstreams []string
		rcode     int
		ede       uint16
		say       string // also in the text
	}{
		// No forwarding at all: REFUSED.
		{"no upstream", []string{}, dns.RcodeRefused, dns.ExtendedErrorCodeNotAuthoritative, "no --dns-upstream"},
		// The upstream fails: SERVFAIL naming it.
		{"upstream fails", []string{failing.addr}, dns.RcodeServerFailure, dns.ExtendedErrorCodeNoReachableAuthority, failing.addr},
	} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			cfg := crowdDNSConfig()
			cfg.Upstreams, cfg.Logger = c.upstreams, zap.New(core)
			addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, cfg))
			for range 2 { // a resolver retries: the log says it once
				m := new(dns.Msg)
				m.SetQuestion("elsewhere.example.", dns.TypeA)
				m.SetEdns0(1232, false)
				r, _, err := (&dns.Client{Net: "udp", Timeout: 5 * time.Second}).Exchange(m, addr)
				if err != nil {
					t.Fatal(err)
				}
				if r.Rcode != c.rcode {
					t.Fatalf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[c.rcode])
				}
				var ede *dns.EDNS0_EDE
				if opt := r.IsEdns0(); opt != nil {
					for _, o := range opt.Option {
						if e, ok := o.(*dns.EDNS0_EDE); ok {
							ede = e
						}
					}
				}
				if ede == nil || ede.InfoCode != c.ede {
					t.Fatalf("extended error %v, want code %d", ede, c.ede)
				}
				for _, want := range []string{"--dns-record", "--dns-upstream", c.say} {
					if !strings.Contains(ede.ExtraText, want) {
						t.Errorf("extended error text %q does not name %s", ede.ExtraText, want)
					}
				}
			}
			// Without EDNS the answer has no OPT record (RFC 6891), the rcode only.
			if r := askDNS(t, "udp", addr, "other.example.", dns.TypeA); r.Rcode != c.rcode || r.IsEdns0() != nil {
				t.Errorf("without EDNS: rcode %s, OPT %v", dns.RcodeToString[r.Rcode], r.IsEdns0())
			}
			entries := logs.FilterField(zap.String("name", "elsewhere.example.")).All()
			if len(entries) != 1 || !strings.Contains(entries[0].ContextMap()["why"].(string), "--dns-record") {
				t.Errorf("log entries for the name: %+v; want one naming --dns-record", entries)
			}
		})
	}
}

// edeText is the extra text of r's Extended DNS Error, "" with none.
func edeText(r *dns.Msg) string {
	if opt := r.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_EDE); ok {
				return e.ExtraText
			}
		}
	}
	return ""
}
