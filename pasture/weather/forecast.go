package weather

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/crowdfed/crowd/internal/hostorder"
)

// Forecast is a spec applied to one world's origins: which origin is in
// which condition. It never changes once made; a Sky swaps forecasts.
type Forecast struct {
	spec   Spec
	seed   uint64
	byHost map[string]Condition
}

// Assign applies spec to the origins (host names, lower case). Listed
// origins are taken first; then each share rule, in the spec's order,
// takes round(percent × origins) of those left (at least one), drawn in an
// order fixed by seed, so that the same spec on the same world gives the
// same origins every time. It fails when a listed origin is not in the
// world, is listed by two rules, or the shares need more origins than
// there are.
func Assign(spec Spec, origins []string, seed uint64) (*Forecast, error) {
	f := &Forecast{spec: spec, seed: seed, byHost: map[string]Condition{}}
	known := make(map[string]bool, len(origins))
	for _, h := range origins {
		known[h] = true
	}
	for _, r := range spec.Rules {
		if r.Followers > 0 {
			return nil, fmt.Errorf("%w: %s: the crowd ranks its origins by followers (Resolve) before it assigns them", ErrSpec, r)
		}
		for _, h := range r.Origins {
			if !known[h] {
				if plainNumber(h) {
					shared := strings.Replace(r.String(), "="+h, "="+h+"%", 1)
					return nil, fmt.Errorf("%w: %s: %s is not one of the crowd's origins (a share of them needs %%: %s)", ErrSpec, r, h, shared)
				}
				return nil, fmt.Errorf("%w: %s: %s is not one of the crowd's origins", ErrSpec, r, h)
			}
			if prev, taken := f.byHost[h]; taken {
				return nil, fmt.Errorf("%w: %s: %s is already %s", ErrSpec, r, h, prev.Kind)
			}
			f.byHost[h] = r.Condition
		}
	}
	free := drawOrder(origins, f.byHost, seed)
	for _, r := range spec.Rules {
		if len(r.Origins) > 0 {
			continue
		}
		n := max(1, int(math.Round(r.Percent/100*float64(len(origins)))))
		if n > len(free) {
			return nil, fmt.Errorf("%w: %s needs %d %s, and only %d of the crowd's %d are left", ErrSpec, r, n, plural(n, "origin", "origins"), len(free), len(origins))
		}
		for _, h := range free[:n] {
			f.byHost[h] = r.Condition
		}
		free = free[n:]
	}
	return f, nil
}

// drawOrder is the origins not yet taken, in an order fixed by seed: sorted
// by a hash of the seed and the name, so that neither the world's order
// nor the rules' sizes bias which origins a share gets.
func drawOrder(origins []string, taken map[string]Condition, seed uint64) []string {
	type keyed struct {
		key  uint64
		host string
	}
	ks := make([]keyed, 0, len(origins))
	for _, h := range origins {
		if _, ok := taken[h]; ok {
			continue
		}
		x := fnv.New64a()
		fmt.Fprintf(x, "%d/%s", seed, h)
		ks = append(ks, keyed{x.Sum64(), h})
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.key, b.key), strings.Compare(a.host, b.host))
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.host
	}
	return out
}

// Spec is the spec the forecast was made from.
func (f *Forecast) Spec() Spec {
	if f == nil {
		return Spec{}
	}
	return f.spec
}

// Condition is the weather of the origin host (lower case, no port);
// Clear for an origin the forecast does not name, and for a nil forecast.
func (f *Forecast) Condition(host string) Condition {
	if f == nil || len(f.byHost) == 0 {
		return Condition{}
	}
	return f.byHost[host]
}

// Origins lists the origins in a condition other than Clear, in
// hostorder.Compare order.
func (f *Forecast) Origins() []Assigned {
	if f == nil {
		return nil
	}
	out := make([]Assigned, 0, len(f.byHost))
	for h, c := range f.byHost {
		out = append(out, Assigned{Host: h, Condition: c})
	}
	slices.SortFunc(out, func(a, b Assigned) int { return hostorder.Compare(a.Host, b.Host) })
	return out
}

// Same reports whether f and o are the same weather: the same spec, as
// written, on the same origins in the same conditions. Nil is clear.
func (f *Forecast) Same(o *Forecast) bool {
	return f.Spec().String() == o.Spec().String() && maps.Equal(f.hosts(), o.hosts())
}

// hosts is f's origins by host; nil for a nil forecast.
func (f *Forecast) hosts() map[string]Condition {
	if f == nil {
		return nil
	}
	return f.byHost
}

// Assigned is one origin and its weather.
type Assigned struct {
	Host string
	Condition
}

// plainNumber reports whether s is written as a share is, less its %:
// digits, and a decimal point among them.
func plainNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil && strings.Trim(s, "0123456789.") == "" && strings.Count(s, ".") <= 1
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
