package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/atomicfile"
	"github.com/crowdfed/crowd/internal/journal"
)

// ErrChange marks a change the crowd cannot take: one that names no object
// a crowd actor sent, or one past MaxChanges, or one not made durable.
var ErrChange = errors.New("change")

// ChangesFile is the name of the changes' journal in the state directory.
const ChangesFile = "changes.jsonl"

// MaxChanges bounds how many objects the crowd remembers as edited or
// deleted (about 200 bytes each in memory): past it, a change is refused
// (and the flood counts it failed) rather than grow without bound.
const MaxChanges = 1 << 20

// Change is what became of an object after it was sent: its deletion
// (Deleted set), or its edit (Version ≥ 1 and Updated). A note's id then
// answers its latest version or a Tombstone with 410; an actor's document
// likewise. Its JSON is a line of the journal and an item of the admin
// API's POST /api/changes.
type Change struct {
	// ID is the note's id, or the actor's id.
	ID string `json:"id"`
	// Deleted is when it was deleted (RFC 3339); empty for an edit.
	Deleted string `json:"deleted,omitempty"`
	// Version is the edit's number, 1 for the first; the highest wins.
	Version int `json:"version,omitempty"`
	// Updated is when it was edited (RFC 3339).
	Updated string `json:"updated,omitempty"`
	// Restored takes an earlier deletion back: the flood records a
	// deletion when it drafts the Delete, and restores the object when that
	// Delete is never sent, so the SUT was never told.
	Restored bool `json:"restored,omitempty"`
}

// changeState is what Changes keeps of an object.
type changeState struct {
	deleted  time.Time // zero while it exists
	version  int
	updated  time.Time
	restored bool // a change that takes a deletion back (never kept as state)
}

// Changes keeps which sent objects were edited (their latest version) and
// which deleted, and journals them in the state directory so they outlive
// a restart: a SUT that saw a Delete must keep getting 410 for that id.
// Each Record is written and fsynced before it returns (the flood records
// in batches of a second, so this costs an fsync a second). Safe for
// concurrent use.
type Changes struct {
	mu    sync.RWMutex
	state map[string]changeState
	file  *os.File // nil for memory-only changes
}

// NewMemoryChanges keeps changes in memory only (a process that does not
// own the state directory).
func NewMemoryChanges() *Changes { return &Changes{state: map[string]changeState{}} }

// OpenChanges replays the changes' journal in stateDir (creating it if
// absent) by the journal's rules: a torn last line is dropped and logged,
// any other damaged line stops the opening naming file:line.
func OpenChanges(stateDir string, log *zap.Logger) (*Changes, error) {
	c := NewMemoryChanges()
	path := filepath.Join(stateDir, ChangesFile)
	lines := 0
	torn, err := journal.Replay(path, func(_ int, line []byte) error {
		lines++
		var ch Change
		if err := json.Unmarshal(line, &ch); err != nil {
			return fmt.Errorf("not a change: %v", err)
		}
		st, err := parseChange(ch)
		if err != nil {
			return err
		}
		c.apply(ch.ID, st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChange, err)
	}
	if torn != nil && log != nil {
		log.Warn("changes: dropped the torn last line a crash left", zap.String("file", torn.Path),
			zap.Int("line", torn.Line), zap.Int64("bytes", torn.Bytes))
	}
	// Edits of one note add a line each: past twice the objects' count,
	// the journal is rewritten as one line per object, which bounds it.
	if lines > 2*len(c.state)+1024 {
		if err := atomicfile.Write(path, c.snapshot(), 0o600); err != nil {
			return nil, fmt.Errorf("%w: compact %s: %v", ErrChange, path, err)
		}
	}
	if c.file, err = os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChange, err)
	}
	return c, nil
}

// snapshot is every object's state as journal lines.
func (c *Changes) snapshot() []byte {
	var b []byte
	for id, st := range c.state {
		ch := Change{ID: id}
		if !st.deleted.IsZero() {
			ch.Deleted = st.deleted.UTC().Format(time.RFC3339)
		} else {
			ch.Version, ch.Updated = st.version, st.updated.UTC().Format(time.RFC3339)
		}
		line, _ := json.Marshal(ch) // cannot fail: strings and an int
		b = append(append(b, line...), '\n')
	}
	return b
}

// parseChange reads a change's times: a deletion or an edit, not both.
func parseChange(ch Change) (changeState, error) {
	var st changeState
	if ch.ID == "" {
		return st, errors.New("the change names no object")
	}
	var err error
	switch {
	case ch.Restored && ch.Deleted == "" && ch.Version == 0 && ch.Updated == "":
		st.restored = true
	case ch.Restored:
		return st, fmt.Errorf("change of %s: a restoration carries nothing else", ch.ID)
	case ch.Deleted != "" && ch.Version == 0 && ch.Updated == "":
		st.deleted, err = time.Parse(time.RFC3339, ch.Deleted)
	case ch.Deleted == "" && ch.Version > 0 && ch.Updated != "":
		st.version = ch.Version
		st.updated, err = time.Parse(time.RFC3339, ch.Updated)
	default:
		return st, fmt.Errorf("change of %s: want deleted, version >= 1 and updated, or restored", ch.ID)
	}
	if err != nil {
		return st, fmt.Errorf("change of %s: %v", ch.ID, err)
	}
	return st, nil
}

// apply merges st into the object's state: a deletion stays until a
// restoration takes it back, the highest version wins (edits may arrive
// out of order).
func (c *Changes) apply(id string, st changeState) {
	old := c.state[id]
	switch {
	case st.restored && old.version == 0:
		delete(c.state, id)
	case st.restored:
		old.deleted = time.Time{}
		c.state[id] = old
	case !old.deleted.IsZero():
	case !st.deleted.IsZero():
		old.deleted = st.deleted
		c.state[id] = old
	case st.version > old.version:
		old.version, old.updated = st.version, st.updated
		c.state[id] = old
	}
}

// Close releases the journal.
func (c *Changes) Close() error {
	if c.file == nil {
		return nil
	}
	return c.file.Close()
}

// Deleted reports when the object id was deleted.
func (c *Changes) Deleted(id string) (time.Time, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st := c.state[id]
	return st.deleted, !st.deleted.IsZero()
}

// Version is the object's latest edit and when it was made; 0 when it
// was never edited.
func (c *Changes) Version(id string) (int, time.Time) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st := c.state[id]
	return st.version, st.updated
}

// record journals and applies valid changes, all or none.
func (c *Changes) record(chs []Change, states []changeState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fresh := 0
	for _, ch := range chs {
		if _, ok := c.state[ch.ID]; !ok {
			fresh++
		}
	}
	if len(c.state)+fresh > MaxChanges {
		return fmt.Errorf("%w: the crowd already keeps %d changed objects (MaxChanges)", ErrChange, len(c.state))
	}
	if c.file != nil {
		var b []byte
		for _, ch := range chs {
			line, _ := json.Marshal(ch) // cannot fail: strings and an int
			b = append(append(b, line...), '\n')
		}
		if _, err := c.file.Write(b); err != nil {
			return fmt.Errorf("%w: %v", ErrChange, err)
		}
		if err := c.file.Sync(); err != nil {
			return fmt.Errorf("%w: %v", ErrChange, err)
		}
	}
	for i, ch := range chs {
		c.apply(ch.ID, states[i])
	}
	return nil
}

// RecordChanges takes changes another process (a flood) made to objects
// its crowd actors sent. Each must name a note a crowd actor's builders
// made, or a crowd actor (only a leaver may be deleted: the world's own
// actors stay, see Actor.Leaver); else nothing is recorded and the error
// (wrapping ErrChange) names the first bad one.
func (w *World) RecordChanges(chs []Change) error {
	states := make([]changeState, len(chs))
	for i, ch := range chs {
		st, err := parseChange(ch)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrChange, err)
		}
		if err := w.checkChangeTarget(ch.ID, !st.deleted.IsZero() || st.restored); err != nil {
			return err
		}
		states[i] = st
	}
	return w.Changes.record(chs, states)
}

// checkChangeTarget: id is a crowd note, or a crowd actor (a leaver when
// deleted).
func (w *World) checkChangeTarget(id string, deletion bool) error {
	if a, ok := w.ActorByID(id); ok && a.ID == id && a.Kind == KindPerson {
		if deletion && !a.IsLeaver() {
			return fmt.Errorf("%w: %s is one of the world's own actors; only leavers are deleted", ErrChange, id)
		}
		return nil
	}
	owner, _, ok := strings.Cut(id, "/"+objNotes+"/")
	if a, found := w.ActorByID(owner); ok && found && a.ID == owner {
		if _, err := a.NoteSpecOf(id); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is no note or actor of the crowd", ErrChange, id)
}

// Gone reports whether the object at id (a note or anything under it, or
// an actor or anything under it) was deleted, and the id whose Tombstone
// answers: the note's, or the actor's.
func (w *World) Gone(a *Actor, path string) (TombstoneDoc, bool) {
	if at, ok := w.Changes.Deleted(a.ID); ok {
		return Tombstone(a.ID, a.Kind, at), true
	}
	// Cut, not Split: the actor's own document asks with path "" on every
	// GET, and a split is an allocation.
	kind, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok || kind != objNotes {
		return TombstoneDoc{}, false
	}
	seq, verb, more := strings.Cut(rest, "/")
	if more && verb == "delete" { // a note's Delete is not gone with it
		return TombstoneDoc{}, false
	}
	id := a.ID + "/" + objNotes + "/" + seq
	if at, ok := w.Changes.Deleted(id); ok {
		return Tombstone(id, "Note", at), true
	}
	return TombstoneDoc{}, false
}

// Current is the object at path on the actor as it stands now: Object's,
// with a note (and its Create) at its latest edit. A deleted object is
// Gone's to answer, not Current's.
func (w *World) Current(a *Actor, path string) (any, error) {
	obj, err := a.Object(path)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if parts[0] != objNotes || len(parts) > 3 || len(parts) == 3 && parts[2] != "activity" {
		return obj, nil
	}
	id := a.ID + "/" + objNotes + "/" + parts[1]
	v, at := w.Changes.Version(id)
	if v == 0 {
		return obj, nil
	}
	spec, _ := noteSpecOf(parts[1]) // Object read it already
	n := a.NoteVersion(spec, v, at)
	if len(parts) == 3 {
		act := obj.(Activity)
		act.Object = n
		return act, nil
	}
	n.Context = contextOf(n)
	return n, nil
}

// Profile is the actor's document as it stands now: at its latest profile
// edit (Actor.ProfileVersion), or nil when it never changed (serve
// DocumentJSON then).
func (w *World) Profile(a *Actor) *ActorDoc {
	v, at := w.Changes.Version(a.ID)
	if v == 0 {
		return nil
	}
	d := a.ProfileVersion(v, at)
	return &d
}
