package flood

import "strings"

// Arrivals is the arrival process of a flood's sends (--arrivals): when
// each send is due. Parse it once with ParseArrivals; NewPacer and
// traffic.PresignCount take the parsed value.
type Arrivals string

const (
	// ArrivalsConstant sends at start + n/rate: an absolute schedule.
	ArrivalsConstant Arrivals = "constant"
	// ArrivalsPoisson draws exponential gaps of mean 1/rate (seeded).
	ArrivalsPoisson Arrivals = "poisson"
)

// ParseArrivals reads --arrivals: constant (also "") or poisson, in any
// case. Errors are *record.UsageError naming the flag.
func ParseArrivals(s string) (Arrivals, error) {
	switch a := Arrivals(strings.ToLower(strings.TrimSpace(s))); a {
	case "", ArrivalsConstant:
		return ArrivalsConstant, nil
	case ArrivalsPoisson:
		return a, nil
	}
	return "", usage(s, "--arrivals: want constant or poisson")
}
