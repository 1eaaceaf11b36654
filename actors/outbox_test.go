package actors

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/internal/journal"
)

const outboxActor = "https://flood1.test/users/alice"

// note is the i-th fake note id of outboxActor: the store checks only that
// it lies under the actor's notes (World.RecordSent checks the rest).
func note(i int) string { return fmt.Sprintf("%s/notes/n%d", outboxActor, i) }

// sent records notes from..to-1 of outboxActor.
func sent(t *testing.T, b *Outbox, from, to int) {
	t.Helper()
	var ns []SentNote
	for i := from; i < to; i++ {
		ns = append(ns, SentNote{Actor: outboxActor, Note: note(i)})
	}
	must(t, b.Record(ns))
}

// wantLatest checks the actor's outbox lists exactly notes want (newest
// first) and counts total.
func wantLatest(t *testing.T, b *Outbox, total int, want ...int) {
	t.Helper()
	ids, n := b.Latest(outboxActor)
	var w []string
	for _, i := range want {
		w = append(w, note(i))
	}
	if n != total || !slices.Equal(ids, w) {
		t.Errorf("Latest = %d %q, want %d %q", n, ids, total, w)
	}
}

// TestOutboxKeepsTheLatestAndTheTrueTotal: the outbox is bounded per actor
// but its count is every note ever recorded, across a restart, across a
// crash after the periodic flush, and across a compaction of the journal.
func TestOutboxKeepsTheLatestAndTheTrueTotal(t *testing.T) {
	dir := t.TempDir()
	opts := OutboxOptions{Keep: 3, CompactAfter: 8}
	b, err := OpenOutbox(dir, opts)
	must(t, err)
	sent(t, b, 0, 5)
	wantLatest(t, b, 5, 4, 3, 2)
	must(t, b.Close())

	// A restart reads the journal back.
	b, err = OpenOutbox(dir, opts)
	must(t, err)
	wantLatest(t, b, 5, 4, 3, 2)
	// Past 8 lines (5 replayed, 4 new) the journal is compacted to one
	// line per actor, and appended to after it.
	sent(t, b, 5, 7)
	sent(t, b, 7, 9)
	sent(t, b, 9, 10)
	must(t, b.Flush())
	if lines := journalLines(t, dir); len(lines) != 2 {
		t.Errorf("the journal holds %d lines, want 2 (the compacted one and the one after): %q", len(lines), lines)
	}
	// A crash after the periodic flush (kill -9: no Close) loses nothing
	// flushed.
	crashed, err := OpenOutbox(dir, opts)
	must(t, err)
	wantLatest(t, crashed, 10, 9, 8, 7)
	crashed.Close()
	b.Close()
}

func journalLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, OutboxFile))
	must(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestOutboxBuffersUntilFlush: recording writes nothing to the file (no
// write, no fsync per note); a flush or Close puts it on disk.
func TestOutboxBuffersUntilFlush(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenOutbox(dir, OutboxOptions{FlushEvery: time.Hour})
	must(t, err)
	sent(t, b, 0, 100)
	if st, _ := os.Stat(filepath.Join(dir, OutboxFile)); st.Size() != 0 {
		t.Errorf("the journal has %d bytes before any flush, want 0", st.Size())
	}
	must(t, b.Close())
	if n := len(journalLines(t, dir)); n != 100 {
		t.Errorf("%d lines after Close, want 100", n)
	}
	if err := b.Record([]SentNote{{Actor: outboxActor, Note: note(1)}}); !errors.Is(err, ErrOutbox) {
		t.Errorf("Record after Close = %v, want ErrOutbox", err)
	}
}

// TestOutboxJournalDamage: a torn last line (a crash mid-write) is dropped
// and logged; any other bad line stops the opening naming file:line, the
// file left byte-identical.
func TestOutboxJournalDamage(t *testing.T) {
	good := `{"actor":"` + outboxActor + `","note":"` + note(1) + `"}` + "\n"
	for _, c := range []struct {
		name    string
		content string
		line    int // the damaged line; 0: it opens
		total   int // when it opens
	}{
		// Half a line after two whole ones: dropped, the two kept.
		{"torn tail", good + good + `{"actor":"https://flo`, 0, 2},
		// A line that is no JSON, between good ones.
		{"garbage in the middle", good + "xx\n" + good, 2, 0},
		// A note of another actor than the line names.
		{"foreign note", good + `{"actor":"https://flood1.test/users/bob","note":"` + note(2) + `"}` + "\n" + good, 2, 0},
		// A snapshot counting fewer notes than it lists.
		{"total below notes", `{"actor":"` + outboxActor + `","total":0,"notes":["` + note(1) + `"]}` + "\n" + good, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, OutboxFile)
			must(t, os.WriteFile(path, []byte(c.content), 0o600))
			core, logs := observer.New(zap.WarnLevel)
			b, err := OpenOutbox(dir, OutboxOptions{Logger: zap.New(core)})
			if c.line > 0 {
				if !errors.Is(err, journal.ErrDamaged) || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("%s:%d", path, c.line)) {
					t.Fatalf("open = %v, want a damaged-line error naming %s:%d", err, path, c.line)
				}
				if now, _ := os.ReadFile(path); !bytes.Equal(now, []byte(c.content)) {
					t.Errorf("the damaged journal was changed:\n%q\nwas\n%q", now, c.content)
				}
				return
			}
			must(t, err)
			defer b.Close()
			if _, n := b.Latest(outboxActor); n != c.total {
				t.Errorf("total %d, want %d", n, c.total)
			}
			if logs.FilterField(zap.Int("line", 3)).Len() != 1 {
				t.Errorf("the torn line 3 was not logged: %v", logs.All())
			}
		})
	}
}

// TestRecordSentChecksItems: only a Person of the world and a note id its
// builders made reach the outbox; a bad item refuses the whole batch.
func TestRecordSentChecksItems(t *testing.T) {
	w := testWorld(t)
	o, _ := w.Origin("flood1.test")
	alice, _ := o.Actor("alice")
	bob, _ := o.Actor("bob")
	real := alice.NoteID(NoteSpec{Published: time.Unix(1e9, 0), Seq: 1, Bytes: 10, MentionID: "https://sut.test/u/x", MentionHandle: "@x@sut.test"})
	for _, c := range []struct {
		name string
		item SentNote
		ok   bool
	}{
		// A note alice's builders made.
		{"alice's note", SentNote{Actor: alice.ID, Note: real}, true},
		// Another actor's note under alice's name.
		{"bob claims alice's note", SentNote{Actor: bob.ID, Note: real}, false},
		// The instance actor sends no notes.
		{"instance actor", SentNote{Actor: o.Instance.ID, Note: o.Instance.ID + "/notes/x"}, false},
		// An actor of no origin of this world.
		{"unknown actor", SentNote{Actor: "https://sut.test/users/x", Note: "https://sut.test/users/x/notes/a"}, false},
		// A token that does not decode.
		{"made-up token", SentNote{Actor: alice.ID, Note: alice.ID + "/notes/!!"}, false},
		// The Create's id, not the note's.
		{"activity id", SentNote{Actor: alice.ID, Note: real + "/activity"}, false},
	} {
		err := w.RecordSent([]SentNote{{Actor: alice.ID, Note: real}, c.item})
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrNotSent)) {
			t.Errorf("%s: RecordSent = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	if _, n := w.Outbox.Latest(alice.ID); n != 2 {
		t.Errorf("alice's total %d, want 2 (only the good batch)", n)
	}
}

// FuzzOutboxLine: no line panics the parser, and a line it accepts names
// an actor and only notes under it.
func FuzzOutboxLine(f *testing.F) {
	f.Add([]byte(`{"actor":"https://a.test/users/x","note":"https://a.test/users/x/notes/1"}`))
	f.Add([]byte(`{"actor":"https://a.test/users/x","total":5,"notes":["https://a.test/users/x/notes/1"]}`))
	f.Add([]byte(`{"actor":"","note":""}`))
	f.Add([]byte(`{"actor":"a","total":-1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		l, err := parseOutboxLine(line)
		if err != nil {
			return
		}
		if l.Actor == "" || (l.Total != nil && *l.Total < len(l.Notes)) {
			t.Fatalf("accepted %q as %+v", line, l)
		}
		for _, n := range l.Notes {
			if !strings.HasPrefix(n, l.Actor+"/notes/") {
				t.Fatalf("accepted a foreign note in %q", line)
			}
		}
	})
}
