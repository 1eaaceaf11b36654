// Package nameserver is the crowd's DNS: a zone it answers with authority (the origins, their
// addresses, static records, SOA/NS), forwarding of every other name (forward.go), and the
// UDP+TCP server that carries it (server.go). It knows nothing of the world or of HTTP, so
// pasture hands it names and addresses as data.
package nameserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap"
)

// DefaultResolvConf is where default upstreams come from when Config.Upstreams is nil.
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

// ErrConfig is wrapped by NewHandler's errors: a name, address or upstream it cannot use.
var ErrConfig = errors.New("pasture: invalid DNS configuration")

// ErrListen is wrapped when the DNS server cannot bind its address; the message names the
// --dns flag, the one to change.
var ErrListen = errors.New("pasture: cannot listen for DNS")

// Config is what the crowd's DNS answers. Names are case-insensitive, with or without the
// trailing dot.
type Config struct {
	// Hosts are the crowd's origins: A and AAAA answer Advertise, authoritatively.
	Hosts []string
	// Zone (e.g. "test.") is the zone the crowd is authoritative for: its apex answers SOA and
	// NS (ns.<zone>, with glue), and names in it that are neither Hosts nor Records nor
	// ancestors of them are NXDOMAIN. Empty: no zone; Hosts and Records are still answered.
	Zone string
	// Advertise is the address a SUT reaches the crowd at: IPv4 for A, IPv6 for AAAA. Required
	// when there are Hosts or a Zone.
	Advertise []net.IP
	// ForwardFor are more networks whose clients other names are forwarded for
	// (--dns-forward-for), beside loopback, private and link-local networks and the
	// machine's and Advertise's own addresses (see forwardsFor): a SUT on a public address.
	ForwardFor []netip.Prefix
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
	// Lapsed, when set, is asked at each query for the lapse check in force
	// now: nil when no host has lapsed (the query then walks no names), else
	// a func asked, for a query of one of Hosts or a name under one, whether
	// that host's domain has lapsed (the host as Hosts gives it). A lapsed
	// host and every name under it are NXDOMAIN, with the zone's SOA, until
	// it says otherwise. Records (even one under a lapsed host, or of a
	// host's own name), the apex and the other hosts are untouched. nil: no
	// host ever lapses.
	Lapsed func() (lapsed func(host string) bool)
	// OnLapsed, when set, is told of each query answered NXDOMAIN because
	// host (as Hosts gives it) has lapsed, with the querier's address, so
	// that a lookup the lapse refused leaves a trace. It runs on the
	// query's goroutine: keep it quick.
	OnLapsed func(host string, client net.Addr)
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
	hosts     map[string]string   // canonical name -> the host as Config.Hosts gives it, for lapsed
	records   map[string]bool     // names of Config.Records: never lapsed
	lapsed    func() func(host string) bool
	onLapsed  func(host string, client net.Addr)
	upstreams []string
	skipped   []string // upstreams dropped because they are the crowd itself
	// upstreamsFrom is where the upstreams were given ("--dns-upstream" or a resolv.conf
	// path) and self the crowd DNS's listen addresses (Config.Self): SkipReason names both.
	upstreamsFrom string
	self          []string
	// own are the machine's addresses and Advertise's, when the handler was made: a client
	// at one of them is on this machine, and may have its names forwarded (forwardsFor).
	own map[netip.Addr]bool
	// forwardFor are Config.ForwardFor, masked.
	forwardFor []netip.Prefix
	ttl        uint32
	timeout    time.Duration
	exchange   dnsExchangeFunc
	forwards   chan struct{} // semaphore

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

// NewHandler validates cfg and returns the crowd's DNS handler. It is authoritative (AA)
// for Hosts, Records and the Zone: A/AAAA from Advertise or the record, NOERROR with the SOA
// in the authority section when the name exists without that type, NXDOMAIN with the SOA for
// other names in the zone, SOA and NS (with glue) at the apex. Everything else is forwarded to
// the upstreams (UDP, then TCP when truncated; the next upstream on error, timeout, SERVFAIL
// or REFUSED; SERVFAIL when none answers), or REFUSED when there is no upstream, and for a
// client that is not on loopback, a private or link-local network, or this machine
// (forwardsFor): the crowd's names answer anyone, but it is no open resolver. A message
// without exactly one question is FORMERR; a class other than IN is REFUSED; zone transfers
// are REFUSED. It never forwards to itself. The handler never panics: a bug answers SERVFAIL.
// The result also tells the start-up log where it forwards (Handler).
func NewHandler(cfg Config) (Handler, error) {
	h, err := newHandler(cfg, dnsLocalAddrs)
	if err != nil {
		return nil, err // not a nil *dnsHandler in a non-nil interface
	}
	return h, nil
}

// Handler is the crowd's DNS handler (NewHandler), which also tells where it forwards, for
// the start-up log: an upstream it skipped is a forwarding the user asked for and does not
// get, which would otherwise show only as refused names later.
type Handler interface {
	dns.Handler
	// Upstreams are the upstreams it forwards to, in order, after defaults and the self
	// filter.
	Upstreams() []string
	// Skipped are the upstreams given (Config.Upstreams or resolv.conf) that it does not
	// forward to, being the crowd's own DNS listener (Config.Self).
	Skipped() []string
	// SkipReason says, in a sentence naming --dns-upstream (or the resolv.conf file) and
	// --dns, which upstreams were skipped and why; "" when Skipped is empty.
	SkipReason() string
}

func newHandler(cfg Config, localAddrs func() []netip.Addr) (*dnsHandler, error) {
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
	ups, from, err := dnsConfiguredUpstreams(cfg)
	if err != nil {
		return nil, err
	}
	h.upstreamsFrom, h.self = from, cfg.Self
	self, err := newDNSSelf(cfg.Self, advertise, localAddrs)
	if err != nil {
		return nil, err
	}
	if err := h.setUpstreams(ups, self); err != nil {
		return nil, err
	}
	h.own = ownAddrs(advertise, localAddrs)
	for _, p := range cfg.ForwardFor {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: a network to forward for that is none: %v", ErrConfig, p)
		}
		h.forwardFor = append(h.forwardFor, p.Masked())
	}
	return h, nil
}

// newDNSHandlerTunables is a handler with no names and no upstreams yet: cfg's TTL, timeout,
// forward limit and logger, with their defaults, and empty tables.
func newDNSHandlerTunables(cfg Config) *dnsHandler {
	h := &dnsHandler{
		addrs:    make(map[string][]net.IP),
		ents:     make(map[string]bool),
		hosts:    make(map[string]string),
		records:  make(map[string]bool),
		lapsed:   cfg.Lapsed,
		onLapsed: cfg.OnLapsed,
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
func dnsAdvertise(cfg Config) ([]net.IP, error) {
	advertise := make([]net.IP, 0, len(cfg.Advertise))
	for _, ip := range cfg.Advertise {
		a, ok := netip.AddrFromSlice(ip)
		if !ok || !a.IsValid() || a.Unmap().IsUnspecified() {
			return nil, fmt.Errorf("%w: advertise address %q", ErrConfig, ip.String())
		}
		advertise = append(advertise, a.Unmap().AsSlice())
	}
	if len(advertise) == 0 && (len(cfg.Hosts) > 0 || cfg.Zone != "") {
		return nil, fmt.Errorf("%w: no advertise address for the crowd's hosts", ErrConfig)
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
		h.hosts[n] = host
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
				return fmt.Errorf("%w: record %s: address %q", ErrConfig, name, ip.String())
			}
			list = append(list, a.Unmap().AsSlice())
		}
		h.addrs[n] = list
		h.records[n] = true
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
		reply = h.answer(req, w.RemoteAddr())
		// Recursion is there only for the clients it is forwarded for.
		reply.RecursionAvailable = reply.RecursionAvailable && h.forwardsFor(w.RemoteAddr())
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

// answer builds the reply to req, asked by client.
func (h *dnsHandler) answer(req *dns.Msg, client net.Addr) *dns.Msg {
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
	if h.lapsed != nil {
		if lapsed := h.lapsed(); lapsed != nil {
			if host, ok := h.lapsedName(name, lapsed); ok {
				if h.onLapsed != nil {
					h.onLapsed(host, client)
				}
				return h.nxdomain(req, name)
			}
		}
	}
	addrs, isAddr := h.addrs[name]
	apex := h.zone != "" && name == h.zone
	inZone := h.zone != "" && dns.IsSubDomain(h.zone, name)

	if !isAddr && !apex && !inZone {
		return h.forward(req, client)
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
		return h.nxdomain(req, name)
	}
	return m
}

// lapsedName reports whether name (canonical) is a host whose domain has
// lapsed by lapsed, or a name under one, and which host (as Hosts gives
// it); records are never lapsed.
func (h *dnsHandler) lapsedName(name string, lapsed func(host string) bool) (string, bool) {
	if h.records[name] {
		return "", false
	}
	for n := name; n != "" && n != "."; n = dnsParent(n) {
		if host, ok := h.hosts[n]; ok {
			return host, lapsed(host)
		}
	}
	return "", false
}

// nxdomain is the authoritative answer that name does not exist, with the
// SOA a resolver caches the denial by.
func (h *dnsHandler) nxdomain(req *dns.Msg, name string) *dns.Msg {
	m := new(dns.Msg)
	m.SetRcode(req, dns.RcodeNameError)
	m.Authoritative = true
	m.RecursionAvailable = len(h.upstreams) > 0
	m.Ns = append(m.Ns, h.soaFor(name))
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

// dnsMaxLoggedNames bounds the names whose refusal is remembered as logged: a resolver
// retrying, or a scan, logs once per name, and memory stays bounded.
const dnsMaxLoggedNames = 1024

// dnsCanonical validates a configured name and returns it lower-case and fully qualified.
func dnsCanonical(name string) (string, error) {
	n := strings.ToLower(dns.Fqdn(strings.TrimSpace(name)))
	if _, ok := dns.IsDomainName(n); !ok || n == "." || strings.ContainsAny(n, " \t") {
		return "", fmt.Errorf("%w: %q is not a domain name", ErrConfig, name)
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
