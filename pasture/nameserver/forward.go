// The forwarding half of the crowd's DNS: the upstreams (configured or from resolv.conf),
// the relay to them, and the check that none of them is the crowd itself.

package nameserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"go.uber.org/zap"
)

// dnsConfiguredUpstreams is cfg.Upstreams or, when nil, the nameservers of cfg.ResolvConf
// (none when that file does not exist), and where they came from, as a user would look
// for them: "--dns-upstream", or the resolv.conf file's path.
func dnsConfiguredUpstreams(cfg Config) (ups []string, from string, err error) {
	if cfg.Upstreams != nil {
		return cfg.Upstreams, "--dns-upstream", nil
	}
	path := cfg.ResolvConf
	if path == "" {
		path = DefaultResolvConf
	}
	ups, err = upstreamsFromResolvConf(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, path, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return ups, path, nil
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
// start-up log.
func (h *dnsHandler) Upstreams() []string { return append([]string(nil), h.upstreams...) }

// Skipped returns the configured upstreams that were dropped as the crowd's own address.
func (h *dnsHandler) Skipped() []string { return append([]string(nil), h.skipped...) }

// SkipReason says which upstreams were skipped, where they were given (--dns-upstream or
// resolv.conf) and why (the crowd's own --dns listener: a loop); "" when none was.
func (h *dnsHandler) SkipReason() string {
	if len(h.skipped) == 0 {
		return ""
	}
	// A user looks for the upstream where it was written: a flag, or a file they may not
	// know the crowd reads.
	ns, was, it := "nameserver", "was", "it is"
	if len(h.skipped) > 1 {
		ns, was, it = "nameservers", "were", "they are"
	}
	given := h.upstreamsFrom + " " + strings.Join(h.skipped, ", ")
	if h.upstreamsFrom != "--dns-upstream" {
		given = fmt.Sprintf("the %s %s of %s (read without --dns-upstream)", ns, strings.Join(h.skipped, ", "), h.upstreamsFrom)
	}
	return fmt.Sprintf("%s %s skipped: %s the crowd's own DNS listener (--dns %s), and forwarding there would loop",
		given, was, it, strings.Join(h.self, ", "))
}

// noUpstreamWhy is why a name is not forwarded when h has no upstream: none was given, or
// every one given is the crowd itself (then a bare "no --dns-upstream" would send the user
// looking for a flag they did give).
func (h *dnsHandler) noUpstreamWhy() string {
	if len(h.skipped) == 0 {
		return "the crowd's DNS forwards no names (no --dns-upstream): answer this one with --dns-record NAME=IP, or give --dns-upstream IP"
	}
	return "the crowd's DNS forwards no names (" + h.SkipReason() + "): answer this one with --dns-record NAME=IP, or give --dns-upstream IP of a resolver that is not the crowd"
}

// forward relays req, asked by client, to the upstreams and returns the first usable answer
// with req's id.
func (h *dnsHandler) forward(req *dns.Msg, client net.Addr) *dns.Msg {
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
		return fail(dns.RcodeRefused, dns.ExtendedErrorCodeNotAuthoritative, h.noUpstreamWhy())
	}
	if !h.forwardsFor(client) {
		return fail(dns.RcodeRefused, dns.ExtendedErrorCodeProhibited,
			"the crowd's DNS forwards names only for clients on loopback, private and link-local networks, on its own machine and in --dns-forward-for: answer this one with --dns-record NAME=IP, add the client's network with --dns-forward-for CIDR, or resolve it elsewhere")
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
			return nil, fmt.Errorf("%w: own address %q: %w", ErrConfig, a, err)
		}
		port, err := dnsPort(portStr)
		if err != nil {
			return nil, fmt.Errorf("%w: own address %q: %w", ErrConfig, a, err)
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
		s.local = ownAddrs(advertise, localAddrs)
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

// sharedAddressSpace is RFC 6598's 100.64.0.0/10, the carrier-grade NAT range: private in
// practice (Tailscale and some container networks number hosts in it), though netip's
// IsPrivate leaves it out.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// forwardsFor reports whether a query from client may be forwarded: a client on loopback, a
// private network (RFC 1918, RFC 6598, IPv6 ULA), a link-local one, at one of the machine's
// own addresses, or in a network of Config.ForwardFor. A crowd listening on every interface
// of a machine with a public address would otherwise forward for anyone: an open resolver,
// which others use to amplify attacks. A SUT on a public address still gets the crowd's own
// names; it resolves the rest elsewhere, or its network is named in ForwardFor. A client
// whose address is unknown (not UDP or TCP) is not forwarded for.
func (h *dnsHandler) forwardsFor(client net.Addr) bool {
	var a netip.Addr
	switch c := client.(type) {
	case *net.UDPAddr:
		a = c.AddrPort().Addr()
	case *net.TCPAddr:
		a = c.AddrPort().Addr()
	default:
		return false
	}
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || sharedAddressSpace.Contains(a) || h.own[a] {
		return true
	}
	for _, p := range h.forwardFor {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ownAddrs is the set of the machine's addresses (localAddrs) and advertise's.
func ownAddrs(advertise []net.IP, localAddrs func() []netip.Addr) map[netip.Addr]bool {
	own := make(map[netip.Addr]bool)
	for _, a := range localAddrs() {
		own[a.Unmap()] = true
	}
	for _, ip := range advertise {
		if a, ok := netip.AddrFromSlice(ip); ok {
			own[a.Unmap()] = true
		}
	}
	return own
}

// dnsParseUpstream accepts "ip", "ip:port" and "[ipv6]:port".
func dnsParseUpstream(u string) (netip.AddrPort, error) {
	u = strings.TrimSpace(u)
	if ip, err := netip.ParseAddr(u); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), 53), nil
	}
	host, portStr, err := net.SplitHostPort(u)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: upstream %q: want ip or ip:port", ErrConfig, u)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: upstream %q: not an IP address (a name would need DNS to find DNS)", ErrConfig, u)
	}
	port, err := dnsPort(portStr)
	if err != nil || port == 0 {
		return netip.AddrPort{}, fmt.Errorf("%w: upstream %q: bad port", ErrConfig, u)
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

// resolvConfUpstreams returns the nameservers miekg/dns's resolv.conf(5) reader finds in r, as
// "ip:port" (port 53; OpenBSD's "[ip]:port" form is kept), in file order, without duplicates;
// a nameserver that is not an address is left out, as is one whose "ip:port" the upstream
// parser (dnsParseUpstream) would not read back: an IPv6 zone holding "]" ("::%]") is an
// address to netip but breaks the brackets around it. Only the first 1 MiB is read.
func resolvConfUpstreams(r io.Reader) ([]string, error) {
	cc, err := dns.ClientConfigFromReader(io.LimitReader(r, resolvConfLimit))
	if err != nil {
		return nil, fmt.Errorf("resolv.conf: %w", err)
	}
	var out []string
	for _, name := range cc.Servers {
		ap, ok := resolvConfAddr(name)
		if !ok {
			continue
		}
		u := ap.String()
		if back, err := dnsParseUpstream(u); err == nil && back == ap && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out, nil
}

// resolvConfAddr reads one nameserver: a bare address (port 53) or, starting with "[", an
// "[ip]:port" with a port other than 0.
func resolvConfAddr(name string) (netip.AddrPort, bool) {
	if ip, err := netip.ParseAddr(name); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), 53), true
	}
	if !strings.HasPrefix(name, "[") {
		return netip.AddrPort{}, false
	}
	host, port, err := net.SplitHostPort(name)
	if err != nil {
		return netip.AddrPort{}, false
	}
	ip, err := netip.ParseAddr(host)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil || p == 0 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), true
}

// upstreamsFromResolvConf reads path with resolvConfUpstreams. A missing file is an error
// wrapping os.ErrNotExist.
func upstreamsFromResolvConf(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ups, err := resolvConfUpstreams(f)
	if err != nil {
		return ups, fmt.Errorf("%s: %w", path, err)
	}
	return ups, nil
}
