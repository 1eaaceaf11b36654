// Sending from the origins' own addresses, when the attached crowd gives
// each origin one (crowd serve --advertise with a range): the flood's
// sends and the run's signed GETs leave from the signing origin's address,
// so the SUT sees a client per origin, as the fediverse would show it.

package loadrun

import (
	"fmt"
	"net"
	"net/http"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/internal/originaddr"
)

// sendingTransport is an http.RoundTripper whose idle connections can be
// closed: the flood's transport, wrapped or not.
type sendingTransport interface {
	http.RoundTripper
	CloseIdleConnections()
}

// fromOrigins wraps tr so each signed request leaves from its origin's
// address, when plan gives origins their own; tr otherwise. tr's dialer
// must bind as originaddr.BindDial does (the run's guard does).
func fromOrigins(tr *http.Transport, plan *originaddr.Plan) sendingTransport {
	if plan == nil || !plan.PerOrigin() {
		return tr
	}
	return originaddr.NewTransport(tr, plan)
}

// floodTransport is the flood's transport of o, dialling through dial
// (the run's guard): one pool, or a pool per origin address when plan
// gives origins their own (as fromOrigins).
func floodTransport(o flood.TransportOptions, dial flood.DialFunc, plan *originaddr.Plan) sendingTransport {
	o.Dial = dial
	if plan == nil || !plan.PerOrigin() {
		return flood.NewClientTransport(o)
	}
	clone := func(d originaddr.DialFunc) originaddr.Pool {
		o := o
		o.Dial = d
		return flood.NewClientTransport(o)
	}
	return originaddr.NewPools(flood.NewClientTransport(o), dial, clone, plan)
}

// attachedPlan reads the attached crowd's addresses from /api/world; nil
// when its origins share one.
func attachedPlan(info adminapi.WorldInfo, admin string) (*originaddr.Plan, error) {
	if info.Addresses == nil {
		return nil, nil
	}
	shard, err := actors.ParseShard(info.Shard)
	if err != nil {
		return nil, err
	}
	rng, err := originaddr.ParseRange(info.Addresses.Advertise)
	if err == nil {
		var plan *originaddr.Plan
		if plan, err = originaddr.NewPlan(rng, info.Domain, info.Addresses.Origins, shard.N); err == nil {
			return plan, nil
		}
	}
	return nil, fmt.Errorf("the crowd at %s (--admin) describes addresses it cannot have: %w", admin, err)
}

// planHosts maps each origin of world to its own address on crowdHTTPS's
// port (a self-flood through --crowd-https reaches every origin at its own
// address; the crowd's wildcard listener receives them all).
func planHosts(world *actors.World, plan *originaddr.Plan, crowdHTTPS string, hosts map[string]string) {
	_, port, err := net.SplitHostPort(crowdHTTPS)
	if plan == nil || !plan.PerOrigin() || err != nil {
		return
	}
	for _, o := range world.Origins {
		if addrs := plan.Addrs(o.Index); len(addrs) > 0 {
			hosts[o.Host] = net.JoinHostPort(addrs[0].String(), port)
		}
	}
}

// logPlan says that the run sends from the origins' own addresses.
func logPlan(log *zap.Logger, plan *originaddr.Plan, shard int) {
	if plan != nil && plan.PerOrigin() {
		log.Info("each origin sends from its own address", zap.String("advertise", plan.Range().String()),
			zap.String("this_shard", plan.Slice(shard)))
	}
}
