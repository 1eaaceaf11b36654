package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// ServedWorld is the shape of a world (the settings that decide which
// actors and keys exist) that a crowd serve served from a state
// directory. A command that changes a stopped crowd's state (crowd keys
// rotate) works on that world: given other world flags, it would make the
// keys of actors nobody serves, and leave the served ones as they were.
type ServedWorld struct {
	Origins int    `json:"origins"`
	Actors  int    `json:"actors"`
	Domain  string `json:"domain"`
	Shard   string `json:"shard,omitempty"`
	KeyPool int    `json:"key_pool,omitempty"`
}

// servedFile is where a state directory records its ServedWorld.
func servedFile(stateDir string) string { return filepath.Join(stateDir, "world.json") }

// ServedOf is cfg's world shape.
func ServedOf(cfg Config) ServedWorld {
	return ServedWorld{Origins: cfg.Origins, Actors: cfg.Actors, Domain: cfg.Domain, Shard: cfg.Shard.String(), KeyPool: cfg.KeyPool}
}

// Apply is cfg with s's world shape; the rest of cfg (its state directory,
// logger, backend) is kept.
func (s ServedWorld) Apply(cfg Config) (Config, error) {
	sh, err := ParseShard(s.Shard)
	if err != nil {
		return cfg, err
	}
	cfg.Origins, cfg.Actors, cfg.Domain, cfg.Shard, cfg.KeyPool = s.Origins, s.Actors, s.Domain, sh, s.KeyPool
	return cfg, nil
}

// Flags says s as the world flags that give it, as a user would type them.
func (s ServedWorld) Flags() string {
	f := []string{fmt.Sprintf("--origins %d --actors %d --domain %s", s.Origins, s.Actors, s.Domain)}
	if s.Shard != "" {
		f = append(f, "--shard "+s.Shard)
	}
	if s.KeyPool != 0 {
		f = append(f, fmt.Sprintf("--key-pool %d", s.KeyPool))
	}
	return strings.Join(f, " ")
}

// RecordServed writes cfg's world shape into its state directory, replacing
// what was recorded before: a crowd that serves the world (crowd serve, and
// a standalone flood in its own state) calls it once the world is open.
func RecordServed(cfg Config) error {
	b, err := json.MarshalIndent(ServedOf(cfg), "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(servedFile(cfg.StateDir), append(b, '\n'), 0o644)
}

// LoadServed reads the world shape the last crowd serve recorded in
// stateDir; false when none did (a state from before the record was kept,
// or never served). A record that is not a world is an error naming its
// file, wrapping ErrConfig; a file that cannot be read, the reading's error.
func LoadServed(stateDir string) (ServedWorld, bool, error) {
	path := servedFile(stateDir)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ServedWorld{}, false, nil
	}
	if err != nil {
		return ServedWorld{}, false, err
	}
	var s ServedWorld
	if err := json.Unmarshal(b, &s); err != nil {
		return ServedWorld{}, false, fmt.Errorf("%w: %s is not the record of a served world (delete it, and give the world flags yourself): %v", ErrConfig, path, err)
	}
	cfg, err := s.Apply(DefaultConfig())
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil && !errors.Is(err, ErrConfig) {
		err = fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err != nil {
		return ServedWorld{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return s, true, nil
}
