package actors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// DefaultKeyPoolBound is the most keys a world makes by default: up to it,
// every actor has its own key; a larger world shares this many (--key-pool
// chooses otherwise). 4 096 RSA-2048 keys take about two minutes on two
// cores, once.
const DefaultKeyPoolBound = 4096

// keyPoolDir holds a pooled world's keys, 0.pem … (N-1).pem, and the file
// that fixes N.
const keyPoolDir = "pool"

// keyPoolSizeFile records the pool's size once its keys are made: the
// actor → key mapping depends on it, and a SUT that cached an actor's key
// must never see it change.
const keyPoolSizeFile = "size"

// keyPlan is how a world's actors get their keys.
type keyPlan struct {
	// pool is the number of shared keys; 0 means a key per actor, in
	// keys/HOST/NAME.pem as every world before pools.
	pool int
	// why is the one-line reason for the log.
	why string
}

// planKeys chooses between a key per actor and a pool, from cfg.KeyPool
// and what the state directory already holds (a pool made once is kept).
func planKeys(cfg Config) (keyPlan, error) {
	total := cfg.Origins * (cfg.Actors + 1)
	sizePath := filepath.Join(cfg.StateDir, "keys", keyPoolDir, keyPoolSizeFile)
	kept := 0
	if data, err := os.ReadFile(sizePath); err == nil {
		n, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || n < 1 {
			return keyPlan{}, fmt.Errorf("%w: %s does not hold a key count (it records the --key-pool the keys were made with)", ErrKeyFile, sizePath)
		}
		kept = n
	} else if !errors.Is(err, os.ErrNotExist) {
		return keyPlan{}, fmt.Errorf("%w: %v", ErrKeyFile, err)
	}
	switch {
	case kept > 0 && cfg.KeyPool != 0 && cfg.KeyPool != kept:
		return keyPlan{}, fmt.Errorf("%w: --key-pool %d, but --state %s holds a pool of %d keys that a SUT may have cached: pass --key-pool %d (or 0), or a fresh --state",
			ErrConfig, cfg.KeyPool, cfg.StateDir, kept, kept)
	case kept > 0:
		return keyPlan{pool: kept, why: fmt.Sprintf("the pool of %d keys kept in --state", kept)}, nil
	case cfg.KeyPool == 0 && total <= DefaultKeyPoolBound:
		return keyPlan{why: fmt.Sprintf("a key per actor (%d ≤ %d, the default bound)", total, DefaultKeyPoolBound)}, nil
	case cfg.KeyPool == 0:
		return keyPlan{pool: DefaultKeyPoolBound, why: fmt.Sprintf("%d actors share a pool of %d keys (the default bound; --key-pool chooses)", total, DefaultKeyPoolBound)}, nil
	case cfg.KeyPool >= total:
		return keyPlan{why: fmt.Sprintf("a key per actor (--key-pool %d ≥ %d actors)", cfg.KeyPool, total)}, nil
	default:
		return keyPlan{pool: cfg.KeyPool, why: fmt.Sprintf("%d actors share a pool of %d keys (--key-pool)", total, cfg.KeyPool)}, nil
	}
}

// keyRing is the keys of a world: either one entry per actor or a pool,
// and which entry each actor signs with.
type keyRing struct {
	plan    keyPlan
	actors  int         // Persons per origin; an origin has actors+1 keys slots
	entries []*keyEntry // by slot (a key per actor) or by pool index
}

// slot is the 0-based number of the actor (origin index, actor index j;
// j == actors for the instance actor) among every actor of the unsharded
// world: shards share the mapping.
func (k *keyRing) slot(origin, j int) int { return (origin-1)*(k.actors+1) + j }

// entry is the key actor j of origin signs with.
func (k *keyRing) entry(origin, j int) *keyEntry {
	s := k.slot(origin, j)
	if k.plan.pool > 0 {
		return k.entries[s%k.plan.pool]
	}
	return k.entries[s]
}

// openKeys plans the keys of w's world, makes the missing ones (unless
// borrowing) and returns the ring; no key is parsed here.
func openKeys(w *World, log *zap.Logger) (*keyRing, error) {
	cfg := w.Config
	plan, err := planKeys(cfg)
	if err != nil {
		return nil, err
	}
	log.Info("actor keys", zap.String("choice", plan.why), zap.Int("actors", cfg.Origins*(cfg.Actors+1)))
	if plan.pool > 0 && len(w.Origins) > 0 && !cfg.BorrowKeys {
		if st, err := os.Stat(filepath.Join(cfg.StateDir, "keys", w.Origins[0].Host)); err == nil && st.IsDir() {
			if _, err := os.Stat(filepath.Join(cfg.StateDir, "keys", keyPoolDir, keyPoolSizeFile)); errors.Is(err, os.ErrNotExist) {
				log.Warn("this --state holds a key per actor of an earlier, smaller world; the actors now sign with a new pool of keys: a SUT that cached their old keys must forget them (or pass --key-pool with at least one key per actor)",
					zap.String("state", cfg.StateDir))
			}
		}
	}
	ring := &keyRing{plan: plan, actors: cfg.Actors}
	var used []*keyEntry
	if plan.pool > 0 {
		dir := filepath.Join(cfg.StateDir, "keys", keyPoolDir)
		ring.entries = make([]*keyEntry, plan.pool)
		for i := range ring.entries {
			ring.entries[i] = &keyEntry{path: filepath.Join(dir, strconv.Itoa(i)+".pem"), log: log, backend: cfg.Backend}
		}
		used = ring.entries
	} else {
		ring.entries = make([]*keyEntry, cfg.Origins*(cfg.Actors+1))
		for _, o := range w.Origins {
			for j := 0; j <= cfg.Actors; j++ {
				name := o.Host
				if j < cfg.Actors {
					name = ActorName(j)
				}
				e := &keyEntry{path: keyPath(cfg.StateDir, o.Host, name), log: log, backend: cfg.Backend}
				ring.entries[ring.slot(o.Index, j)] = e
				used = append(used, e)
			}
		}
	}
	if err := ensureKeys(cfg.StateDir, used, !cfg.BorrowKeys, log); err != nil {
		return nil, err
	}
	if plan.pool > 0 && !cfg.BorrowKeys {
		sizePath := filepath.Join(cfg.StateDir, "keys", keyPoolDir, keyPoolSizeFile)
		if _, err := os.Stat(sizePath); errors.Is(err, os.ErrNotExist) {
			if err := atomicfile.Write(sizePath, []byte(strconv.Itoa(plan.pool)+"\n"), 0o600); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrKeyFile, err)
			}
		}
	}
	return ring, nil
}
