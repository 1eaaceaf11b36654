package nameserver

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// dnsTestWriter is a dns.ResponseWriter that records what the handler writes. Its client is
// remote, or 127.0.0.9 when remote is nil.
type dnsTestWriter struct {
	tcp    bool
	remote net.Addr
	mu     sync.Mutex
	msgs   []*dns.Msg
}

func (w *dnsTestWriter) LocalAddr() net.Addr {
	if w.tcp {
		return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
	}
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
}

func (w *dnsTestWriter) RemoteAddr() net.Addr {
	if w.remote != nil {
		return w.remote
	}
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
	s := NewServer(addr, h)
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

func mustDNSHandler(t *testing.T, cfg Config) *dnsHandler {
	t.Helper()
	h, err := newHandler(cfg, func() []netip.Addr { return nil })
	if err != nil {
		t.Fatalf("newHandler: %v", err)
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

func crowdDNSConfig() Config {
	return Config{
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
	cfg := Config{Hosts: []string{"flood1.test"}, Zone: "test.", Advertise: []net.IP{net.ParseIP("::1")}, Upstreams: []string{}}
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

func TestNewDNSHandlerRejectsBadConfig(t *testing.T) {
	base := crowdDNSConfig
	tests := []struct {
		name string
		mod  func(c *Config)
	}{
		{"no advertise with hosts", func(c *Config) { c.Advertise = nil }},
		{"unspecified advertise", func(c *Config) { c.Advertise = []net.IP{net.IPv4zero} }},
		{"nil advertise IP", func(c *Config) { c.Advertise = []net.IP{nil} }},
		{"root zone", func(c *Config) { c.Zone = "." }},
		{"empty host", func(c *Config) { c.Hosts = []string{""} }},
		{"host with space", func(c *Config) { c.Hosts = []string{"a b.test"} }},
		{"label too long", func(c *Config) { c.Hosts = []string{strings.Repeat("a", 64) + ".test"} }},
		{"record bad IP", func(c *Config) { c.Records = map[string][]net.IP{"sut.test": {net.IP{1, 2, 3}}} }},
		{"upstream is a name", func(c *Config) { c.Upstreams = []string{"dns.google:53"} }},
		{"upstream port 0", func(c *Config) { c.Upstreams = []string{"127.0.0.1:0"} }},
		{"self garbage", func(c *Config) { c.Self = []string{"53"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.mod(&cfg)
			if _, err := NewHandler(cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
		})
	}
}
