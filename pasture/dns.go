package pasture

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap"
)

// DefaultResolvConf is where default upstreams come from when DNSConfig.Upstreams is nil.
const DefaultResolvConf = "/etc/resolv.conf"

const (
	defaultDNSTTL         = 60 // seconds: short, so a restarted crowd with a new --advertise is seen soon
	defaultUpstreamWait   = 1500 * time.Millisecond
	defaultMaxForwards    = 1024
	dnsEDNSSize           = 1232 // the EDNS buffer size we advertise (DNS flag day 2020)
	resolvConfLimit       = 1 << 20
	dnsSOASerial          = 1
	dnsSOARefresh         = 3600
	dnsSOARetry           = 600
	dnsSOAExpire          = 86400
	dnsServerReadTimeout  = 2 * time.Second
	dnsServerUDPReadBytes = dns.DefaultMsgSize
)

// ErrDNSConfig is wrapped by NewDNSHandler's errors: a name, address or upstream it cannot use.
var ErrDNSConfig = errors.New("pasture: invalid DNS configuration")

// ErrDNSListen is wrapped when the DNS server cannot bind its address; the message names the
// --dns flag, the one to change.
var ErrDNSListen = errors.New("pasture: cannot listen for DNS")

// DNSConfig is what the crowd's DNS answers. Names are case-insensitive, with or without the
// trailing dot.
type DNSConfig struct {
	// Hosts are the crowd's origins: A and AAAA answer Advertise, authoritatively.
	Hosts []string
	// Zone (e.g. "test.") is the zone the crowd is authoritative for: its apex answers SOA and
	// NS (ns.<zone>, with glue), and names in it that are neither Hosts nor Records nor
	// ancestors of them are NXDOMAIN. Empty: no zone; Hosts and Records are still answered.
	Zone string
	// Advertise is the address a SUT reaches the crowd at: IPv4 for A, IPv6 for AAAA. Required
	// when there are Hosts or a Zone.
	Advertise []net.IP
	// Records are extra names (--dns-record NAME=IP, e.g. the SUT's own name), answered
	// authoritatively with exactly these addresses, inside the zone or not. A Records entry
	// overrides a host of the same name.
	Records map[string][]net.IP
	// Upstreams ("ip:port", or "ip" for port 53) get every other query, tried in order. nil
	// means the nameservers of ResolvConf; an empty non-nil slice means no forwarding
	// (REFUSED). Upstreams that are the crowd itself (see Self) are dropped.
	Upstreams []string
	// ResolvConf is read when Upstreams is nil; "" means /etc/resolv.conf. A missing file
	// means no upstreams.
	ResolvConf string
	// Self are the crowd DNS's own listen addresses (the --dns value, e.g. ":53"). An upstream
	// they would receive is skipped: a wildcard listener receives every local and every
	// Advertise address on its port; a specific one, its own address only.
	Self []string
	// TTL of answers and of negative answers (SOA minimum), seconds. 0 means 60.
	TTL uint32
	// Timeout bounds one exchange with one upstream. 0 means 1.5 s.
	Timeout time.Duration
	// MaxForwards bounds queries being forwarded at once; beyond it, SERVFAIL at once rather
	// than a goroutine pile-up. 0 means 1024.
	MaxForwards int
	// Logger is told, once per name, why a name could not be forwarded (naming --dns-record
	// and --dns-upstream); nil means no log.
	Logger *zap.Logger
	// HostAddresses, when set, is the one place that says which addresses
	// A and AAAA answer for each of Hosts (each origin at its own address,
	// --advertise as a range); a host it gives none, or nil, is answered
	// with Advertise. It is asked once per host, when the handler is made:
	// answers stay one map lookup at any world size.
	HostAddresses func(host string) []net.IP
}

// dnsExchangeFunc sends m to upstream over network ("udp" or "tcp"); a seam for tests and fuzzing.
type dnsExchangeFunc func(ctx context.Context, m *dns.Msg, network, upstream string) (*dns.Msg, error)

type dnsLoopKey struct {
	id    uint16
	qtype uint16
	name  string
}

// dnsHandler answers the crowd's names and forwards the rest. Immutable after construction
// except for the in-flight table and the forward semaphore.
type dnsHandler struct {
	zone      string              // canonical FQDN, "" for none
	nsName    string              // "ns.<zone>"
	addrs     map[string][]net.IP // canonical name -> addresses (hosts, records, ns name)
	ents      map[string]bool     // empty non-terminals inside the zone: NODATA, not NXDOMAIN
	upstreams []string
	skipped   []string // upstreams dropped because they are the crowd itself
	ttl       uint32
	timeout   time.Duration
	exchange  dnsExchangeFunc
	forwards  chan struct{} // semaphore

	// noRecover lets the fuzz target see panics instead of a SERVFAIL.
	noRecover bool

	log    *zap.Logger
	logMu  sync.Mutex
	logged map[string]bool // names whose refusal was logged; bounded by dnsMaxLoggedNames

	// inflight holds the (id, question) of every query this handler is forwarding, so that
	// one arriving back here (an upstream chain that leads to the crowd, which Self could not
	// see, e.g. through NAT) is recognized as a loop and answered SERVFAIL at once.
	mu       sync.Mutex
	inflight map[dnsLoopKey]struct{}
}

// NewDNSHandler validates cfg and returns the crowd's DNS handler. It is authoritative (AA)
// for Hosts, Records and the Zone: A/AAAA from Advertise or the record, NOERROR with the SOA
// in the authority section when the name exists without that type, NXDOMAIN with the SOA for
// other names in the zone, SOA and NS (with glue) at the apex. Everything else is forwarded to
// the upstreams (UDP, then TCP when truncated; the next upstream on error, timeout, SERVFAIL
// or REFUSED; SERVFAIL when none answers), or REFUSED when there is no upstream. A message
// without exactly one question is FORMERR; a class other than IN is REFUSED; zone transfers
// are REFUSED. It never forwards to itself. The handler never panics: a bug answers SERVFAIL.
// The result also has the methods Upstreams() and Skipped() []string (the effective and the
// self-skipped upstreams), for the start-up log.
func NewDNSHandler(cfg DNSConfig) (dns.Handler, error) {
	return newDNSHandler(cfg, dnsLocalAddrs)
}

func newDNSHandler(cfg DNSConfig, localAddrs func() []netip.Addr) (*dnsHandler, error) {
	h := newDNSHandlerTunables(cfg)
	advertise, err := dnsAdvertise(cfg)
	if err != nil {
		return nil, err
	}
	if err := h.addZone(cfg.Zone, advertise); err != nil {
		return nil, err
	}
	if err := h.addHosts(cfg.Hosts, advertise, cfg.HostAddresses); err != nil {
		return nil, err
	}
	if err := h.addRecords(cfg.Records); err != nil {
		return nil, err
	}
	h.addEmptyNonTerminals()
	ups, err := dnsConfiguredUpstreams(cfg)
	if err != nil {
		return nil, err
	}
	self, err := newDNSSelf(cfg.Self, advertise, localAddrs)
	if err != nil {
		return nil, err
	}
	if err := h.setUpstreams(ups, self); err != nil {
		return nil, err
	}
	return h, nil
}

// newDNSHandlerTunables is a handler with no names and no upstreams yet: cfg's TTL, timeout,
// forward limit and logger, with their defaults, and empty tables.
func newDNSHandlerTunables(cfg DNSConfig) *dnsHandler {
	h := &dnsHandler{
		addrs:    make(map[string][]net.IP),
		ents:     make(map[string]bool),
		ttl:      cfg.TTL,
		timeout:  cfg.Timeout,
		inflight: make(map[dnsLoopKey]struct{}),
		log:      cfg.Logger,
		logged:   make(map[string]bool),
	}
	if h.log == nil {
		h.log = zap.NewNop()
	}
	if h.ttl == 0 {
		h.ttl = defaultDNSTTL
	}
	if h.timeout <= 0 {
		h.timeout = defaultUpstreamWait
	}
	maxf := cfg.MaxForwards
	if maxf <= 0 {
		maxf = defaultMaxForwards
	}
	h.forwards = make(chan struct{}, maxf)
	h.exchange = h.exchangeNet
	return h
}

// dnsAdvertise validates cfg.Advertise (no unspecified address; IPv4-mapped ones as IPv4)
// and requires one when the crowd has hosts or a zone to answer with it.
func dnsAdvertise(cfg DNSConfig) ([]net.IP, error) {
	advertise := make([]net.IP, 0, len(cfg.Advertise))
	for _, ip := range cfg.Advertise {
		a, ok := netip.AddrFromSlice(ip)
		if !ok || !a.IsValid() || a.Unmap().IsUnspecified() {
			return nil, fmt.Errorf("%w: advertise address %q", ErrDNSConfig, ip.String())
		}
		advertise = append(advertise, a.Unmap().AsSlice())
	}
	if len(advertise) == 0 && (len(cfg.Hosts) > 0 || cfg.Zone != "") {
		return nil, fmt.Errorf("%w: no advertise address for the crowd's hosts", ErrDNSConfig)
	}
	return advertise, nil
}

// addZone makes h authoritative for zone ("" for none), with its name server ns.<zone> at
// the advertise addresses.
func (h *dnsHandler) addZone(zone string, advertise []net.IP) error {
	if zone == "" {
		return nil
	}
	z, err := dnsCanonical(zone)
	if err != nil {
		return err
	}
	h.zone = z
	h.nsName = "ns." + z
	h.addrs[h.nsName] = advertise
	return nil
}

// addHosts answers the crowd's origins with their own addresses (addrOf, when it gives
// any), else the advertise addresses.
func (h *dnsHandler) addHosts(hosts []string, advertise []net.IP, addrOf func(string) []net.IP) error {
	for _, host := range hosts {
		n, err := dnsCanonical(host)
		if err != nil {
			return err
		}
		h.addrs[n] = advertise
		if addrOf != nil {
			if ips := addrOf(host); len(ips) > 0 {
				h.addrs[n] = ips
			}
		}
	}
	return nil
}

// addRecords answers the static records with exactly their addresses; added after the
// hosts, a record overrides a host of the same name.
func (h *dnsHandler) addRecords(records map[string][]net.IP) error {
	for name, ips := range records {
		n, err := dnsCanonical(name)
		if err != nil {
			return err
		}
		list := make([]net.IP, 0, len(ips))
		for _, ip := range ips {
			a, ok := netip.AddrFromSlice(ip)
			if !ok || !a.IsValid() {
				return fmt.Errorf("%w: record %s: address %q", ErrDNSConfig, name, ip.String())
			}
			list = append(list, a.Unmap().AsSlice())
		}
		h.addrs[n] = list
	}
	return nil
}

// addEmptyNonTerminals marks the ancestors of h's names inside the zone as existing (RFC
// 8020: an NXDOMAIN for one would deny the names below it).
func (h *dnsHandler) addEmptyNonTerminals() {
	if h.zone == "" {
		return
	}
	for n := range h.addrs {
		for p := dnsParent(n); p != "" && dns.IsSubDomain(h.zone, p) && p != h.zone; p = dnsParent(p) {
			h.ents[p] = true
		}
	}
}

// dnsConfiguredUpstreams is cfg.Upstreams or, when nil, the nameservers of cfg.ResolvConf
// (none when that file does not exist).
func dnsConfiguredUpstreams(cfg DNSConfig) ([]string, error) {
	if cfg.Upstreams != nil {
		return cfg.Upstreams, nil
	}
	path := cfg.ResolvConf
	if path == "" {
		path = DefaultResolvConf
	}
	ups, err := UpstreamsFromResolvConf(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", ErrDNSConfig, err)
	}
	return ups, nil
}

// setUpstreams keeps each upstream once, in order, and sets aside as skipped the ones self
// would receive: forwarding to them would be a loop.
func (h *dnsHandler) setUpstreams(ups []string, self *dnsSelf) error {
	seen := make(map[string]bool)
	for _, u := range ups {
		ap, err := dnsParseUpstream(u)
		if err != nil {
			return err
		}
		s := ap.String()
		if seen[s] {
			continue
		}
		seen[s] = true
		if self.has(ap) {
			h.skipped = append(h.skipped, s)
			continue
		}
		h.upstreams = append(h.upstreams, s)
	}
	return nil
}

// Upstreams returns the upstreams h forwards to, after defaults and the self filter, for the
// start-up log. The handler returned by NewDNSHandler has this method and Skipped.
func (h *dnsHandler) Upstreams() []string { return append([]string(nil), h.upstreams...) }

// Skipped returns the configured upstreams that were dropped as the crowd's own address.
func (h *dnsHandler) Skipped() []string { return append([]string(nil), h.skipped...) }

// ServeDNS implements dns.Handler.
func (h *dnsHandler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if !h.noRecover {
		defer func() {
			if recover() != nil {
				m := new(dns.Msg)
				m.SetRcode(req, dns.RcodeServerFailure)
				w.WriteMsg(m)
			}
		}()
	}
	h.serve(w, req)
}

func (h *dnsHandler) serve(w dns.ResponseWriter, req *dns.Msg) {
	if req == nil || req.Response {
		return // never answer an answer: that is how two servers loop
	}
	var reply *dns.Msg
	opt := req.IsEdns0()
	if opt != nil && opt.Version() != 0 {
		// RFC 6891 §6.1.3: an EDNS version we do not speak is BADVERS, unprocessed.
		reply = new(dns.Msg).SetRcode(req, dns.RcodeBadVers) // Pack puts the high bits in OPT
		reply.SetEdns0(dnsEDNSSize, false)
	} else {
		reply = h.answer(req)
		if opt != nil && reply.IsEdns0() == nil {
			reply.SetEdns0(dnsEDNSSize, false)
		}
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil && int(opt.UDPSize()) > size {
			size = int(opt.UDPSize())
		}
		reply.Truncate(size)
	} else {
		reply.Compress = true
	}
	w.WriteMsg(reply)
}

// answer builds the reply to req.
func (h *dnsHandler) answer(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	if len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		rcode := dns.RcodeFormatError
		if req.Opcode != dns.OpcodeQuery {
			rcode = dns.RcodeNotImplemented
		}
		m.SetRcode(req, rcode)
		m.Question = nil // echo no question we did not understand
		return m
	}
	q := req.Question[0]
	if q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY {
		return m.SetRcode(req, dns.RcodeRefused)
	}
	name := strings.ToLower(dns.Fqdn(q.Name))
	addrs, isAddr := h.addrs[name]
	apex := h.zone != "" && name == h.zone
	inZone := h.zone != "" && dns.IsSubDomain(h.zone, name)

	if !isAddr && !apex && !inZone {
		return h.forward(req)
	}
	if q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR {
		return m.SetRcode(req, dns.RcodeRefused)
	}

	m.SetReply(req)
	m.Authoritative = true
	m.RecursionAvailable = len(h.upstreams) > 0
	owner := q.Name // keep the asker's case (0x20 randomization)
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: owner, Rrtype: t, Class: dns.ClassINET, Ttl: h.ttl}
	}
	if apex {
		if q.Qtype == dns.TypeSOA || q.Qtype == dns.TypeANY {
			m.Answer = append(m.Answer, h.soa(owner))
		}
		if q.Qtype == dns.TypeNS || q.Qtype == dns.TypeANY {
			m.Answer = append(m.Answer, &dns.NS{Hdr: hdr(dns.TypeNS), Ns: h.nsName})
			m.Extra = append(m.Extra, h.addrRRs(h.nsName, h.addrs[h.nsName], dns.TypeANY)...)
		}
	}
	if isAddr {
		m.Answer = append(m.Answer, h.addrRRs(owner, addrs, q.Qtype)...)
	}
	switch {
	case len(m.Answer) > 0:
	case isAddr || apex || h.ents[name]:
		m.Ns = append(m.Ns, h.soaFor(name)) // NODATA
	default:
		m.Rcode = dns.RcodeNameError
		m.Ns = append(m.Ns, h.soaFor(name))
	}
	return m
}

// addrRRs renders ips as A/AAAA records of owner, keeping those that answer qtype.
func (h *dnsHandler) addrRRs(owner string, ips []net.IP, qtype uint16) []dns.RR {
	var out []dns.RR
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			if qtype == dns.TypeA || qtype == dns.TypeANY {
				out = append(out, &dns.A{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: h.ttl}, A: v4})
			}
		} else if qtype == dns.TypeAAAA || qtype == dns.TypeANY {
			out = append(out, &dns.AAAA{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: h.ttl}, AAAA: ip})
		}
	}
	return out
}

// soaFor is the SOA that goes in the authority section of a negative answer about name: the
// zone's, or for a name outside the zone (a record) one made up at the name itself, so a
// resolver can still cache the negative answer for TTL seconds.
func (h *dnsHandler) soaFor(name string) dns.RR {
	if h.zone != "" && dns.IsSubDomain(h.zone, name) {
		return h.soa(h.zone)
	}
	return h.soa(name)
}

func (h *dnsHandler) soa(owner string) *dns.SOA {
	ns := h.nsName
	if ns == "" {
		ns = "ns." + strings.ToLower(dns.Fqdn(owner))
	}
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: owner, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: h.ttl},
		Ns:      ns,
		Mbox:    "hostmaster." + strings.TrimPrefix(ns, "ns."),
		Serial:  dnsSOASerial,
		Refresh: dnsSOARefresh,
		Retry:   dnsSOARetry,
		Expire:  dnsSOAExpire,
		Minttl:  h.ttl,
	}
}

// forward relays req to the upstreams and returns the first usable answer with req's id.
func (h *dnsHandler) forward(req *dns.Msg) *dns.Msg {
	q := req.Question[0]
	// A failure says why, to the asker (an Extended DNS Error, RFC 8914, when it speaks EDNS)
	// and in the log: a resolver only shows "server misbehaving".
	fail := func(rcode int, ede uint16, why string) *dns.Msg {
		m := new(dns.Msg)
		m.SetRcode(req, rcode)
		m.RecursionAvailable = len(h.upstreams) > 0
		if req.IsEdns0() != nil {
			m.SetEdns0(dnsEDNSSize, false)
			opt := m.IsEdns0()
			opt.Option = append(opt.Option, &dns.EDNS0_EDE{InfoCode: ede, ExtraText: why})
		}
		h.logRefusal(q.Name, dns.RcodeToString[rcode], why)
		return m
	}
	if len(h.upstreams) == 0 { // not a recursive server without upstreams
		return fail(dns.RcodeRefused, dns.ExtendedErrorCodeNotAuthoritative,
			"the crowd's DNS forwards no names (no --dns-upstream): answer this one with --dns-record NAME=IP, or give --dns-upstream IP")
	}
	key := dnsLoopKey{id: req.Id, qtype: q.Qtype, name: strings.ToLower(q.Name)}
	h.mu.Lock()
	_, looped := h.inflight[key]
	h.mu.Unlock()
	if looped { // our own forwarded query came back: stop here
		return fail(dns.RcodeServerFailure, dns.ExtendedErrorCodeOther,
			"the query came back to the crowd's DNS: a --dns-upstream leads back to the crowd; answer this name with --dns-record NAME=IP")
	}
	select {
	case h.forwards <- struct{}{}:
		defer func() { <-h.forwards }()
	default:
		return fail(dns.RcodeServerFailure, dns.ExtendedErrorCodeOther, "the crowd's DNS is forwarding too many queries at once")
	}

	out := req.Copy()
	h.mu.Lock()
	for {
		out.Id = dns.Id()
		key.id = out.Id
		if _, dup := h.inflight[key]; !dup {
			break
		}
	}
	h.inflight[key] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.inflight, key)
		h.mu.Unlock()
	}()

	for _, up := range h.upstreams {
		r := h.ask(out, up)
		if r == nil {
			continue
		}
		if r.Rcode == dns.RcodeServerFailure || r.Rcode == dns.RcodeRefused {
			continue
		}
		r.Id = req.Id
		r.Question = req.Question
		r.Response = true
		return r
	}
	return fail(dns.RcodeServerFailure, dns.ExtendedErrorCodeNoReachableAuthority, fmt.Sprintf(
		"no --dns-upstream answered (%s): answer this name with --dns-record NAME=IP, or fix --dns-upstream",
		strings.Join(h.upstreams, ", ")))
}

// dnsMaxLoggedNames bounds the names whose refusal is remembered as logged: a resolver
// retrying, or a scan, logs once per name, and memory stays bounded.
const dnsMaxLoggedNames = 1024

// logRefusal logs, once per name, that name could not be answered and why.
func (h *dnsHandler) logRefusal(name, rcode, why string) {
	name = strings.ToLower(name)
	h.logMu.Lock()
	seen := h.logged[name]
	if !seen && len(h.logged) < dnsMaxLoggedNames {
		h.logged[name] = true
	}
	h.logMu.Unlock()
	if !seen {
		h.log.Warn("a name the crowd's DNS cannot answer", zap.String("name", name), zap.String("rcode", rcode), zap.String("why", why))
	}
}

// ask exchanges m with one upstream over UDP, and again over TCP when the answer is truncated.
// It returns nil when the upstream gave no usable answer.
func (h *dnsHandler) ask(m *dns.Msg, upstream string) *dns.Msg {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	r, err := h.exchange(ctx, m, "udp", upstream)
	if err != nil || !dnsAnswers(r, m) {
		return nil
	}
	if r.Truncated {
		// The full answer over TCP; if TCP fails, the truncated one still tells the client
		// to retry over TCP itself.
		if full, err := h.exchange(ctx, m, "tcp", upstream); err == nil && dnsAnswers(full, m) {
			return full
		}
	}
	return r
}

// dnsAnswers reports whether r is a reply to query m (a stray or forged packet is not).
func dnsAnswers(r, m *dns.Msg) bool {
	return r != nil && r.Response && r.Id == m.Id && len(r.Question) == 1 &&
		r.Question[0].Qtype == m.Question[0].Qtype &&
		strings.EqualFold(r.Question[0].Name, m.Question[0].Name)
}

func (h *dnsHandler) exchangeNet(ctx context.Context, m *dns.Msg, network, upstream string) (*dns.Msg, error) {
	c := &dns.Client{Net: network, Timeout: h.timeout, UDPSize: dns.MaxMsgSize}
	r, _, err := c.ExchangeContext(ctx, m, upstream)
	return r, err
}

// dnsSelf decides whether an upstream address is one of the crowd's own DNS sockets.
type dnsSelf struct {
	exact    map[netip.AddrPort]bool
	wildcard map[uint16]bool // ports listened on all addresses
	local    map[netip.Addr]bool
}

func newDNSSelf(self []string, advertise []net.IP, localAddrs func() []netip.Addr) (*dnsSelf, error) {
	s := &dnsSelf{exact: map[netip.AddrPort]bool{}, wildcard: map[uint16]bool{}, local: map[netip.Addr]bool{}}
	for _, a := range self {
		host, portStr, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("%w: own address %q: %w", ErrDNSConfig, a, err)
		}
		port, err := dnsPort(portStr)
		if err != nil {
			return nil, fmt.Errorf("%w: own address %q: %w", ErrDNSConfig, a, err)
		}
		switch ip, err := netip.ParseAddr(host); {
		case host == "" || (err == nil && ip.IsUnspecified()):
			s.wildcard[port] = true
		case err == nil:
			s.exact[netip.AddrPortFrom(ip.Unmap(), port)] = true
		case strings.EqualFold(host, "localhost"):
			s.exact[netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)] = true
			s.exact[netip.AddrPortFrom(netip.IPv6Loopback(), port)] = true
		default:
			// A name: resolving it could ask this very server before it runs. Treat it as a
			// wildcard, the safe side: at worst an upstream on the same port is skipped.
			s.wildcard[port] = true
		}
	}
	if len(s.wildcard) > 0 {
		for _, a := range localAddrs() {
			s.local[a.Unmap()] = true
		}
		for _, ip := range advertise {
			if a, ok := netip.AddrFromSlice(ip); ok {
				s.local[a.Unmap()] = true
			}
		}
	}
	return s, nil
}

func (s *dnsSelf) has(ap netip.AddrPort) bool {
	ip := ap.Addr().Unmap()
	if s.exact[netip.AddrPortFrom(ip, ap.Port())] {
		return true
	}
	if !s.wildcard[ap.Port()] {
		return false
	}
	// A wildcard socket receives whatever reaches this machine on its port: any loopback
	// address (all of 127/8), the unspecified address (which means "this host"), local
	// interface addresses, and the address SUTs reach the crowd at.
	return ip.IsLoopback() || ip.IsUnspecified() || s.local[ip]
}

func dnsLocalAddrs() []netip.Addr {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range ifaddrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out
}

// dnsParseUpstream accepts "ip", "ip:port" and "[ipv6]:port".
func dnsParseUpstream(u string) (netip.AddrPort, error) {
	u = strings.TrimSpace(u)
	if ip, err := netip.ParseAddr(u); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), 53), nil
	}
	host, portStr, err := net.SplitHostPort(u)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: upstream %q: want ip or ip:port", ErrDNSConfig, u)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: upstream %q: not an IP address (a name would need DNS to find DNS)", ErrDNSConfig, u)
	}
	port, err := dnsPort(portStr)
	if err != nil || port == 0 {
		return netip.AddrPort{}, fmt.Errorf("%w: upstream %q: bad port", ErrDNSConfig, u)
	}
	return netip.AddrPortFrom(ip.Unmap(), port), nil
}

func dnsPort(s string) (uint16, error) {
	switch strings.ToLower(s) {
	case "domain":
		return 53, nil
	}
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return uint16(p), nil
}

// dnsCanonical validates a configured name and returns it lower-case and fully qualified.
func dnsCanonical(name string) (string, error) {
	n := strings.ToLower(dns.Fqdn(strings.TrimSpace(name)))
	if _, ok := dns.IsDomainName(n); !ok || n == "." || strings.ContainsAny(n, " \t") {
		return "", fmt.Errorf("%w: %q is not a domain name", ErrDNSConfig, name)
	}
	return n, nil
}

// dnsParent returns the parent of a canonical FQDN ("a.b." -> "b."), "" for the root.
func dnsParent(n string) string {
	if n == "." {
		return ""
	}
	off, end := dns.NextLabel(n, 0)
	if end {
		return "."
	}
	return n[off:]
}

// ParseResolvConf returns the nameservers of a resolv.conf(5) file as "ip:port" (port 53;
// the "[ip]:port" form some systems allow is kept), in file order, without duplicates.
// Comments (# or ;), other keywords, and lines whose address does not parse are ignored, as
// the C resolver does; a zone on a link-local IPv6 address is kept. Only the first 1 MiB is read.
func ParseResolvConf(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, resolvConfLimit))
	sc.Buffer(make([]byte, 0, 4096), resolvConfLimit)
	var out []string
	seen := make(map[string]bool)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		var ap netip.AddrPort
		if ip, err := netip.ParseAddr(f[1]); err == nil {
			ap = netip.AddrPortFrom(ip.Unmap(), 53)
		} else if p, ok := resolvConfBracketed(f[1]); ok {
			ap = p
		} else {
			continue
		}
		s := ap.String()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("resolv.conf: %w", err)
	}
	return out, nil
}

// resolvConfBracketed parses the "[ip]:port" form (OpenBSD's resolv.conf allows it).
func resolvConfBracketed(s string) (netip.AddrPort, bool) {
	if !strings.HasPrefix(s, "[") {
		return netip.AddrPort{}, false
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)), true
}

// UpstreamsFromResolvConf reads path with ParseResolvConf. A missing file is an error
// wrapping os.ErrNotExist.
func UpstreamsFromResolvConf(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ups, err := ParseResolvConf(f)
	if err != nil {
		return ups, fmt.Errorf("%s: %w", path, err)
	}
	return ups, nil
}

// DNSServer serves a dns.Handler over UDP and TCP on one address.
type DNSServer struct {
	addr string
	h    dns.Handler

	mu       sync.Mutex
	udp, tcp *dns.Server
	bound    string
	done     chan error // receives each server's exit, two in all
}

// NewDNSServer returns a server for addr (host:port; ":53" listens on every address) that
// will pass queries to h. Nothing listens before Start.
func NewDNSServer(addr string, h dns.Handler) *DNSServer {
	return &DNSServer{addr: addr, h: h}
}

// Start binds UDP and TCP on the same address (with port 0, TCP takes the port UDP got) and
// returns once both are serving. A bind failure wraps ErrDNSListen and the cause, and names
// the --dns flag. ctx bounds only the start; Shutdown stops the server.
func (s *DNSServer) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.udp != nil {
		return errors.New("pasture: DNS server already started")
	}
	pc, ln, err := dnsListen(s.addr)
	if err != nil {
		return err
	}
	udpStarted, tcpStarted := make(chan struct{}), make(chan struct{})
	s.udp = &dns.Server{
		PacketConn: pc, Handler: s.h, UDPSize: dnsServerUDPReadBytes,
		ReadTimeout: dnsServerReadTimeout, NotifyStartedFunc: func() { close(udpStarted) },
	}
	s.tcp = &dns.Server{
		Listener: ln, Handler: s.h,
		ReadTimeout: dnsServerReadTimeout, NotifyStartedFunc: func() { close(tcpStarted) },
	}
	s.bound = pc.LocalAddr().String()
	s.done = make(chan error, 2)
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		go func() { s.done <- srv.ActivateAndServe() }()
	}
	for _, started := range []chan struct{}{udpStarted, tcpStarted} {
		select {
		case <-started:
		case err := <-s.done:
			s.stopLocked(context.Background())
			return fmt.Errorf("%w on %s (change the --dns flag): %w", ErrDNSListen, s.addr, err)
		case <-ctx.Done():
			s.stopLocked(context.Background())
			return ctx.Err()
		}
	}
	return nil
}

func dnsListen(addr string) (net.PacketConn, net.Listener, error) {
	fail := func(network string, err error) error {
		return fmt.Errorf("%w: %s %s (change the --dns flag): %w", ErrDNSListen, network, addr, err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fail("udp", err)
	}
	// With port 0 the kernel picks a UDP port that may be taken on TCP: try a few.
	for attempt := 0; ; attempt++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, fail("udp", err)
		}
		_, got, _ := net.SplitHostPort(pc.LocalAddr().String())
		ln, err := net.Listen("tcp", net.JoinHostPort(host, got))
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		if port != "0" || attempt >= 10 {
			return nil, nil, fail("tcp", err)
		}
	}
}

// Addr returns the bound address (port 0 resolved) once started, else the configured one.
func (s *DNSServer) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bound != "" {
		return s.bound
	}
	return s.addr
}

// Shutdown stops both listeners and waits, within ctx, for queries in progress. Calling it
// on a server that is not running is a no-op.
func (s *DNSServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked(ctx)
}

func (s *DNSServer) stopLocked(ctx context.Context) error {
	if s.udp == nil {
		return nil
	}
	var errs []error
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		// A server that never got to run answers "not started": nothing to wait for.
		if err := srv.ShutdownContext(ctx); err != nil && ctx.Err() != nil {
			errs = append(errs, err)
		}
	}
	// ShutdownContext does not close the PacketConn or listener when the server never started.
	s.udp.PacketConn.Close()
	s.tcp.Listener.Close()
	s.udp, s.tcp, s.bound = nil, nil, ""
	return errors.Join(errs...)
}
