// Package actors is the crowd's world: origins, their actors and keys, the
// follow graph, and the documents that describe them. It knows nothing of
// HTTP servers; handlers elsewhere render what it returns.
package actors

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crowdfed/crowd/signing"
	"go.uber.org/zap"
)

// ErrConfig marks a world configuration that cannot be served.
var ErrConfig = errors.New("invalid world configuration")

// Config says which world to build. The zero value is not usable; start
// from DefaultConfig.
type Config struct {
	// Origins is how many fake servers the crowd impersonates.
	Origins int
	// Actors is how many Person actors each origin has (besides its
	// instance actor).
	Actors int
	// Domain is the host-name pattern, with one %d for the 1-based origin
	// number, e.g. "flood%d.test".
	Domain string
	// StateDir holds keys, the follow graph and everything else that must
	// survive a restart.
	StateDir string
	// Shard serves a slice of the origins (scale-out); the zero value
	// serves them all.
	Shard Shard
	// EphemeralGraph keeps the follow graph and the outboxes in memory
	// only. A process that borrows the keys of a running crowd (a flood
	// attached to `crowd serve`) sets it, so that only the serving crowd
	// writes their journals.
	EphemeralGraph bool
	// OutboxKeep is how many of its latest notes each actor's outbox
	// lists; 0 is DefaultOutboxKeep.
	OutboxKeep int
	// BorrowKeys reads the keys of StateDir and never writes it: a key
	// missing there is an error, not a key to make. A process that borrows
	// a running crowd's keys sets it with EphemeralGraph.
	BorrowKeys bool
	// AllowLostKeys opens a world whose state lost keys it held (a key
	// file of an actor it served, or of its kept pool, removed): their
	// actors are left without a key, and cannot sign, instead of Open
	// refusing. Never are they given new keys here, since a SUT that
	// cached a key must not find it changed: crowd keys rotate sets it,
	// to give chosen actors new keys that the SUTs are told of.
	AllowLostKeys bool
	// Logger receives what opening the world has to say: key-making
	// progress on a first start, a torn journal line dropped. Nil is
	// silent.
	Logger *zap.Logger
	// Backend signs with the actors' keys (Actor.Signer); nil is the Go
	// backend.
	Backend signing.Backend
	// KeyPool is how many keys the actors share (--key-pool): 0 chooses a
	// key per actor up to DefaultKeyPoolBound actors, a pool of that many
	// beyond; N ≥ the number of actors is a key per actor. A pool, once
	// made, is kept in StateDir: another N is an error.
	KeyPool int
}

// DefaultConfig is the embedded default world: 20 origins of 10 actors each
// under flood%d.test, state in ./crowd-state.
func DefaultConfig() Config {
	return Config{Origins: 20, Actors: 10, Domain: "flood%d.test", StateDir: "crowd-state"}
}

// Shard selects origins i, i+n, i+2n, … (0-based i) out of n shards. The
// zero value (N == 0) selects every origin.
type Shard struct {
	I, N int
}

// ParseShard reads "i/n" (0 ≤ i < n). The empty string is the zero Shard.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	var sh Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &sh.I, &sh.N); err != nil || fmt.Sprintf("%d/%d", sh.I, sh.N) != s {
		return Shard{}, fmt.Errorf("%w: shard %q is not of the form i/n", ErrConfig, s)
	}
	if sh.N < 1 || sh.I < 0 || sh.I >= sh.N {
		return Shard{}, fmt.Errorf("%w: shard %q needs 0 <= i < n", ErrConfig, s)
	}
	return sh, nil
}

// String renders the shard as "i/n", or "" for all origins.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Has reports whether the 1-based origin index belongs to this shard.
func (s Shard) Has(origin int) bool {
	return s.N == 0 || (origin-1)%s.N == s.I
}

// Validate reports the first problem with the configuration, naming the
// setting (as the CLI flag) so a user can fix it.
func (c Config) Validate() error {
	switch {
	case c.Origins < 1 || c.Origins > 10000:
		return fmt.Errorf("%w: --origins must be between 1 and 10000, got %d", ErrConfig, c.Origins)
	case c.Actors < 1 || c.Actors > 100000:
		return fmt.Errorf("%w: --actors must be between 1 and 100000, got %d", ErrConfig, c.Actors)
	case strings.Count(c.Domain, "%d") != 1 || strings.Count(c.Domain, "%") != 1:
		return fmt.Errorf("%w: --domain must contain exactly one %%d, got %q", ErrConfig, c.Domain)
	case c.KeyPool < 0:
		return fmt.Errorf("%w: --key-pool must be 0 (the default choice) or a number of keys, got %d", ErrConfig, c.KeyPool)
	case c.StateDir == "":
		return fmt.Errorf("%w: --state must name a directory", ErrConfig)
	}
	if err := validHostname(fmt.Sprintf(c.Domain, c.Origins)); err != nil {
		return fmt.Errorf("%w: --domain %q: %v", ErrConfig, c.Domain, err)
	}
	if c.Shard.N != 0 && (c.Shard.I < 0 || c.Shard.I >= c.Shard.N) {
		return fmt.Errorf("%w: --shard %s needs 0 <= i < n", ErrConfig, c.Shard)
	}
	// Shard i holds origin i+1 first (Has): past the last origin it holds
	// none, and a world of no origin fails far from the flag (in the inbox,
	// after the keys) or floods from nothing. A shard that holds one, of a
	// fleet with more shards than origins, is refused too (as the Helm chart
	// does): its siblings past the last origin are the same mistake.
	switch {
	case c.Shard.N == 0 || c.Shard.N <= c.Origins:
	case c.Shard.I >= c.Origins:
		return fmt.Errorf("%w: --shard %s: shard %d of %d holds no origin of the %d (--origins): at most %d shards",
			ErrConfig, c.Shard, c.Shard.I, c.Shard.N, c.Origins, c.Origins)
	default:
		return fmt.Errorf("%w: --shard %s: %d shards of the %d origins (--origins) leave shards %d to %d with no origin: at most %d shards",
			ErrConfig, c.Shard, c.Shard.N, c.Origins, c.Origins, c.Shard.N-1, c.Origins)
	}
	return nil
}

// Zone is the DNS zone the origins live in: what follows the label that
// holds %d ("flood%d.test" → "test.", "a.flood%d.example.org" →
// "example.org.").
func (c Config) Zone() string {
	labels := strings.Split(strings.ToLower(strings.TrimSuffix(c.Domain, ".")), ".")
	for i, l := range labels {
		if strings.Contains(l, "%d") {
			return strings.Join(labels[i+1:], ".") + "."
		}
	}
	return strings.Join(labels[1:], ".") + "."
}

func validHostname(h string) error {
	if len(h) > 253 {
		return errors.New("host name longer than 253 characters")
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return errors.New("host name needs at least two labels (e.g. flood%d.test)")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("label %q is empty or longer than 63 characters", l)
		}
		for i, r := range l {
			ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' && i > 0 && i < len(l)-1
			if !ok {
				return fmt.Errorf("label %q has a character not allowed in a host name", l)
			}
		}
	}
	return nil
}

// Hosts are the host names of the origins c serves (its shard's), lower
// case, in order: known before any key is made, so a flag naming origins
// can be checked before a first start spends minutes on keys.
func (c Config) Hosts() []string {
	var out []string
	for i := 1; i <= c.Origins; i++ {
		if c.Shard.Has(i) {
			out = append(out, c.hostOf(i))
		}
	}
	return out
}

// OriginNumber reports whether host has the form of the pattern Domain
// (flood7.test for flood%d.test), and which number it carries: whether or
// not that origin is one of the world's (1 … Origins).
func (c Config) OriginNumber(host string) (int, bool) {
	prefix, suffix, ok := strings.Cut(strings.ToLower(c.Domain), "%d")
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !ok || !strings.HasPrefix(host, prefix) || !strings.HasSuffix(host, suffix) || len(host) <= len(prefix)+len(suffix) {
		return 0, false
	}
	n, err := strconv.Atoi(host[len(prefix) : len(host)-len(suffix)])
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// hostOf is the host name of origin i (from 1).
func (c Config) hostOf(i int) string { return strings.ToLower(fmt.Sprintf(c.Domain, i)) }
