package audience

import (
	"fmt"
	"strings"

	"github.com/crowdfed/crowd/flood/record"
)

// runGatePart says what a part of the run section offers to gates: its
// latency summary, and the count it has with what that count is a share of.
type runGatePart struct {
	latency func(*RunSection) record.HistRecord
	count   string // the count's name ("" for none)
	countOf func(*RunSection) (n, of int64)
}

// runGateParts are the parts of the run section a gate may name
// (visibility.p95<5s, visibility.never_seen==0, delivery.unreached<1%,
// home.p99<1s), by the name a gate gives them.
func runGateParts() map[string]runGatePart {
	return map[string]runGatePart{
		"visibility": {
			latency: func(r *RunSection) record.HistRecord { return r.Visibility.Latency },
			count:   "never_seen",
			countOf: func(r *RunSection) (int64, int64) { return r.Visibility.NeverSeen, r.Visibility.Accepted },
		},
		"delivery": {
			latency: func(r *RunSection) record.HistRecord { return r.Delivery.Latency },
			count:   "unreached",
			countOf: func(r *RunSection) (int64, int64) {
				return r.Delivery.Expected - r.Delivery.Reached, r.Delivery.Expected
			},
		},
		"home": {
			latency: func(r *RunSection) record.HistRecord { return r.Home.Latency },
		},
	}
}

// CheckGate says why g, a gate on a part of the run section (its Type is
// visibility, delivery or home), cannot be judged on one; nil when it can.
// Checked before the run, so that a gate that could never hold data does
// not run the whole flood first.
func CheckGate(g record.Gate) error {
	parts := runGateParts()
	part, ok := parts[strings.ToLower(g.Type)]
	if !ok {
		return fmt.Errorf("%q: %s is no part of crowd run's run section a gate reads (visibility, delivery, home)", g.Expr, g.Type)
	}
	switch {
	case g.IsCount() && part.count != "" && g.Metric == part.count:
		return nil
	case g.IsCount() && part.count != "":
		return fmt.Errorf("%q: %s counts %s only", g.Expr, strings.ToLower(g.Type), part.count)
	case g.IsCount():
		return fmt.Errorf("%q: %s has latencies only (a quantile such as p95 or p99.9, min, mean, max)", g.Expr, strings.ToLower(g.Type))
	case g.Family != "latency":
		return fmt.Errorf("%q: %s keeps one latency, no %s: name its quantile as %s.p95", g.Expr, strings.ToLower(g.Type), g.Family, strings.ToLower(g.Type))
	}
	return nil
}

// JudgeGates judges gates on the run section (each checked by CheckGate):
// a latency on its part's summary, a count as a share of what it counts
// (never_seen of the accepted notes, unreached of the deliveries
// expected). A part that measured nothing gives no data, so the gate is
// missed rather than passed.
func JudgeGates(run *RunSection, gates []record.Gate) []record.GateResult {
	parts := runGateParts()
	out := make([]record.GateResult, 0, len(gates))
	for _, g := range gates {
		part, ok := parts[strings.ToLower(g.Type)]
		switch {
		case !ok || run == nil:
			out = append(out, record.GateResult{Gate: g})
		case g.IsCount() && part.countOf != nil:
			n, of := part.countOf(run)
			if of == 0 { // nothing to count: never_seen==0 of no note is no pass
				out = append(out, record.GateResult{Gate: g})
				continue
			}
			out = append(out, g.JudgeCount(n, of))
		default:
			out = append(out, g.JudgeLatency(part.latency(run)))
		}
	}
	return out
}
