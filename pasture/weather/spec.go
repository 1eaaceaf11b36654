// Package weather is the bad weather the crowd's origins can be put in: an
// origin that is down, a black hole, slow, flaky, rate limited, gone, a
// lapsed domain or a broken certificate, as real failing servers are on
// the wire. A Spec names the conditions and the origins (a share of the
// world, or a list); Assign turns it into a Forecast (origin → condition);
// a Sky holds the forecast in force and is swapped at run time.
package weather

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrSpec marks a weather spec that cannot be read; the message names the
// rule and what is wrong with it.
var ErrSpec = errors.New("bad weather spec")

// Kind is one way a real server fails.
type Kind uint8

// The conditions, each what a real failing server does on the wire.
const (
	// Clear is a healthy origin: the crowd answers as it always does.
	Clear Kind = iota
	// Down refuses the TCP connection (a reset) for the origin's address
	// or SNI name: the host is up, the server is not.
	Down
	// Blackhole accepts the connection and never answers: a dead address
	// behind a firewall that drops, or a wedged server; the SUT's own
	// timeout decides.
	Blackhole
	// Slow answers inbox deliveries after Delay, and document fetches too
	// at the share DocShare: an overloaded server.
	Slow
	// Flaky answers 502, 503 or 504 with probability P, as a proxy in
	// front of a sick server does; the rest are answered as usual.
	Flaky
	// Limited answers 429 with Retry-After: Delay, and X-RateLimit-*
	// fields as Mastodon sends them.
	Limited
	// Gone answers 410 for every actor, document and inbox: an instance
	// shut down whose DNS still resolves.
	Gone
	// NXDomain has the crowd's DNS answer NXDOMAIN for the origin: a
	// lapsed domain.
	NXDomain
	// TLSExpired serves a certificate from the crowd's CA that has expired.
	TLSExpired
	// TLSWrongName serves a certificate from the crowd's CA for another
	// name than the origin's.
	TLSWrongName
)

// lastKind is the last condition of the constants, for Kinds.
const lastKind = TLSWrongName

// String is the kind's name in a spec ("tls-expired").
func (k Kind) String() string {
	switch k {
	case Clear:
		return "clear"
	case Down:
		return "down"
	case Blackhole:
		return "blackhole"
	case Slow:
		return "slow"
	case Flaky:
		return "flaky"
	case Limited:
		return "limited"
	case Gone:
		return "gone"
	case NXDomain:
		return "nxdomain"
	case TLSExpired:
		return "tls-expired"
	case TLSWrongName:
		return "tls-wrong-name"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Kinds lists every condition but Clear, in the order of the constants.
func Kinds() []Kind {
	out := make([]Kind, 0, lastKind)
	for k := Down; k <= lastKind; k++ {
		out = append(out, k)
	}
	return out
}

// ParseKind reads a condition's name as specs write it.
func ParseKind(s string) (Kind, bool) {
	for k := Clear; k <= lastKind; k++ {
		if k.String() == s {
			return k, true
		}
	}
	return Clear, false
}

// The parameters a condition takes when its rule leaves them out.
const (
	DefaultSlowDelay    = 30 * time.Second
	DefaultSlowDocShare = 0.5
	DefaultFlakyP       = 0.5
	DefaultRetryAfter   = 60 * time.Second
)

// Condition is one origin's weather: its kind and that kind's parameters
// (zero for the kinds that take none).
type Condition struct {
	Kind Kind
	// Delay is how long a Slow origin waits before answering, and the
	// Retry-After a Limited one sends.
	Delay time.Duration
	// P is the share of a Flaky origin's requests answered 5xx.
	P float64
	// DocShare is the share of a Slow origin's document fetches (actors,
	// keys, notes) that wait too; deliveries always wait.
	DocShare float64
}

// String writes the condition as a spec's rule does, after the target:
// "slow:30s:0.5", "flaky:0.25", "limited:1m0s", "down".
func (c Condition) String() string {
	switch c.Kind {
	case Slow:
		return c.Kind.String() + ":" + c.Delay.String() + ":" + formatFloat(c.DocShare)
	case Flaky:
		return c.Kind.String() + ":" + formatFloat(c.P)
	case Limited:
		return c.Kind.String() + ":" + c.Delay.String()
	}
	return c.Kind.String()
}

// Rule gives some origins a condition: either a share of the world's
// origins (drawn by Assign) or the listed ones.
type Rule struct {
	Condition
	// Percent is the share of the world's origins the rule takes, in
	// (0, 100]; zero when Origins lists them.
	Percent float64
	// Origins are the origins' host names, lower case, when listed.
	Origins []string
	// Followers, when > 0, takes the Followers origins most of the SUT's
	// followers live on (FollowersTarget): a selector Resolve turns into
	// Origins before Assign.
	Followers int
}

// String writes the rule as a spec does: "slow=5%:30s:0.5",
// "down=flood3.test+flood4.test".
func (r Rule) String() string {
	target := strings.Join(r.Origins, "+")
	switch {
	case r.Followers > 0:
		target = FollowersTarget + ":" + strconv.Itoa(r.Followers)
	case len(r.Origins) == 0:
		target = formatFloat(r.Percent) + "%"
	}
	s := r.Kind.String() + "=" + target
	if _, params, ok := strings.Cut(r.Condition.String(), ":"); ok {
		s += ":" + params
	}
	return s
}

// Spec is a weather: rules applied in order, each to origins no earlier
// rule took. The zero Spec is clear weather.
type Spec struct {
	Rules []Rule
}

// String writes the spec back in the form ParseSpec reads ("" for clear).
func (s Spec) String() string {
	parts := make([]string, len(s.Rules))
	for i, r := range s.Rules {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// IsClear reports whether the spec puts no origin in any condition.
func (s Spec) IsClear() bool { return len(s.Rules) == 0 }

// ParseSpec reads a weather spec: rules separated by commas, each
// KIND=TARGET[:PARAM[:PARAM]], where TARGET is a share of the world's
// origins ("5%") or origins joined by "+" ("flood3.test+flood4.test"), and
// the parameters are slow's delay and document share, flaky's probability
// or limited's Retry-After. "" and "clear" are clear weather.
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "clear" {
		return Spec{}, nil
	}
	var spec Spec
	for part := range strings.SplitSeq(s, ",") {
		if f := strings.Fields(part); len(f) > 1 && strings.Contains(f[1], "=") {
			// Two rules a space apart: the second read as the first's
			// parameter would say something beside the point.
			return Spec{}, fmt.Errorf("%w: %q: rules are joined by commas, not spaces: %s", ErrSpec, strings.TrimSpace(part), strings.Join(f, ","))
		}
		r, err := parseRule(strings.TrimSpace(part))
		if err != nil {
			return Spec{}, err
		}
		spec.Rules = append(spec.Rules, r)
	}
	return spec, nil
}

// parseRule reads one KIND=TARGET[:PARAM...] rule.
func parseRule(s string) (Rule, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok {
		return Rule{}, fmt.Errorf("%w: %q is not KIND=TARGET (e.g. down=5%% or slow=flood2.test:30s)", ErrSpec, s)
	}
	kind, ok := ParseKind(strings.TrimSpace(name))
	if !ok || kind == Clear {
		return Rule{}, fmt.Errorf("%w: %q: unknown condition %q (one of %s)", ErrSpec, s, name, kindList())
	}
	fields := strings.Split(rest, ":")
	r := Rule{Condition: Condition{Kind: kind}}
	if err := r.parseTarget(strings.TrimSpace(fields[0])); err != nil {
		return Rule{}, fmt.Errorf("%w: %q: %v", ErrSpec, s, err)
	}
	params, err := r.parseRank(fields[1:])
	if err != nil {
		return Rule{}, fmt.Errorf("%w: %q: %v", ErrSpec, s, err)
	}
	if err := r.parseParams(params); err != nil {
		return Rule{}, fmt.Errorf("%w: %q: %v", ErrSpec, s, err)
	}
	return r, nil
}

// parseTarget reads a share ("5%", "0.5%") or a list of host names.
func (r *Rule) parseTarget(t string) error {
	if t == "" {
		return errors.New("no target: give a share (5%) or origins (flood3.test+flood4.test)")
	}
	if strings.HasPrefix(t, "@") {
		return r.parseSelector(t)
	}
	if pct, ok := strings.CutSuffix(t, "%"); ok {
		v, err := strconv.ParseFloat(pct, 64)
		if err != nil || math.IsNaN(v) || v <= 0 || v > 100 {
			return fmt.Errorf("share %q is not a percentage in (0, 100]", t)
		}
		r.Percent = v
		return nil
	}
	seen := map[string]bool{}
	for h := range strings.SplitSeq(t, "+") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" || strings.ContainsAny(h, " /@%") {
			return fmt.Errorf("%q is not an origin's host name", h)
		}
		if seen[h] {
			return fmt.Errorf("origin %s is listed twice", h)
		}
		seen[h] = true
		r.Origins = append(r.Origins, h)
	}
	return nil
}

// parseParams reads the condition's parameters, filling in its defaults;
// an empty one keeps its default (slow=5%::0.2 sets only the share).
func (r *Rule) parseParams(ps []string) error {
	c := &r.Condition
	given := func(i int) bool { return len(ps) > i && strings.TrimSpace(ps[i]) != "" }
	switch c.Kind {
	case Slow:
		c.Delay, c.DocShare = DefaultSlowDelay, DefaultSlowDocShare
		if len(ps) > 2 {
			return errors.New("slow takes a delay and a document share at most (slow=5%:30s:0.5)")
		}
		if given(0) {
			d, err := parseDelay(ps[0], "delay")
			if err != nil {
				return err
			}
			c.Delay = d
		}
		if given(1) {
			// 0: the deliveries wait, no document does.
			v, err := strconv.ParseFloat(strings.TrimSpace(ps[1]), 64)
			if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
				return fmt.Errorf("document share %q is not a number in [0, 1]", ps[1])
			}
			c.DocShare = v
		}
	case Flaky:
		c.P = DefaultFlakyP
		if len(ps) > 1 {
			return errors.New("flaky takes one probability at most (flaky=5%:0.5)")
		}
		if given(0) {
			v, err := parseProbability(ps[0], "probability")
			if err != nil {
				return err
			}
			c.P = v
		}
	case Limited:
		c.Delay = DefaultRetryAfter
		if len(ps) > 1 {
			return errors.New("limited takes one Retry-After at most (limited=2%:60s)")
		}
		if given(0) {
			d, err := parseRetryAfter(ps[0])
			if err != nil {
				return err
			}
			if d < time.Second || d%time.Second != 0 {
				return fmt.Errorf("Retry-After %s is not a whole number of seconds of at least 1s", d)
			}
			c.Delay = d
		}
	default:
		if len(ps) > 0 {
			return fmt.Errorf("%s takes no parameter", c.Kind)
		}
	}
	return nil
}

// maxDelay bounds a delay so that a typo cannot hold connections for days.
const maxDelay = time.Hour

// parseDelay reads a Go duration in (0, 1h]; what names it in the error
// ("delay", "Retry-After").
func parseDelay(s, what string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d <= 0 || d > maxDelay {
		return 0, fmt.Errorf("%s %q is not a duration in (0, %s] (e.g. 30s)", what, s, maxDelay)
	}
	return d, nil
}

// parseRetryAfter reads limited's Retry-After: a duration (60s), or whole
// seconds alone (60), as the header itself says it.
func parseRetryAfter(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		if n < 1 || n > int(maxDelay/time.Second) { // compared in seconds: a huge n would overflow as a Duration
			return 0, fmt.Errorf("Retry-After %q is not a number of seconds in [1, %d]", s, int(maxDelay/time.Second))
		}
		return time.Duration(n) * time.Second, nil
	}
	return parseDelay(s, "Retry-After")
}

// parseProbability reads a number in (0, 1].
func parseProbability(s, what string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || v <= 0 || v > 1 {
		return 0, fmt.Errorf("%s %q is not a number in (0, 1]", what, s)
	}
	return v, nil
}

// kindList names every condition for an error message.
func kindList() string {
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}

// formatFloat writes v in its shortest exact form ("0.5", "2.5").
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
