package actors

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/internal/childproc"
	"github.com/crowdfed/crowd/internal/journal"
)

const (
	rxAlice = "https://flood1.test/users/alice"
	rxBob   = "https://flood1.test/users/bob"
	rxPost  = "https://sut.test/users/load0/posts/1"
)

// TestReactionsKeepAPairUntilItsUndo: a reaction is kept per (actor,
// object, kind) until the Undo of that very reaction; a restart keeps
// what was recorded.
func TestReactionsKeepAPairUntilItsUndo(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenReactions(dir, nil)
	must(t, err)
	like := Reaction{Actor: rxAlice, Object: rxPost, Kind: ReactionLike, ID: rxAlice + "/likes/1"}
	boost := Reaction{Actor: rxAlice, Object: rxPost, Kind: ReactionAnnounce, ID: rxAlice + "/announces/2"}
	bobLike := Reaction{Actor: rxBob, Object: rxPost, Kind: ReactionLike, ID: rxBob + "/likes/3"}
	undo := func(x Reaction) Reaction { x.Undone = true; return x }
	other := like
	other.ID = rxAlice + "/likes/older"
	must(t, r.Record([]Reaction{like, boost, bobLike, undo(bobLike), undo(other)}))
	must(t, r.Close())

	r, err = OpenReactions(dir, nil)
	must(t, err)
	defer r.Close()
	for _, c := range []struct {
		actor, kind string
		want        bool
	}{
		{rxAlice, ReactionLike, true},     // kept: the Undo named another Like of the pair
		{rxAlice, ReactionAnnounce, true}, // the same post boosted is another pair
		{rxBob, ReactionLike, false},      // undone: free again
		{rxBob, ReactionAnnounce, false},  // never sent
	} {
		if got := r.Has(c.actor, rxPost, c.kind); got != c.want {
			t.Errorf("%s %s: kept %v, want %v", c.actor, c.kind, got, c.want)
		}
	}
	if n := len(r.List()); n != 2 {
		t.Errorf("List: %d reactions, want 2: %+v", n, r.List())
	}
}

// TestReactionsRefuseBadItemsWhole: a batch with one bad item records
// nothing, and the error says which.
func TestReactionsRefuseBadItemsWhole(t *testing.T) {
	r := NewMemoryReactions()
	good := Reaction{Actor: rxAlice, Object: rxPost, Kind: ReactionLike, ID: "l1"}
	for _, c := range []struct {
		name string
		bad  Reaction
		want string
	}{
		{"no object", Reaction{Actor: rxAlice, Kind: ReactionLike, ID: "l2"}, "names its actor, object and id"},
		{"no id", Reaction{Actor: rxAlice, Object: rxPost, Kind: ReactionLike}, "names its actor, object and id"},
		{"a kind that is no reaction", Reaction{Actor: rxAlice, Object: rxPost, Kind: "Follow", ID: "f1"}, `kind "Follow"`},
	} {
		err := r.Record([]Reaction{good, c.bad})
		if !errors.Is(err, ErrReaction) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrReaction saying %q", c.name, err, c.want)
		}
		if r.Has(rxAlice, rxPost, ReactionLike) {
			t.Fatalf("%s: the good item of a refused batch was kept", c.name)
		}
	}
}

// TestReactionsJournalTornAndDamaged: a torn last line is dropped and
// logged; any other damaged line stops the opening naming file:line, the
// file left as it was.
func TestReactionsJournalTornAndDamaged(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenReactions(dir, nil)
	must(t, err)
	must(t, r.Record([]Reaction{{Actor: rxAlice, Object: rxPost, Kind: ReactionLike, ID: "l1"}}))
	r.Close()
	path := filepath.Join(dir, ReactionsFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"actor":"https://flood1.te`)
	f.Close()
	core, logs := observer.New(zap.WarnLevel)
	r, err = OpenReactions(dir, zap.New(core))
	must(t, err)
	if !r.Has(rxAlice, rxPost, ReactionLike) || len(logs.FilterField(zap.Int("line", 2)).All()) != 1 {
		t.Errorf("after a torn tail: kept %v, logs %v", r.Has(rxAlice, rxPost, ReactionLike), logs.All())
	}
	r.Close()

	must(t, os.WriteFile(path, []byte(`{"actor":"a","object":"o","kind":"Like","id":"1"}`+"\n"+`{"actor":"a","object":"o","kind":"Boost","id":"2"}`+"\n"), 0o600))
	before, _ := os.ReadFile(path)
	_, err = OpenReactions(dir, nil)
	after, _ := os.ReadFile(path)
	if !errors.Is(err, journal.ErrDamaged) || !strings.Contains(err.Error(), path+":2") || string(before) != string(after) {
		t.Errorf("a damaged line: %v (file changed: %v)", err, string(before) != string(after))
	}
}

// TestReactionsJournalIsCompacted: reactions made and undone over and over
// leave a journal of what is kept, once reopened.
func TestReactionsJournalIsCompacted(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenReactions(dir, nil)
	must(t, err)
	for i := range 1500 {
		x := Reaction{Actor: rxAlice, Object: rxPost, Kind: ReactionLike, ID: fmt.Sprint("l", i)}
		y := x
		y.Undone = true
		must(t, r.Record([]Reaction{x, y}))
	}
	must(t, r.Record([]Reaction{{Actor: rxBob, Object: rxPost, Kind: ReactionLike, ID: "kept"}}))
	r.Close()
	r, err = OpenReactions(dir, nil)
	must(t, err)
	defer r.Close()
	raw, _ := os.ReadFile(filepath.Join(dir, ReactionsFile))
	if n := strings.Count(string(raw), "\n"); n != 1 || !r.Has(rxBob, rxPost, ReactionLike) {
		t.Errorf("compacted journal: %d lines, want 1 (the kept reaction):\n%.300s", n, raw)
	}
}

// reactionsKillEnv names the state directory of the helper process that
// records reactions until it is killed.
const reactionsKillEnv = "CROWD_TEST_REACTIONS_KILL"

// TestReactionsKillHelperProcess is not a test: run by
// TestReactionsKilledLoseNothingRecorded in a child process, it records
// reactions one by one and says each once Record returned, until killed.
func TestReactionsKillHelperProcess(t *testing.T) {
	dir := os.Getenv(reactionsKillEnv)
	if dir == "" {
		t.Skip("a helper process")
	}
	r, err := OpenReactions(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1_000_000; i++ { // bounded: the parent kills it long before
		x := Reaction{Actor: rxAlice, Object: fmt.Sprintf("%s/%d", rxPost, i), Kind: ReactionAnnounce, ID: fmt.Sprint("a", i)}
		if err := r.Record([]Reaction{x}); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("recorded %d\n", i)
	}
	t.Fatal("the helper ran to its end: it should have been killed")
}

// TestReactionsKilledLoseNothingRecorded: a process killed with SIGKILL
// while recording loses no reaction whose Record had returned.
func TestReactionsKilledLoseNothingRecorded(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReactionsKillHelperProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), reactionsKillEnv+"="+dir)
	childproc.Tie(cmd) // never outlives the test
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	last := -1
	sc := bufio.NewScanner(out)
	for sc.Scan() && last < 200 {
		if n, ok := strings.CutPrefix(sc.Text(), "recorded "); ok {
			last, _ = strconv.Atoi(n)
		}
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	if last < 200 {
		t.Fatalf("the helper said %d recorded before it stopped", last)
	}
	r, err := OpenReactions(dir, nil)
	must(t, err)
	defer r.Close()
	for i := 0; i <= last; i++ {
		if !r.Has(rxAlice, fmt.Sprintf("%s/%d", rxPost, i), ReactionAnnounce) {
			t.Fatalf("reaction %d was recorded before the kill and is lost (%d kept)", i, len(r.List()))
		}
	}
}
