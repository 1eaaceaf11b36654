package actors

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/atomicfile"
	"github.com/crowdfed/crowd/internal/journal"
)

// ErrOutbox marks an outbox record that could not be made durable.
var ErrOutbox = errors.New("outbox")

// ErrNotSent marks a SentNote that names no note a crowd actor could have
// sent: an unknown actor, or an id its builders did not make.
var ErrNotSent = errors.New("not a note a crowd actor sent")

// SentNote is one Create a crowd actor sent: the actor's id and the id of
// the Note it carried. The Create is regenerated from the note's id
// (Actor.Object), so this pair is all an outbox stores.
type SentNote struct {
	Actor string `json:"actor"`
	Note  string `json:"note"`
}

// OutboxFile is the name of the outboxes' journal in the state directory
// (apart from the inbox's delivery queue, the directory "outbox").
const OutboxFile = "outboxes.jsonl"

// DefaultOutboxKeep is how many of its latest notes an actor's outbox
// lists; totalItems still counts every note it ever sent.
const DefaultOutboxKeep = 40

// OutboxOptions tune an Outbox; the zero value is the default.
type OutboxOptions struct {
	// Keep is how many note ids are kept per actor; default
	// DefaultOutboxKeep.
	Keep int
	// FlushEvery is the longest a recorded note waits in memory before it
	// is written and fsynced; default 1 s. A kill -9 loses at most that.
	FlushEvery time.Duration
	// BufferBytes bounds the buffer in front of the journal: a fuller one
	// is written (not fsynced) at once; default 256 KiB.
	BufferBytes int
	// CompactAfter is how many lines may be appended to the journal before
	// it is rewritten as one snapshot line per actor, which bounds the
	// file; default 65536.
	CompactAfter int
	// Logger hears of a torn last line dropped on opening; nil is silent.
	Logger *zap.Logger
}

// Outbox keeps, per crowd actor, the ids of the latest notes it sent and
// how many it sent in all. A flood records thousands a second, so a record
// only appends to a buffer: the journal is written when the buffer fills
// and fsynced every FlushEvery, never per note. A crash loses at most the
// last FlushEvery of records; the journal's rules (internal/journal) keep
// the rest: a torn last line is dropped and logged, any other bad line
// stops the opening naming file:line. Safe for concurrent use.
type Outbox struct {
	mu     sync.Mutex
	keep   int
	actors map[string]*sentRing

	// Journal; all nil for a memory-only outbox.
	path         string
	file         *os.File
	buf          *bufio.Writer
	lines        int // lines appended since the last snapshot (all of them after opening)
	compactAfter int
	flushEvery   time.Duration
	timer        *time.Timer // the pending flush; nil when nothing waits
	err          error       // the first write error: every later call returns it
}

// sentRing is one actor's outbox: the last keep ids, oldest at head.
type sentRing struct {
	total int
	ids   []string // a ring of up to keep ids
	head  int      // where the oldest id is once the ring is full
}

func (r *sentRing) push(id string, keep int) {
	r.total++
	if len(r.ids) < keep {
		r.ids = append(r.ids, id)
		return
	}
	r.ids[r.head] = id
	r.head = (r.head + 1) % keep
}

// oldestFirst lists the kept ids in the order they were sent.
func (r *sentRing) oldestFirst() []string {
	return append(slices.Clone(r.ids[r.head:]), r.ids[:r.head]...)
}

// outboxLine is one journal line: a sent note (Note), or an actor's whole
// state written by a compaction (Total and Notes, oldest first).
type outboxLine struct {
	Actor string   `json:"actor"`
	Note  string   `json:"note,omitempty"`
	Total *int     `json:"total,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// NewMemoryOutbox is an outbox that keeps nothing on disk (a process that
// does not own the state directory).
func NewMemoryOutbox(o OutboxOptions) *Outbox {
	return &Outbox{keep: defaulted(o.Keep, DefaultOutboxKeep), actors: map[string]*sentRing{}}
}

// OpenOutbox replays the outboxes' journal in stateDir (creating it if
// absent), by the journal's rules (see Outbox), and compacts it when it
// has grown past CompactAfter lines.
func OpenOutbox(stateDir string, o OutboxOptions) (*Outbox, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	b := NewMemoryOutbox(o)
	b.path = filepath.Join(stateDir, OutboxFile)
	b.compactAfter = defaulted(o.CompactAfter, 65536)
	b.flushEvery = o.FlushEvery
	if b.flushEvery <= 0 {
		b.flushEvery = time.Second
	}
	torn, err := journal.Replay(b.path, func(_ int, line []byte) error {
		l, err := parseOutboxLine(line)
		if err != nil {
			return err
		}
		b.apply(l)
		b.lines++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOutbox, err)
	}
	if torn != nil {
		log.Warn("outboxes: dropped the torn last line a crash left", zap.String("file", torn.Path),
			zap.Int("line", torn.Line), zap.Int64("bytes", torn.Bytes))
	}
	f, err := os.OpenFile(b.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutbox, err)
	}
	b.file, b.buf = f, bufio.NewWriterSize(f, defaulted(o.BufferBytes, 256<<10))
	if b.lines >= b.compactAfter {
		if err := b.compact(); err != nil {
			f.Close()
			return nil, err
		}
	}
	return b, nil
}

func defaulted(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// parseOutboxLine reads one journal line: JSON naming an actor and either
// one note of it or its compacted state (a total no smaller than the notes
// listed), every note id under the actor's notes.
func parseOutboxLine(line []byte) (outboxLine, error) {
	var l outboxLine
	if err := json.Unmarshal(line, &l); err != nil {
		return outboxLine{}, fmt.Errorf("not an outbox line: %v", err)
	}
	if l.Actor == "" {
		return outboxLine{}, errors.New("the line names no actor")
	}
	switch {
	case l.Note != "" && l.Total == nil && l.Notes == nil:
		l.Notes = []string{l.Note}
	case l.Note == "" && l.Total != nil && *l.Total >= len(l.Notes):
	default:
		return outboxLine{}, errors.New("the line is neither one note nor an actor's total and notes")
	}
	for _, n := range l.Notes {
		if !strings.HasPrefix(n, l.Actor+"/"+objNotes+"/") {
			return outboxLine{}, fmt.Errorf("%q is no note of %s", n, l.Actor)
		}
	}
	return l, nil
}

// apply adds a parsed line to the outboxes.
func (b *Outbox) apply(l outboxLine) {
	r := b.actors[l.Actor]
	if r == nil || l.Total != nil {
		r = &sentRing{}
		b.actors[l.Actor] = r
	}
	for _, n := range l.Notes {
		r.push(n, b.keep)
	}
	if l.Total != nil {
		r.total = *l.Total
	}
}

// Record adds sent notes, in the order sent. Ids are not checked here
// (World.RecordSent does). The notes are in the outbox at once and on disk
// within FlushEvery; an error is a journal that could not be written, and
// every later call returns it.
func (b *Outbox) Record(notes []SentNote) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	for _, n := range notes {
		if b.buf != nil {
			line, err := json.Marshal(outboxLine{Actor: n.Actor, Note: n.Note})
			if err != nil {
				return fmt.Errorf("%w: %v", ErrOutbox, err)
			}
			if _, err := b.buf.Write(append(line, '\n')); err != nil {
				return b.fail(err)
			}
			b.lines++
		}
		b.apply(outboxLine{Actor: n.Actor, Notes: []string{n.Note}})
	}
	if b.buf == nil {
		return nil
	}
	if b.lines >= b.compactAfter {
		return b.compact()
	}
	if b.timer == nil && b.buf.Buffered() > 0 {
		b.timer = time.AfterFunc(b.flushEvery, func() { b.Flush() })
	}
	return nil
}

// fail keeps err as the outbox's error. The caller holds b.mu.
func (b *Outbox) fail(err error) error {
	b.err = fmt.Errorf("%w: %s: %v", ErrOutbox, b.path, err)
	return b.err
}

// Latest is the ids of actor's latest notes, newest first (at most Keep),
// and how many notes it sent in all.
func (b *Outbox) Latest(actor string) (ids []string, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.actors[actor]
	if r == nil {
		return nil, 0
	}
	ids = r.oldestFirst()
	slices.Reverse(ids)
	return ids, r.total
}

// Flush writes and fsyncs what was recorded.
func (b *Outbox) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flush()
}

// flush is Flush with b.mu held.
func (b *Outbox) flush() error {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if b.buf == nil || b.err != nil {
		return b.err
	}
	if err := b.buf.Flush(); err != nil {
		return b.fail(err)
	}
	if err := b.file.Sync(); err != nil {
		return b.fail(err)
	}
	return nil
}

// compact replaces the journal with one line per actor holding its total
// and kept ids, written atomically (the old journal stays whole until the
// new one is in place), and appends to that from then on. The caller
// holds b.mu.
func (b *Outbox) compact() error {
	var data []byte
	for _, actor := range slices.Sorted(maps.Keys(b.actors)) {
		r := b.actors[actor]
		line, err := json.Marshal(outboxLine{Actor: actor, Total: &r.total, Notes: r.oldestFirst()})
		if err != nil {
			return fmt.Errorf("%w: %v", ErrOutbox, err)
		}
		data = append(append(data, line...), '\n')
	}
	if err := atomicfile.Write(b.path, data, 0o600); err != nil {
		return b.fail(err)
	}
	f, err := os.OpenFile(b.path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return b.fail(err)
	}
	// What was buffered is in the snapshot: it must not be appended again.
	b.buf.Reset(f)
	b.file.Close()
	b.file, b.lines = f, 0
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	return nil
}

// Close flushes the journal and closes it; Record after Close fails.
func (b *Outbox) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.flush()
	if b.file != nil {
		if cerr := b.file.Close(); err == nil {
			err = cerr
		}
		b.file = nil
	}
	if b.buf != nil && b.err == nil {
		b.err = fmt.Errorf("%w: closed", ErrOutbox)
	}
	return err
}

// RecordSent adds notes the world's actors sent to their outboxes, after
// checking each names a Person of this world and a note id its builders
// made (ErrNotSent otherwise, naming the first bad item; nothing is
// recorded then).
func (w *World) RecordSent(notes []SentNote) error {
	for i, n := range notes {
		a, ok := w.ActorByID(n.Actor)
		if !ok || a.ID != n.Actor || a.Kind != KindPerson {
			return fmt.Errorf("%w: item %d: %q is no crowd actor that posts", ErrNotSent, i, n.Actor)
		}
		rel, ok := strings.CutPrefix(n.Note, a.ID)
		if !ok || !strings.HasPrefix(rel, "/"+objNotes+"/") || strings.Count(rel, "/") != 2 {
			return fmt.Errorf("%w: item %d: %q is no note id of %s", ErrNotSent, i, n.Note, a.Acct())
		}
		if _, err := a.Object(rel); err != nil {
			return fmt.Errorf("%w: item %d: %q: %v", ErrNotSent, i, n.Note, err)
		}
	}
	return w.Outbox.Record(notes)
}
