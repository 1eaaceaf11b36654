package inbox

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/internal/journal"
)

// mixed appends n entries to l: in accepted, in rejected, out delivered,
// and a manual send answered 500, in turn.
func mixed(l *ActivityLog, n int) {
	for i := range n {
		switch i % 4 {
		case 0:
			l.Append(Entry{Direction: DirIn, Type: "Create", Verdict: VerdictAccepted, Status: 202})
		case 1:
			l.Append(Entry{Direction: DirIn, Type: "Create", Verdict: VerdictRejected, Status: 401})
		case 2:
			l.Append(Entry{Direction: DirOut, Type: "Accept", Verdict: VerdictDelivered, Status: 202})
		case 3:
			l.Append(Entry{Direction: DirOut, Type: "Like", Verdict: VerdictSent, Status: 500})
		}
	}
}

func openLog(t *testing.T, o LogOptions) *ActivityLog {
	t.Helper()
	l, err := OpenLog(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// After a restart the log holds what it held: the ring of the latest
// entries, seq continuing from the last one on disk, and totals over
// every entry ever logged, across rotated files: a restart never starts
// empty at seq 1.
func TestLogReloadsItsTailOnRestart(t *testing.T) {
	dir := t.TempDir()
	o := LogOptions{Dir: dir, Ring: 10, RotateBytes: 2 << 10, Keep: 3}
	l := openLog(t, o)
	mixed(l, 40)
	before := l.Latest(0, Filter{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, LogFile+".1")); err != nil {
		t.Fatalf("the test wants a rotated log: %v", err)
	}
	l = openLog(t, o)
	defer l.Close()
	after := l.Latest(0, Filter{})
	if len(after) != 10 || seqs(after)[0] != seqs(before)[0] || seqs(after)[9] != 40 {
		t.Errorf("ring after restart %v, want %v", seqs(after), seqs(before))
	}
	if got := l.Append(Entry{Direction: DirIn, Verdict: VerdictAccepted}); got.Seq != 41 {
		t.Errorf("first seq after restart = %d, want 41", got.Seq)
	}
	want := Totals{Entries: 41, In: 21, Out: 20, OK: 21, Problems: 20}
	if got := l.Totals(); got != want {
		t.Errorf("totals after restart %+v, want %+v", got, want)
	}
}

// A kill -9 leaves entries written after the last totals checkpoint:
// they are counted from the log, once.
func TestLogTotalsCountWhatFollowsTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	o := LogOptions{Dir: dir, Ring: 3}
	l := openLog(t, o)
	mixed(l, 4)
	l.Close()
	old, _ := os.ReadFile(filepath.Join(dir, TotalsFile)) // totals as of seq 4
	l = openLog(t, o)
	mixed(l, 8)
	l.Close()
	os.WriteFile(filepath.Join(dir, TotalsFile), old, 0o600) // as if killed before checkpointing
	l = openLog(t, o)
	defer l.Close()
	if got, want := l.Totals(), (Totals{Entries: 12, In: 6, Out: 6, OK: 6, Problems: 6}); got != want {
		t.Errorf("totals %+v, want %+v", got, want)
	}
	// Without any checkpoint (a state from before totals were kept), the
	// whole log is counted once.
	l.Close()
	os.Remove(filepath.Join(dir, TotalsFile))
	l = openLog(t, o)
	if got := l.Totals().Entries; got != 12 {
		t.Errorf("recounted %d entries, want 12", got)
	}
}

// A torn last line is dropped and logged; a damaged complete line read
// back refuses the opening with file:line, the file left as it was.
func TestLogJournalDamage(t *testing.T) {
	dir := t.TempDir()
	o := LogOptions{Dir: dir, Ring: 100}
	l := openLog(t, o)
	mixed(l, 6)
	l.Close()
	path := filepath.Join(dir, LogFile)
	good, _ := os.ReadFile(path)

	os.WriteFile(path, append(bytes.Clone(good), `{"seq":7,"direc`...), 0o600)
	core, logs := observer.New(zap.WarnLevel)
	o.Logger = zap.New(core)
	l = openLog(t, o)
	if got := l.Append(Entry{}); got.Seq != 7 {
		t.Errorf("seq after a torn line = %d, want 7", got.Seq)
	}
	l.Close()
	if logs.FilterField(zap.String("file", path)).FilterField(zap.Int("line", 7)).Len() != 1 {
		t.Errorf("torn line not logged with file and line 7: %v", logs.All())
	}

	lines := strings.SplitAfter(string(good), "\n")
	lines[2] = "{\"seq\":3,\"time\":oops}\n"
	damaged := []byte(strings.Join(lines, ""))
	os.WriteFile(path, damaged, 0o600)
	_, err := OpenLog(LogOptions{Dir: dir, Ring: 100})
	if !errors.Is(err, journal.ErrDamaged) || !strings.Contains(err.Error(), path+":3") {
		t.Fatalf("err = %v, want a damaged line at %s:3", err, path)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
		t.Error("a damaged log was changed")
	}
}
