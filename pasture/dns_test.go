package pasture

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// dnsTestWriter is a dns.ResponseWriter that records what the handler writes.
type dnsTestWriter struct {
	tcp  bool
	mu   sync.Mutex
	msgs []*dns.Msg
}

func (w *dnsTestWriter) LocalAddr() net.Addr {
	if w.tcp {
		return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
	}
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
}

func (w *dnsTestWriter) RemoteAddr() net.Addr {
	if w.tcp {
		return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 4242}
	}
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 4242}
}

func (w *dnsTestWriter) WriteMsg(m *dns.Msg) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, m)
	return nil
}

func (w *dnsTestWriter) Write(b []byte) (int, error) {
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		return 0, err
	}
	return len(b), w.WriteMsg(m)
}

func (w *dnsTestWriter) Close() error        { return nil }
func (w *dnsTestWriter) TsigStatus() error   { return nil }
func (w *dnsTestWriter) TsigTimersOnly(bool) {}
func (w *dnsTestWriter) Hijack()             {}

// startDNS serves h on addr (UDP and TCP) until the test ends and returns the bound address.
func startDNS(t *testing.T, addr string, h dns.Handler) string {
	t.Helper()
	s := NewDNSServer(addr, h)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start(%s): %v", addr, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s.Addr()
}

func mustDNSHandler(t *testing.T, cfg DNSConfig) *dnsHandler {
	t.Helper()
	h, err := newDNSHandler(cfg, func() []netip.Addr { return nil })
	if err != nil {
		t.Fatalf("newDNSHandler: %v", err)
	}
	return h
}

// ask sends one question over network ("udp" or "tcp") and fails the test on a transport error.
func askDNS(t *testing.T, network, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	if r.Id != m.Id {
		t.Fatalf("reply id %d, query id %d", r.Id, m.Id)
	}
	return r
}

// rrStrings renders the data of each record (address, NS target, or "SOA <mname>").
func rrStrings(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		switch rr := rr.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		case *dns.NS:
			out = append(out, "NS "+rr.Ns)
		case *dns.SOA:
			out = append(out, "SOA "+rr.Hdr.Name)
		default:
			out = append(out, rr.String())
		}
	}
	return out
}

func crowdDNSConfig() DNSConfig {
	return DNSConfig{
		Hosts:     []string{"flood1.test", "Flood2.TEST."},
		Zone:      "test",
		Advertise: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("fd00::1")},
		Records: map[string][]net.IP{
			"sut.example":   {net.ParseIP("127.0.0.9")},
			"deep.sub.test": {net.ParseIP("127.0.0.10")},
			"flood2.test":   {net.ParseIP("127.0.0.11")},
		},
		Upstreams: []string{}, // no forwarding in this test
	}
}

func TestDNSAuthoritative(t *testing.T) {
	addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, crowdDNSConfig()))

	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		rcode   int
		answer  []string // rrStrings of the answer section
		ns      []string // rrStrings of the authority section
		extra   []string // rrStrings of the additional section (OPT excluded)
		noAA    bool     // the answer is not authoritative
		comment string
	}{
		{name: "host A", qname: "flood1.test.", qtype: dns.TypeA, answer: []string{"127.0.0.1"}},
		{name: "host AAAA", qname: "flood1.test.", qtype: dns.TypeAAAA, answer: []string{"fd00::1"}},
		{name: "host upper case", qname: "FLOOD1.Test.", qtype: dns.TypeA, answer: []string{"127.0.0.1"}},
		{name: "host ANY", qname: "flood1.test.", qtype: dns.TypeANY, answer: []string{"127.0.0.1", "fd00::1"}},
		{name: "host MX is NODATA", qname: "flood1.test.", qtype: dns.TypeMX, ns: []string{"SOA test."}},
		{name: "record overrides host", qname: "flood2.test.", qtype: dns.TypeA, answer: []string{"127.0.0.11"}},
		{name: "record v4 only: AAAA NODATA", qname: "flood2.test.", qtype: dns.TypeAAAA, ns: []string{"SOA test."}},
		{name: "record outside zone", qname: "sut.example.", qtype: dns.TypeA, answer: []string{"127.0.0.9"}},
		{name: "record outside zone NODATA", qname: "Sut.Example.", qtype: dns.TypeAAAA, ns: []string{"SOA sut.example."}},
		{name: "apex SOA", qname: "test.", qtype: dns.TypeSOA, answer: []string{"SOA test."}},
		{name: "apex NS with glue", qname: "test.", qtype: dns.TypeNS, answer: []string{"NS ns.test."}, extra: []string{"127.0.0.1", "fd00::1"}},
		{name: "apex A is NODATA", qname: "test.", qtype: dns.TypeA, ns: []string{"SOA test."}},
		{name: "ns name A", qname: "ns.test.", qtype: dns.TypeA, answer: []string{"127.0.0.1"}},
		{name: "unknown in zone", qname: "flood99.test.", qtype: dns.TypeA, rcode: dns.RcodeNameError, ns: []string{"SOA test."}},
		{name: "below a host", qname: "www.flood1.test.", qtype: dns.TypeA, rcode: dns.RcodeNameError, ns: []string{"SOA test."}},
		{name: "empty non-terminal", qname: "sub.test.", qtype: dns.TypeA, ns: []string{"SOA test."}},
		{name: "record under ENT", qname: "deep.sub.test.", qtype: dns.TypeA, answer: []string{"127.0.0.10"}},
		{name: "outside, no upstream", qname: "example.org.", qtype: dns.TypeA, rcode: dns.RcodeRefused, noAA: true},
		{name: "zone transfer", qname: "test.", qtype: dns.TypeAXFR, rcode: dns.RcodeRefused, noAA: true},
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range tests {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				if tc.qtype == dns.TypeAXFR && network == "udp" {
					t.Skip("AXFR is TCP only")
				}
				r := askDNS(t, network, addr, tc.qname, tc.qtype)
				if r.Rcode != tc.rcode {
					t.Fatalf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
				}
				if r.Authoritative == tc.noAA {
					t.Errorf("AA=%v", r.Authoritative)
				}
				if len(r.Question) != 1 || r.Question[0].Name != tc.qname {
					t.Errorf("question %v, want the asker's %q verbatim", r.Question, tc.qname)
				}
				if got := rrStrings(r.Answer); !slices.Equal(got, tc.answer) {
					t.Errorf("answer %v, want %v", got, tc.answer)
				}
				if got := rrStrings(r.Ns); !slices.Equal(got, tc.ns) {
					t.Errorf("authority %v, want %v", got, tc.ns)
				}
				var extra []dns.RR
				for _, rr := range r.Extra {
					if rr.Header().Rrtype != dns.TypeOPT {
						extra = append(extra, rr)
					}
				}
				if got := rrStrings(extra); !slices.Equal(got, tc.extra) {
					t.Errorf("additional %v, want %v", got, tc.extra)
				}
				for _, rr := range append(r.Answer, r.Ns...) {
					if rr.Header().Ttl != defaultDNSTTL {
						t.Errorf("TTL %d, want %d: %v", rr.Header().Ttl, defaultDNSTTL, rr)
					}
					if rr.Header().Rrtype != dns.TypeSOA && rr.Header().Name != tc.qname {
						t.Errorf("owner %q, want the asker's %q", rr.Header().Name, tc.qname)
					}
				}
			})
		}
	}
}

func TestDNSIPv6OnlyAdvertise(t *testing.T) {
	cfg := DNSConfig{Hosts: []string{"flood1.test"}, Zone: "test.", Advertise: []net.IP{net.ParseIP("::1")}, Upstreams: []string{}}
	addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, cfg))

	r := askDNS(t, "udp", addr, "flood1.test.", dns.TypeA)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("A for a v6-only host: want NOERROR, no answer, SOA; got\n%v", r)
	}
	r = askDNS(t, "udp", addr, "flood1.test.", dns.TypeAAAA)
	if got := rrStrings(r.Answer); !slices.Equal(got, []string{"::1"}) {
		t.Fatalf("AAAA %v", got)
	}
}

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
	h, err := newDNSHandler(cfg, func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("10.1.2.3")} })
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
	pub, err := NewDNSHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pub.(interface {
		Upstreams() []string
		Skipped() []string
	}); !ok {
		t.Fatal("NewDNSHandler result lacks Upstreams/Skipped")
	}
	// A missing resolv.conf means no forwarding, not an error.
	cfg.ResolvConf = filepath.Join(t.TempDir(), "absent")
	h = mustDNSHandler(t, cfg)
	if len(h.Upstreams()) != 0 {
		t.Fatalf("upstreams %v", h.Upstreams())
	}
}

func TestDNSMalformedQueries(t *testing.T) {
	h := mustDNSHandler(t, crowdDNSConfig())
	q := func(mod func(m *dns.Msg)) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion("flood1.test.", dns.TypeA)
		mod(m)
		return m
	}
	tests := []struct {
		name  string
		req   *dns.Msg
		rcode int // -1: no reply at all
	}{
		// No question: FORMERR, not a panic on Question[0].
		{"zero questions", q(func(m *dns.Msg) { m.Question = nil }), dns.RcodeFormatError},
		// Two questions: nobody supports that.
		{"two questions", q(func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }), dns.RcodeFormatError},
		// NOTIFY or UPDATE: not implemented.
		{"notify", q(func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }), dns.RcodeNotImplemented},
		{"update", q(func(m *dns.Msg) { m.Opcode = dns.OpcodeUpdate }), dns.RcodeNotImplemented},
		// A response is never answered (two servers would ping-pong).
		{"response bit", q(func(m *dns.Msg) { m.Response = true }), -1},
		// EDNS version 1: BADVERS.
		{"edns version 1", q(func(m *dns.Msg) { m.SetEdns0(1232, false); m.IsEdns0().SetVersion(1) }), dns.RcodeBadVers},
		// CHAOS class (version.bind and friends): REFUSED.
		{"chaos class", q(func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }), dns.RcodeRefused},
		// A normal query, for contrast.
		{"ok", q(func(*dns.Msg) {}), dns.RcodeSuccess},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &dnsTestWriter{}
			h.ServeDNS(w, tc.req)
			if tc.rcode < 0 {
				if len(w.msgs) != 0 {
					t.Fatalf("replied to a response: %v", w.msgs[0])
				}
				return
			}
			if len(w.msgs) != 1 {
				t.Fatalf("%d replies", len(w.msgs))
			}
			r := w.msgs[0]
			if r.Rcode != tc.rcode || r.Id != tc.req.Id || !r.Response {
				t.Fatalf("rcode %s id %d QR %v", dns.RcodeToString[r.Rcode], r.Id, r.Response)
			}
			if _, err := r.Pack(); err != nil {
				t.Fatalf("reply does not pack: %v", err)
			}
		})
	}

	// Over the wire, a zero-question query gets FORMERR too.
	addr := startDNS(t, "127.0.0.1:0", h)
	for _, network := range []string{"udp", "tcp"} {
		m := new(dns.Msg)
		m.Id = dns.Id()
		r, _, err := (&dns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(m, addr)
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		if r.Rcode != dns.RcodeFormatError {
			t.Fatalf("%s: rcode %s, want FORMERR", network, dns.RcodeToString[r.Rcode])
		}
	}
}

// TestDNSGarbagePackets writes raw garbage to the UDP and TCP sockets; the server must keep
// answering real queries afterwards.
func TestDNSGarbagePackets(t *testing.T) {
	addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, crowdDNSConfig()))

	valid := new(dns.Msg)
	valid.SetQuestion("flood1.test.", dns.TypeA)
	packed, err := valid.Pack()
	if err != nil {
		t.Fatal(err)
	}
	header := func(qd, an, ns, ar uint16) []byte {
		b := make([]byte, 12)
		binary.BigEndian.PutUint16(b[0:], 0x1234)
		binary.BigEndian.PutUint16(b[4:], qd)
		binary.BigEndian.PutUint16(b[6:], an)
		binary.BigEndian.PutUint16(b[8:], ns)
		binary.BigEndian.PutUint16(b[10:], ar)
		return b
	}
	garbage := []struct {
		name string
		b    []byte
	}{
		{"empty", []byte{}},                                                      // zero-length datagram
		{"one byte", []byte{0x42}},                                               // shorter than a header
		{"eleven bytes", packed[:11]},                                            // header cut short
		{"header only, claims a question", header(1, 0, 0, 0)},                   // question missing
		{"question cut mid-name", packed[:len(packed)-6]},                        // truncated packet
		{"question cut before type", packed[:len(packed)-3]},                     // truncated packet
		{"compression loop", append(header(1, 0, 0, 0), 0xc0, 0x0c, 0, 1, 0, 1)}, // pointer to itself
		{"label too long", append(header(1, 0, 0, 0), append([]byte{64}, make([]byte, 64)...)...)},
		{"counts lie", append(header(1, 65535, 65535, 65535), packed[12:]...)}, // RRs promised, absent
		{"all ones", func() []byte {
			b := make([]byte, 512)
			for i := range b {
				b[i] = 0xff
			}
			return b
		}()},
		{"random-ish", func() []byte {
			b := make([]byte, 300)
			for i := range b {
				b[i] = byte(i*131 + 7)
			}
			return b
		}()},
		{"response bit set", func() []byte { b := append([]byte(nil), packed...); b[2] |= 0x80; return b }()},
	}

	t.Run("udp", func(t *testing.T) {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, g := range garbage {
			if _, err := conn.Write(g.b); err != nil {
				t.Fatalf("%s: %v", g.name, err)
			}
		}
		// Any replies to the garbage must be FORMERR-ish, never a crash; drain them.
		buf := make([]byte, 4096)
		conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		for {
			n, err := conn.Read(buf)
			if err != nil {
				break
			}
			r := new(dns.Msg)
			if err := r.Unpack(buf[:n]); err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
				t.Errorf("garbage got a positive answer: %v", r)
			}
		}
		if r := askDNS(t, "udp", addr, "flood1.test.", dns.TypeA); len(r.Answer) != 1 {
			t.Fatalf("after garbage: %v", r)
		}
	})

	t.Run("tcp", func(t *testing.T) {
		send := func(b []byte, framed bool) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if framed {
				conn.Write(binary.BigEndian.AppendUint16(nil, uint16(len(b))))
			}
			conn.Write(b)
			conn.(*net.TCPConn).CloseWrite()
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 4096)
			for {
				if _, err := conn.Read(buf); err != nil {
					return // the server closes or stays quiet; either is fine
				}
			}
		}
		for _, g := range garbage {
			send(g.b, true)
		}
		send([]byte{0x00}, false)                                 // half a length prefix
		send([]byte{0x01, 0x00, 0xde, 0xad}, false)               // length 256, 2 bytes of body, then EOF
		send([]byte{0xff, 0xff}, false)                           // maximum length, no body
		send(append([]byte{0, 12}, header(0, 0, 0, 0)...), false) // a query with no question
		if r := askDNS(t, "tcp", addr, "flood1.test.", dns.TypeA); len(r.Answer) != 1 {
			t.Fatalf("after garbage: %v", r)
		}
	})
}

func TestDNSServerBindErrorNamesFlag(t *testing.T) {
	// UDP taken.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	err = NewDNSServer(pc.LocalAddr().String(), dns.HandlerFunc(func(dns.ResponseWriter, *dns.Msg) {})).Start(context.Background())
	if !errors.Is(err, ErrDNSListen) || !strings.Contains(err.Error(), "--dns") {
		t.Fatalf("UDP port taken: %v", err)
	}

	// TCP taken on the port of a free UDP one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = NewDNSServer(ln.Addr().String(), dns.HandlerFunc(func(dns.ResponseWriter, *dns.Msg) {})).Start(context.Background())
	if !errors.Is(err, ErrDNSListen) || !strings.Contains(err.Error(), "--dns") || !strings.Contains(err.Error(), "tcp") {
		t.Fatalf("TCP port taken: %v", err)
	}

	// Not an address at all.
	err = NewDNSServer("no-port", dns.HandlerFunc(func(dns.ResponseWriter, *dns.Msg) {})).Start(context.Background())
	if !errors.Is(err, ErrDNSListen) {
		t.Fatalf("bad address: %v", err)
	}
}

func TestDNSServerShutdownFreesPort(t *testing.T) {
	s := NewDNSServer("127.0.0.1:0", mustDNSHandler(t, crowdDNSConfig()))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	askDNS(t, "udp", addr, "flood1.test.", dns.TypeA)
	askDNS(t, "tcp", addr, "flood1.test.", dns.TypeA)
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("second Start succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	// Both ports are free again: a restart on the same address works.
	again := NewDNSServer(addr, mustDNSHandler(t, crowdDNSConfig()))
	if err := again.Start(ctx); err != nil {
		t.Fatalf("restart on %s: %v", addr, err)
	}
	again.Shutdown(ctx)
}

func TestNewDNSHandlerRejectsBadConfig(t *testing.T) {
	base := crowdDNSConfig
	tests := []struct {
		name string
		mod  func(c *DNSConfig)
	}{
		{"no advertise with hosts", func(c *DNSConfig) { c.Advertise = nil }},
		{"unspecified advertise", func(c *DNSConfig) { c.Advertise = []net.IP{net.IPv4zero} }},
		{"nil advertise IP", func(c *DNSConfig) { c.Advertise = []net.IP{nil} }},
		{"root zone", func(c *DNSConfig) { c.Zone = "." }},
		{"empty host", func(c *DNSConfig) { c.Hosts = []string{""} }},
		{"host with space", func(c *DNSConfig) { c.Hosts = []string{"a b.test"} }},
		{"label too long", func(c *DNSConfig) { c.Hosts = []string{strings.Repeat("a", 64) + ".test"} }},
		{"record bad IP", func(c *DNSConfig) { c.Records = map[string][]net.IP{"sut.test": {net.IP{1, 2, 3}}} }},
		{"upstream is a name", func(c *DNSConfig) { c.Upstreams = []string{"dns.google:53"} }},
		{"upstream port 0", func(c *DNSConfig) { c.Upstreams = []string{"127.0.0.1:0"} }},
		{"self garbage", func(c *DNSConfig) { c.Self = []string{"53"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.mod(&cfg)
			if _, err := NewDNSHandler(cfg); !errors.Is(err, ErrDNSConfig) {
				t.Fatalf("err %v, want ErrDNSConfig", err)
			}
		})
	}
}

func TestParseResolvConf(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"typical", "# generated\nsearch lan\nnameserver 192.168.1.1\nnameserver 1.1.1.1\noptions ndots:1\n", []string{"192.168.1.1:53", "1.1.1.1:53"}},
		{"ipv6 and zone", "nameserver 2001:db8::1\nnameserver fe80::1%eth0\n", []string{"[2001:db8::1]:53", "[fe80::1%eth0]:53"}},
		{"comments and spacing", "  nameserver\t10.0.0.1  # home\n;nameserver 10.0.0.2\nnameserver 10.0.0.3;x\n", []string{"10.0.0.1:53", "10.0.0.3:53"}},
		{"duplicates dropped", "nameserver 10.0.0.1\nnameserver 10.0.0.1\n", []string{"10.0.0.1:53"}},
		{"bad lines ignored", "nameserver\nnameserver dns.example\nnameserver 300.1.1.1\nnameservers 10.0.0.9\nNAMESERVER 10.0.0.8\n", nil},
		{"bracketed port", "nameserver [127.0.0.1]:5353\nnameserver [::1]:5353\n", []string{"127.0.0.1:5353", "[::1]:5353"}},
		{"v4-mapped unmapped", "nameserver ::ffff:10.0.0.1\n", []string{"10.0.0.1:53"}},
		{"no final newline, CRLF", "nameserver 10.0.0.1\r\nnameserver 10.0.0.2", []string{"10.0.0.1:53", "10.0.0.2:53"}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseResolvConf(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDNSWithDig asks through dig (BIND's client, written by no one here), over UDP and TCP.
func TestDNSWithDig(t *testing.T) {
	dig, err := exec.LookPath("dig")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dig not installed (CI installs bind9-dnsutils)")
		}
		t.Skip("dig not installed")
	}
	good := startUpstream(t, "127.0.0.2:0", dns.RcodeSuccess)
	cfg := crowdDNSConfig()
	cfg.Upstreams = []string{good.addr}
	addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, cfg))
	host, port, _ := net.SplitHostPort(addr)

	tests := []struct {
		args []string
		want []string // substrings of dig's output
	}{
		{[]string{"flood1.test", "A"}, []string{"status: NOERROR", "flags: qr aa", "flood1.test.\t\t60\tIN\tA\t127.0.0.1"}},
		{[]string{"+tcp", "FLOOD1.test", "AAAA"}, []string{"status: NOERROR", "fd00::1"}},
		{[]string{"nope.test", "A"}, []string{"status: NXDOMAIN", "test.\t\t\t60\tIN\tSOA\tns.test. hostmaster.test."}},
		{[]string{"test", "NS"}, []string{"IN\tNS\tns.test.", "ns.test.\t\t60\tIN\tA\t127.0.0.1"}},
		{[]string{"sut.example", "A"}, []string{"127.0.0.9"}},
		{[]string{"example.org", "A"}, []string{"status: NOERROR", "192.0.2.1", " ra"}},
		{[]string{"+tcp", "big.example", "A"}, []string{"ANSWER: 60"}},
		{[]string{"+noedns", "big.example", "A"}, []string{"ANSWER: 60"}}, // dig retries over TCP on TC
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"@" + host, "-p", port, "+time=3", "+tries=1"}, tc.args...)
			out, err := exec.Command(dig, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("dig %v: %v\n%s", args, err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("dig output lacks %q:\n%s", w, out)
				}
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
