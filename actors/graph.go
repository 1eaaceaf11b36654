package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/journal"
)

// Follow states of a relation.
const (
	StatePending  = "pending"
	StateAccepted = "accepted"
	StateRejected = "rejected"
)

// ErrGraph marks a follow-graph operation that could not be made durable.
var ErrGraph = errors.New("follow graph")

// Relation is one follow between a crowd actor and a remote actor.
type Relation struct {
	// Local is the crowd actor's id.
	Local string `json:"local"`
	// Remote is the other actor's id.
	Remote string `json:"remote"`
	// FollowID is the id of the Follow activity that made the relation.
	FollowID string `json:"follow_id"`
	// State is StatePending, StateAccepted or StateRejected.
	State string `json:"state"`
	// Since is when the relation reached its state.
	Since time.Time `json:"since"`
	// Follow is the Follow activity as received (followers only): the
	// Accept embeds it.
	Follow json.RawMessage `json:"follow,omitempty"`
}

// journal entry kinds
const (
	opFollower   = "follower"
	opUnfollower = "unfollower"
	opFollowing  = "following"
	opUnfollow   = "unfollow"
)

type entry struct {
	Op string `json:"op"`
	Relation
}

// Graph is the persisted follow graph: who follows which crowd actor
// (followers) and whom crowd actors follow (following). Every change is
// appended to a journal and fsynced before the call returns, so a kill -9
// at any moment loses no follow that was acknowledged. Safe for
// concurrent use.
type Graph struct {
	mu        sync.RWMutex
	file      *os.File
	followers map[string]map[string]Relation // local → remote → relation
	following map[string]map[string]Relation // local → remote → relation
	byFollow  map[string]Relation            // following, by Follow id
	memory    bool                           // no journal: NewMemoryGraph
}

// NewMemoryGraph is a graph that keeps nothing on disk.
func NewMemoryGraph() *Graph {
	return &Graph{followers: map[string]map[string]Relation{}, following: map[string]map[string]Relation{},
		byFollow: map[string]Relation{}, memory: true}
}

// GraphFile is the name of the follow graph's journal in the state
// directory.
const GraphFile = "graph.jsonl"

// OpenGraph replays the journal in stateDir (creating it if absent). A
// torn last line, as a crash mid-write leaves, is dropped, cut from the
// file and logged; any other line that does not read stops the opening
// with an error naming the file and line, the file left as it was: a
// damaged journal is never silently cut short. log may be nil.
func OpenGraph(stateDir string, log *zap.Logger) (*Graph, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGraph, err)
	}
	path := filepath.Join(stateDir, GraphFile)
	g := &Graph{followers: map[string]map[string]Relation{}, following: map[string]map[string]Relation{}, byFollow: map[string]Relation{}}
	torn, err := journal.Replay(path, func(_ int, line []byte) error {
		e, err := parseEntry(line)
		if err != nil {
			return err
		}
		g.apply(e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGraph, err)
	}
	if torn != nil {
		log.Warn("follow graph: dropped the torn last line a crash left", zap.String("file", torn.Path),
			zap.Int("line", torn.Line), zap.Int64("bytes", torn.Bytes))
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGraph, err)
	}
	g.file = f
	return g, nil
}

// parseEntry reads one journal line: JSON of a known op naming both actors.
func parseEntry(line []byte) (entry, error) {
	var e entry
	if err := json.Unmarshal(line, &e); err != nil {
		return entry{}, fmt.Errorf("not a journal entry: %v", err)
	}
	switch e.Op {
	case opFollower, opUnfollower, opFollowing, opUnfollow:
	default:
		return entry{}, fmt.Errorf("unknown op %q", e.Op)
	}
	if e.Local == "" || e.Remote == "" {
		return entry{}, errors.New("entry names no local or no remote actor")
	}
	return e, nil
}

// Close closes the journal.
func (g *Graph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.file == nil {
		return nil
	}
	err := g.file.Close()
	g.file = nil
	return err
}

func (g *Graph) apply(e entry) {
	switch e.Op {
	case opFollower:
		put(g.followers, e.Relation)
	case opUnfollower:
		delete(g.followers[e.Local], e.Remote)
	case opFollowing:
		if old, ok := g.following[e.Local][e.Remote]; ok && old.FollowID != e.FollowID {
			delete(g.byFollow, old.FollowID)
		}
		put(g.following, e.Relation)
		g.byFollow[e.FollowID] = e.Relation
	case opUnfollow:
		if old, ok := g.following[e.Local][e.Remote]; ok {
			delete(g.byFollow, old.FollowID)
		}
		delete(g.following[e.Local], e.Remote)
	}
}

func put(m map[string]map[string]Relation, r Relation) {
	inner := m[r.Local]
	if inner == nil {
		inner = map[string]Relation{}
		m[r.Local] = inner
	}
	inner[r.Remote] = r
}

// record makes e durable, then applies it. The caller holds g.mu.
func (g *Graph) record(e entry) error {
	if g.memory {
		g.apply(e)
		return nil
	}
	if g.file == nil {
		return fmt.Errorf("%w: closed", ErrGraph)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrGraph, err)
	}
	if _, err := g.file.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%w: %v", ErrGraph, err)
	}
	if err := g.file.Sync(); err != nil {
		return fmt.Errorf("%w: %v", ErrGraph, err)
	}
	g.apply(e)
	return nil
}

// AddFollower records that remote follows local (accepted: the crowd
// accepts every Follow), keeping the Follow activity for the Accept.
func (g *Graph) AddFollower(local, remote, followID string, follow json.RawMessage) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.record(entry{Op: opFollower, Relation: Relation{Local: local, Remote: remote, FollowID: followID,
		State: StateAccepted, Since: time.Now().UTC(), Follow: follow}})
}

// RemoveFollower records that remote no longer follows local. It reports
// whether there was such a follower.
func (g *Graph) RemoveFollower(local, remote string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.followers[local][remote]; !ok {
		return false, nil
	}
	return true, g.record(entry{Op: opUnfollower, Relation: Relation{Local: local, Remote: remote, Since: time.Now().UTC()}})
}

// AddFollowing records that local sent a Follow (followID) to remote; the
// relation is pending until SetFollowingState. A repeated Follow of a
// remote that already accepted one keeps the relation accepted (a flood
// follows the same personas again and again): the new Follow is
// remembered as an alias, so its own Accept still finds the relation.
// The same Follow registered again keeps its state: its answer may have
// arrived before the registration (a flood registers once the SUT answered
// the Follow, and the SUT may Accept or Reject it first).
func (g *Graph) AddFollowing(local, remote, followID string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.following[local][remote]; ok {
		switch {
		case old.FollowID == followID:
			return nil
		case old.State == StateAccepted:
			g.byFollow[followID] = old
			return nil
		}
	}
	return g.record(entry{Op: opFollowing, Relation: Relation{Local: local, Remote: remote, FollowID: followID,
		State: StatePending, Since: time.Now().UTC()}})
}

// SetFollowingState moves the crowd's own Follow followID to state (an
// Accept or Reject arrived). It reports whether the Follow was known.
func (g *Graph) SetFollowingState(followID, state string) (Relation, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.byFollow[followID]
	if !ok {
		return Relation{}, false, nil
	}
	if r.State == state {
		return r, true, nil
	}
	r.State, r.Since = state, time.Now().UTC()
	return r, true, g.record(entry{Op: opFollowing, Relation: r})
}

// FollowingByRemote finds local's relation to remote, if any (an Accept
// may quote the Follow by id or only name the actors).
func (g *Graph) FollowingByRemote(local, remote string) (Relation, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.following[local][remote]
	return r, ok
}

// RemoveFollowing forgets local's follow of remote (the crowd sent Undo).
func (g *Graph) RemoveFollowing(local, remote string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.following[local][remote]; !ok {
		return false, nil
	}
	return true, g.record(entry{Op: opUnfollow, Relation: Relation{Local: local, Remote: remote, Since: time.Now().UTC()}})
}

// PendingBefore lists the crowd's own Follows still pending (no Accept or
// Reject) that were registered before cutoff, oldest first.
func (g *Graph) PendingBefore(cutoff time.Time) []Relation {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []Relation
	for _, m := range g.following {
		for _, r := range m {
			if r.State == StatePending && r.Since.Before(cutoff) {
				out = append(out, r)
			}
		}
	}
	return oldestFirst(out)
}

// RemovePending forgets r (from PendingBefore) if it is still that same
// pending Follow: an answer that arrived since is kept. It reports whether
// r was removed.
func (g *Graph) RemovePending(r Relation) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cur, ok := g.following[r.Local][r.Remote]
	if !ok || cur.State != StatePending || cur.FollowID != r.FollowID {
		return false, nil
	}
	return true, g.record(entry{Op: opUnfollow, Relation: Relation{Local: r.Local, Remote: r.Remote, Since: time.Now().UTC()}})
}

// PrunePending lists the crowd's own Follows pending since before cutoff
// and, unless dryRun, removes them (see RemovePending); removed counts
// those that were still pending when removed.
func (g *Graph) PrunePending(cutoff time.Time, dryRun bool) (stale []Relation, removed int, err error) {
	stale = g.PendingBefore(cutoff)
	if dryRun {
		return stale, 0, nil
	}
	for _, r := range stale {
		ok, err := g.RemovePending(r)
		if err != nil {
			return stale, removed, err
		}
		if ok {
			removed++
		}
	}
	return stale, removed, nil
}

// Followers lists who follows local, oldest first.
func (g *Graph) Followers(local string) []Relation {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return sorted(g.followers[local])
}

// Following lists whom local follows (any state), oldest first.
func (g *Graph) Following(local string) []Relation {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return sorted(g.following[local])
}

// Counts is how many followers and followings local has; following
// counts only accepted follows, as servers show them.
func (g *Graph) Counts(local string) (followers, following int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for _, r := range g.following[local] {
		if r.State == StateAccepted {
			following++
		}
	}
	return len(g.followers[local]), following
}

func sorted(m map[string]Relation) []Relation {
	out := make([]Relation, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	return oldestFirst(out)
}

// oldestFirst sorts relations by Since, then by remote actor.
func oldestFirst(out []Relation) []Relation {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Remote < out[j].Remote
	})
	return out
}

// Locals lists the crowd actors that have any follower or following, in
// id order: what a listing of the graph walks, in a world of any size.
func (g *Graph) Locals() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	seen := make(map[string]bool, len(g.followers)+len(g.following))
	var out []string
	for _, m := range []map[string]map[string]Relation{g.followers, g.following} {
		for local, rels := range m {
			if len(rels) > 0 && !seen[local] {
				seen[local] = true
				out = append(out, local)
			}
		}
	}
	sort.Strings(out)
	return out
}

// FollowingByID is the crowd's following relation made by the Follow
// followID, found in constant time.
func (g *Graph) FollowingByID(followID string) (Relation, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.byFollow[followID]
	return r, ok
}

// FollowerByFollowID finds the relation in which remote follows a crowd
// actor with the Follow followID (an Undo that names the Follow only by
// id): a walk of the followers, not of the world's actors.
func (g *Graph) FollowerByFollowID(followID, remote string) (Relation, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for _, rels := range g.followers {
		if r, ok := rels[remote]; ok && r.FollowID == followID {
			return r, true
		}
	}
	return Relation{}, false
}
