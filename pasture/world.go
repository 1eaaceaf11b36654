package pasture

import (
	"fmt"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/signing"
)

// WorldConfig is the world's shape as a command line gives it (--origins,
// --actors, --domain, --state, --shard, --key-pool), read into an actors.Config by
// ActorsConfig: the CLI names a world without reaching into actors.
type WorldConfig struct {
	Origins, Actors int
	Domain          string // host-name pattern with one %d
	StateDir        string
	Shard           string // "i/n", or "" for every origin
	// Backend signs with the world's keys (--crypto); nil is the Go backend.
	Backend signing.Backend
	// KeyPool is --key-pool: how many keys the actors share (0: a key per
	// actor up to actors.DefaultKeyPoolBound, a pool of that many beyond).
	KeyPool int
}

// DefaultWorld is `crowd serve`'s world with no flags.
func DefaultWorld() WorldConfig {
	d := actors.DefaultConfig()
	return WorldConfig{Origins: d.Origins, Actors: d.Actors, Domain: d.Domain, StateDir: d.StateDir}
}

// ActorsConfig checks w and returns the world's configuration; the error names
// the flag at fault.
func (w WorldConfig) ActorsConfig() (actors.Config, error) {
	sh, err := actors.ParseShard(w.Shard)
	if err != nil {
		return actors.Config{}, fmt.Errorf("--shard: %w", err)
	}
	cfg := actors.Config{Origins: w.Origins, Actors: w.Actors, Domain: w.Domain, StateDir: w.StateDir, Shard: sh,
		Backend: w.Backend, KeyPool: w.KeyPool}
	if err := cfg.Validate(); err != nil {
		return actors.Config{}, err
	}
	return cfg, nil
}

// ErrConfig marks a world that cannot be built as configured: a mistake
// in a flag, which the error names (it is actors.ErrConfig).
var ErrConfig = actors.ErrConfig

// SigningBackend is the signing backend --crypto names: "auto" (libcrypto
// when this build has cgo, else Go), "go" or "libcrypto". The error names
// what this build offers.
func SigningBackend(name string) (signing.Backend, error) { return signing.NewBackend(name) }

// DefaultKeyPoolBound is the number of actors up to which each has its own
// key by default (--key-pool 0); a larger world shares this many keys.
const DefaultKeyPoolBound = actors.DefaultKeyPoolBound
