package actors

import (
	"context"
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
	// kept says the pool's keys were all made before (its size file is
	// there): a pool key missing now was lost, not yet to be made.
	kept bool
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
		return keyPlan{pool: kept, kept: true, why: fmt.Sprintf("the pool of %d keys kept in --state", kept)}, nil
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
// borrowing) and returns the ring; no key is parsed here. A key the state
// held before and lost is refused, never made again (lostKeys); making
// keys stops when ctx is done (generateKeys).
func openKeys(ctx context.Context, w *World, log *zap.Logger) (*keyRing, error) {
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
	var accts []string // the actor of each of used's keys, name@host; nil for a pool
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
				accts = append(accts, name+"@"+o.Host)
			}
		}
	}
	missing, err := missingKeys(cfg.StateDir, used, cfg.BorrowKeys)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		fresh, why, err := lostKeys(w, plan, used, accts, missing, log)
		if err != nil {
			return nil, err
		}
		if len(fresh) > 0 {
			if err := generateKeys(ctx, cfg.StateDir, fresh, why, log); err != nil {
				return nil, err
			}
		}
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

// lostKeys tells the missing keys of a world (used[i] for i in missing)
// that are new to its state apart from the ones the state held and lost,
// and returns the new ones, to make, with why they are made (for the
// log). A lost key is an error wrapping ErrKeyFile that names its file and
// the ways out, since a SUT that cached a key must never see it change;
// with cfg.AllowLostKeys it is left unmade (its actors cannot sign) and
// logged. The state held a key when its keys/ directory is there and
// either the key is a pool's whose size file is written (a pool's keys are
// all made before it is), or it is the key of an actor of the world last
// served from the state (world.json): a world grown since, an interrupted
// first start, or a state whose keys/ was removed makes its keys anew.
func lostKeys(w *World, plan keyPlan, used []*keyEntry, accts []string, missing []int, log *zap.Logger) ([]*keyEntry, string, error) {
	cfg := w.Config
	all := func() []*keyEntry {
		out := make([]*keyEntry, len(missing))
		for k, i := range missing {
			out[k] = used[i]
		}
		return out
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "keys")); errors.Is(err, os.ErrNotExist) {
		return all(), "only on a first start, they are kept in --state", nil
	}
	var held func(i int) bool
	switch {
	case plan.pool > 0 && plan.kept:
		held = func(int) bool { return true }
	case plan.pool > 0:
		return all(), "the pool is new to this --state (or its making was interrupted): they are kept there", nil
	default:
		served, ok, err := LoadServed(cfg.StateDir)
		if err != nil {
			return nil, "", fmt.Errorf("%w (it tells a lost key from a new one, and %d keys are missing)", err, len(missing))
		}
		if !ok {
			return all(), "this --state lacks them and records no world served from it (an interrupted first start, or a state an older crowd served): they are kept there", nil
		}
		sc, err := served.Apply(cfg)
		if err != nil {
			return nil, "", err // LoadServed validated it
		}
		held = func(i int) bool {
			origin, j := i/(cfg.Actors+1), i%(cfg.Actors+1)
			o := w.Origins[origin]
			return o.Index <= sc.Origins && sc.Shard.Has(o.Index) && sc.hostOf(o.Index) == o.Host && (j == cfg.Actors || j < sc.Actors)
		}
	}
	var fresh []*keyEntry
	var lost []int
	for _, i := range missing {
		if held(i) {
			lost = append(lost, i)
		} else {
			fresh = append(fresh, used[i])
		}
	}
	why := "of actors new to this --state (a larger world than it served): they are kept there"
	if len(lost) == 0 {
		return fresh, why, nil
	}
	first := used[lost[0]].path
	more := ""
	if len(lost) > 1 {
		more = fmt.Sprintf(" and %d more", len(lost)-1)
	}
	if cfg.AllowLostKeys {
		log.Warn("keys this --state held are missing: their actors cannot sign until a rotation gives them new keys",
			zap.String("file", first), zap.Int("lost", len(lost)))
		return fresh, why, nil
	}
	keys := filepath.Join(cfg.StateDir, "keys")
	if plan.pool > 0 {
		return nil, "", fmt.Errorf("%w: the pool key %s%s is missing from --state %s, which made it: a new one would change the key of every actor sharing it, under its cached key id, and break the SUTs that cached it. "+
			"Restore the file from a backup, or remove %s to start over with new keys for every actor (then every SUT must forget the crowd's cached keys)",
			ErrKeyFile, first, more, cfg.StateDir, keys)
	}
	rotate := fmt.Sprintf("or give it a new key the SUTs are told of (an Update), with crowd keys rotate --state %s --actor %s; ", cfg.StateDir, accts[lost[0]])
	if lost[0]%(cfg.Actors+1) == cfg.Actors {
		rotate = "" // an instance actor: crowd keys rotate gives persons new keys only
	}
	return nil, "", fmt.Errorf("%w: the key of %s, %s%s, is missing from --state %s, which served it: a new one would change its key under its cached key id and break the SUTs that cached it. "+
		"Restore the file from a backup; %s"+
		"or remove %s to start over with new keys for every actor (then every SUT must forget the crowd's cached keys)",
		ErrKeyFile, accts[lost[0]], first, more, cfg.StateDir, rotate, keys)
}
