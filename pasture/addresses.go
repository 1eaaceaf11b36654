// Each origin at its own address (--advertise as a range): the plan the
// DNS answers with, the listeners' check, the crowd's own outgoing client
// and what /api/world tells an attached flood.

package pasture

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/originaddr"
	"github.com/crowdfed/crowd/pasture/nameserver"
	"github.com/crowdfed/crowd/pasture/tlsca"
)

// originPlan plans r (--advertise) for the world w; nil r plans nothing
// (Config.Advertise is every origin's address). A range too small for the
// origins is an error wrapping actors.ErrConfig that names --advertise.
func originPlan(r *originaddr.Range, w actors.Config) (*originaddr.Plan, error) {
	if r == nil {
		return nil, nil
	}
	plan, err := originaddr.NewPlan(*r, w.Domain, w.Origins, w.Shard.N)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", actors.ErrConfig, err)
	}
	return plan, nil
}

// ipSlice converts addresses for the DNS's configuration.
func ipSlice(addrs []netip.Addr) []net.IP {
	out := make([]net.IP, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.AsSlice())
	}
	return out
}

// planDNS fills the DNS's addresses from the plan: the name server at the
// shard's first origin's address; each origin at its own. With shards,
// every origin of the world is answered (each shard computes every
// origin's address alike), so one shard's DNS serves the whole fleet.
func (p *Pasture) planDNS(c *nameserver.Config) {
	w := p.cfg.World.Config
	c.Advertise = ipSlice(p.plan.Addrs(w.Shard.I + 1))
	if !p.plan.PerOrigin() {
		return
	}
	c.HostAddresses = func(host string) []net.IP { return ipSlice(p.plan.HostAddrs(host)) }
	if w.Shard.N > 1 {
		c.Hosts = make([]string, 0, w.Origins)
		for k := 1; k <= w.Origins; k++ {
			c.Hosts = append(c.Hosts, p.plan.Host(k))
		}
	}
}

// hostsByAddress maps each address that is one origin's own to its host,
// for the listeners to know which origin a connection was made to; nil
// when origins share their addresses. An address two origins share (a
// family given as one address) names none.
func (p *Pasture) hostsByAddress() map[netip.Addr]string {
	if p.plan == nil || !p.plan.PerOrigin() {
		return nil
	}
	out := map[netip.Addr]string{}
	shared := map[netip.Addr]bool{}
	for _, host := range p.cfg.World.Hosts() {
		for _, a := range p.plan.HostAddrs(host) {
			if _, dup := out[a]; dup {
				shared[a] = true
			}
			out[a] = host
		}
	}
	for a := range shared {
		delete(out, a)
	}
	return out
}

// logPlan says where the origins are reached, and warns about a listener
// bound to one address: it does not receive the origins' own addresses
// (a socket on 127.0.0.1 never sees 127.1.2.3), unless NAT or a proxy
// forwards them to it.
func (p *Pasture) logPlan(listeners map[string]string) {
	if p.plan == nil || !p.plan.PerOrigin() {
		return
	}
	w := p.cfg.World.Config
	p.log.Info("origins at their own addresses", zap.String("advertise", p.plan.Range().String()),
		zap.String("this_shard", p.plan.Slice(w.Shard.I)), zap.Int("origins", len(p.cfg.World.Origins)))
	for flag, addr := range listeners {
		host, _, err := net.SplitHostPort(addr)
		if ip, perr := netip.ParseAddr(host); addr != "" && err == nil && host != "" && perr == nil && !ip.IsUnspecified() {
			p.log.Warn("a listener bound to one address does not receive the origins' own addresses (only through NAT or a proxy): listen on the wildcard address, e.g. :443",
				zap.String("flag", flag), zap.String("addr", addr))
		}
	}
}

// AddressInfo is the plan as /api/world tells it (nil without a range).
func (p *Pasture) addressInfo() *adminapi.AddressInfo {
	if p.plan == nil || !p.plan.PerOrigin() {
		return nil
	}
	return &adminapi.AddressInfo{Advertise: p.plan.Range().String(), Origins: p.plan.Origins()}
}

// originClient is OutgoingClient sending each signed request (an Accept,
// a signed GET) from its signing origin's address, when the plan gives
// origins their own.
func originClient(ca *tlsca.CA, timeout time.Duration, plan *originaddr.Plan) *http.Client {
	c := OutgoingClient(ca, timeout)
	if plan != nil && plan.PerOrigin() {
		c.Transport = originaddr.NewTransport(c.Transport.(*http.Transport), plan)
	}
	return c
}
