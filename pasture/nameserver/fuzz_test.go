package nameserver

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// packedQuery is a query for name and qtype, changed by mod (nil: none), packed.
func packedQuery(name string, qtype uint16, mod func(*dns.Msg)) []byte {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return packed(m, mod)
}

// packedReply is an answer to an A query for name, changed by mod (nil: none), packed.
func packedReply(name string, mod func(*dns.Msg)) []byte {
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	m := new(dns.Msg)
	m.SetReply(q)
	rr, _ := dns.NewRR(name + " 300 IN A 192.0.2.1")
	m.Answer = append(m.Answer, rr)
	return packed(m, mod)
}

func packed(m *dns.Msg, mod func(*dns.Msg)) []byte {
	if mod != nil {
		mod(m)
	}
	b, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzDNSHandler feeds arbitrary bytes, unpacked as a DNS message, to the handler (what the
// server does with every packet that parses), with a fake upstream that answers with the
// second input, unpacked. The handler must not panic, must answer every query exactly once,
// with the query's id, in a message that packs.
func FuzzDNSHandler(f *testing.F) {
	f.Add(packedQuery("flood1.test.", dns.TypeA, nil), packedReply("example.org.", nil))
	f.Add(packedQuery("FLOOD1.TEST.", dns.TypeAAAA, nil), []byte{})
	f.Add(packedQuery("test.", dns.TypeNS, nil), []byte{})
	f.Add(packedQuery("test.", dns.TypeANY, func(m *dns.Msg) { m.SetEdns0(4096, true) }), []byte{})
	f.Add(packedQuery("nope.test.", dns.TypeA, nil), []byte{})
	f.Add(packedQuery("sut.example.", dns.TypeTXT, nil), []byte{})
	f.Add(packedQuery("example.org.", dns.TypeA, nil), packedReply("example.org.", nil))
	f.Add(packedQuery("example.org.", dns.TypeA, nil), packedReply("example.org.", func(m *dns.Msg) { m.Truncated = true }))
	f.Add(packedQuery("example.org.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(1232, false) }),
		packedReply("example.org.", func(m *dns.Msg) { m.SetEdns0(4096, false); m.Rcode = dns.RcodeBadCookie }))
	f.Add(packedQuery("example.org.", dns.TypeA, nil), packedReply("other.org.", nil))
	f.Add(packedQuery("x.", dns.TypeA, func(m *dns.Msg) { m.Question = nil }), []byte{})
	f.Add(packedQuery("x.", dns.TypeA, func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }), []byte{})
	f.Add(packedQuery("flood1.test.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(512, false); m.IsEdns0().SetVersion(3) }), []byte{})
	f.Add([]byte{0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}, []byte{0xff, 0xff})

	f.Add(packedQuery("www.flood2.test.", dns.TypeA, nil), []byte{})

	cfg := crowdDNSConfig()
	cfg.Upstreams = []string{"127.0.0.2:53", "[::1]:5353"}
	cfg.Lapsed = func() func(string) bool { // names under Flood2.TEST. are NXDOMAIN
		return func(host string) bool { return host == "Flood2.TEST." }
	}
	f.Fuzz(func(t *testing.T, query, upstreamReply []byte) {
		req := new(dns.Msg)
		if err := req.Unpack(query); err != nil {
			return // the server drops (or FORMERRs) what does not parse, before the handler
		}
		h, err := newHandler(cfg, func() []netip.Addr { return nil })
		if err != nil {
			t.Fatal(err)
		}
		h.noRecover = true // a panic must fail the fuzz run, not become SERVFAIL
		h.exchange = func(_ context.Context, m *dns.Msg, network, upstream string) (*dns.Msg, error) {
			r := new(dns.Msg)
			if err := r.Unpack(upstreamReply); err != nil {
				return nil, errors.New("upstream garbage")
			}
			// Make it a plausible reply often enough to reach the relay path.
			r.Id = m.Id
			if len(r.Question) == 0 {
				r.Question = m.Question
			}
			return r, nil
		}
		w := &dnsTestWriter{tcp: len(query)%2 == 1}
		h.ServeDNS(w, req)

		if req.Response {
			if len(w.msgs) != 0 {
				t.Fatalf("answered a response")
			}
			return
		}
		if len(w.msgs) != 1 {
			t.Fatalf("%d replies, want 1", len(w.msgs))
		}
		r := w.msgs[0]
		if r.Id != req.Id || !r.Response {
			t.Fatalf("reply id %d QR %v to query %d", r.Id, r.Response, req.Id)
		}
		b, err := r.Pack()
		if err != nil {
			t.Fatalf("reply does not pack: %v\n%v", err, r)
		}
		if !w.tcp {
			limit := dns.MinMsgSize
			if opt := req.IsEdns0(); opt != nil && int(opt.UDPSize()) > limit {
				limit = int(opt.UDPSize())
			}
			if len(b) > limit && r.IsTsig() == nil {
				t.Fatalf("UDP reply of %d bytes over the client's %d", len(b), limit)
			}
		}
	})
}

// FuzzResolvConfUpstreams: any input reads without panic into distinct, usable upstreams.
func FuzzResolvConfUpstreams(f *testing.F) {
	f.Add("nameserver 10.0.0.1\n")
	f.Add("# comment\nsearch a b\nnameserver 2001:db8::1\nnameserver fe80::1%eth0\noptions edns0\n")
	f.Add("nameserver [::1]:5353\nnameserver [127.0.0.1]:53\n")
	f.Add("nameserver 10.0.0.1;x\r\nnameserver\t10.0.0.1\n;nameserver 1.1.1.1")
	f.Add("nameserver ::ffff:1.2.3.4\nnameserver 0.0.0.0\nnameserver [::]:0\n")
	f.Add(strings.Repeat("x", 70000) + "\nnameserver 1.1.1.1\n")
	f.Fuzz(func(t *testing.T, in string) {
		ups, _ := resolvConfUpstreams(strings.NewReader(in))
		seen := map[string]bool{}
		for _, u := range ups {
			if seen[u] {
				t.Fatalf("duplicate %q", u)
			}
			seen[u] = true
			ap, err := dnsParseUpstream(u)
			if err != nil {
				t.Fatalf("resolvConfUpstreams gave %q, which the handler rejects: %v", u, err)
			}
			if ap.String() != u {
				t.Fatalf("not canonical: %q vs %q", u, ap.String())
			}
		}
	})
}
