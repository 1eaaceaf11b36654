package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/atomicfile"
	"github.com/crowdfed/crowd/internal/journal"
)

// The kinds of reaction, named as the activities that make them.
const (
	ReactionLike     = "Like"
	ReactionAnnounce = "Announce"
)

// ErrReaction marks a reaction the crowd cannot take: one that names no
// crowd actor, object or kind, one past MaxReactions, or one not made
// durable.
var ErrReaction = errors.New("reaction")

// ReactionsFile is the name of the reactions' journal in the state
// directory.
const ReactionsFile = "reactions.jsonl"

// MaxReactions bounds how many reactions the crowd keeps (about 300 bytes
// each in memory): past it, a new one is refused rather than grow without
// bound.
const MaxReactions = 1 << 20

// Reaction is a crowd actor's Like or Announce (boost) of an object, kept
// until its Undo: a real account reacts so to a post once. Its JSON is a
// line of the journal and an item of the admin API's POST /api/reactions.
type Reaction struct {
	// Actor is the crowd actor's id.
	Actor string `json:"actor"`
	// Object is the liked or boosted object's id.
	Object string `json:"object"`
	// Kind is ReactionLike or ReactionAnnounce.
	Kind string `json:"kind"`
	// ID is the Like's or Announce's id: an Undo frees the pair only when
	// it names the reaction kept.
	ID string `json:"id"`
	// Undone marks the reaction's Undo: the pair is free again.
	Undone bool `json:"undone,omitempty"`
}

// reactionKey is the pair a real server keeps once: who, what, how.
type reactionKey struct{ actor, object, kind string }

// Reactions keeps the crowd actors' Likes and Announces of objects, and
// journals them in the state directory, so a later run does not send a
// reaction the SUT already has. Each Record is written and fsynced before
// it returns (the flood records in batches, so this costs an fsync a
// batch), as the follow graph does: a kill -9 loses no reaction recorded.
// Safe for concurrent use.
type Reactions struct {
	mu   sync.RWMutex
	kept map[reactionKey]string // → the reaction's activity id
	file *os.File               // nil for memory-only reactions
}

// NewMemoryReactions keeps reactions in memory only (a process that does
// not own the state directory).
func NewMemoryReactions() *Reactions { return &Reactions{kept: map[reactionKey]string{}} }

// OpenReactions replays the reactions' journal in stateDir (creating it if
// absent) by the journal's rules: a torn last line is dropped and logged,
// any other damaged line stops the opening naming file:line.
func OpenReactions(stateDir string, log *zap.Logger) (*Reactions, error) {
	r := NewMemoryReactions()
	path := filepath.Join(stateDir, ReactionsFile)
	lines := 0
	torn, err := journal.Replay(path, func(_ int, line []byte) error {
		lines++
		var x Reaction
		if err := json.Unmarshal(line, &x); err != nil {
			return fmt.Errorf("not a reaction: %v", err)
		}
		if err := checkReaction(x); err != nil {
			return err
		}
		r.apply(x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReaction, err)
	}
	if torn != nil && log != nil {
		log.Warn("reactions: dropped the torn last line a crash left", zap.String("file", torn.Path),
			zap.Int("line", torn.Line), zap.Int64("bytes", torn.Bytes))
	}
	// Undos add lines that keep nothing: past twice what is kept, the
	// journal is rewritten as one line per reaction, which bounds it.
	if lines > 2*len(r.kept)+1024 {
		if err := atomicfile.Write(path, r.snapshot(), 0o600); err != nil {
			return nil, fmt.Errorf("%w: compact %s: %v", ErrReaction, path, err)
		}
	}
	if r.file, err = os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrReaction, err)
	}
	return r, nil
}

// checkReaction: x names an actor, an object, a kind and its activity.
func checkReaction(x Reaction) error {
	switch {
	case x.Actor == "" || x.Object == "" || x.ID == "":
		return fmt.Errorf("%w: a reaction names its actor, object and id (got %+v)", ErrReaction, x)
	case x.Kind != ReactionLike && x.Kind != ReactionAnnounce:
		return fmt.Errorf("%w: kind %q: want %s or %s", ErrReaction, x.Kind, ReactionLike, ReactionAnnounce)
	}
	return nil
}

// apply keeps x, or frees its pair when x undoes the reaction kept (an
// Undo of another, older reaction of the pair leaves the kept one).
func (r *Reactions) apply(x Reaction) {
	k := reactionKey{x.Actor, x.Object, x.Kind}
	if !x.Undone {
		r.kept[k] = x.ID
		return
	}
	if r.kept[k] == x.ID {
		delete(r.kept, k)
	}
}

// snapshot is every kept reaction as journal lines.
func (r *Reactions) snapshot() []byte { return reactionLines(r.listLocked()) }

// reactionLines is xs as journal lines, one JSON object each.
func reactionLines(xs []Reaction) []byte {
	var b []byte
	for _, x := range xs {
		line, _ := json.Marshal(x) // cannot fail: strings and a bool
		b = append(append(b, line...), '\n')
	}
	return b
}

// Record journals and applies xs in order, all or none: each must name
// an actor, an object, a kind and its activity id.
func (r *Reactions) Record(xs []Reaction) error {
	for _, x := range xs {
		if err := checkReaction(x); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fresh := 0
	for _, x := range xs {
		if _, ok := r.kept[reactionKey{x.Actor, x.Object, x.Kind}]; !ok && !x.Undone {
			fresh++
		}
	}
	if len(r.kept)+fresh > MaxReactions {
		return fmt.Errorf("%w: the crowd already keeps %d reactions (MaxReactions)", ErrReaction, len(r.kept))
	}
	if r.file != nil {
		if _, err := r.file.Write(reactionLines(xs)); err != nil {
			return fmt.Errorf("%w: %v", ErrReaction, err)
		}
		if err := r.file.Sync(); err != nil {
			return fmt.Errorf("%w: %v", ErrReaction, err)
		}
	}
	for _, x := range xs {
		r.apply(x)
	}
	return nil
}

// Has reports whether actor keeps a reaction of kind to object.
func (r *Reactions) Has(actor, object, kind string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.kept[reactionKey{actor, object, kind}]
	return ok
}

// List is every kept reaction, by object, kind, then actor.
func (r *Reactions) List() []Reaction {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.listLocked()
}

func (r *Reactions) listLocked() []Reaction {
	out := make([]Reaction, 0, len(r.kept))
	for k, id := range r.kept {
		out = append(out, Reaction{Actor: k.actor, Object: k.object, Kind: k.kind, ID: id})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Actor < b.Actor
	})
	return out
}

// Close releases the journal.
func (r *Reactions) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}

// RecordReactions takes the reactions (and their Undos) another process (a
// flood) sent from crowd actors: each must name one of the world's own
// actors; else nothing is recorded and the error (wrapping ErrReaction)
// names the first bad one.
func (w *World) RecordReactions(xs []Reaction) error {
	for _, x := range xs {
		if a, ok := w.ActorByID(x.Actor); !ok || a.ID != x.Actor || a.Kind != KindPerson {
			return fmt.Errorf("%w: %s is no actor of the crowd", ErrReaction, x.Actor)
		}
	}
	return w.Reactions.Record(xs)
}
