package audience

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestVisibilityBuried: a note the sweep finds counts as buried only when
// it is owed to that home, accepted and never seen by a probe; buried notes
// leave never-seen, are not in the latency, keep the drain incomplete, and
// carry their find time in the notes log.
func TestVisibilityBuried(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	v := NewVisibility(map[string][]string{"load0": {alice}, "load1": {bob}})
	for i, uri := range []string{"seen", "buried", "never", "refused"} {
		v.Sent(alice, uri, at(i))
	}
	v.Sent(bob, "other-home", at(5))
	for _, uri := range []string{"seen", "buried", "never", "other-home"} {
		v.Answered(uri, 202)
	}
	v.Answered("refused", 500)
	v.Seen("load0", "seen", at(90), at(100))
	for _, c := range []struct {
		persona, uri string
		counts       bool
	}{
		{"load0", "buried", true},      // owed, accepted, never seen: buried
		{"load0", "buried", false},     // found twice: once
		{"load0", "seen", false},       // a probe saw it: its latency stands
		{"load0", "refused", false},    // the SUT refused it: not owed
		{"load0", "other-home", false}, // owed to load1's home, not load0's
		{"load0", "unknown", false},    // a status the crowd never sent
	} {
		if got := v.Buried(c.persona, c.uri, at(5000)); got != c.counts {
			t.Errorf("Buried(%s, %s) = %v, want %v", c.persona, c.uri, got, c.counts)
		}
	}
	if u := v.Unseen(); u["load0"] != 1 || u["load1"] != 1 || len(u) != 2 {
		t.Errorf("Unseen = %v; want load0: 1 (never), load1: 1 (other-home)", u)
	}
	st, d := v.Summary(at(1000), at(4000), 3*time.Second)
	if st.Seen != 1 || st.Buried != 1 || st.NeverSeen != 2 || st.Refused != 1 || st.Latency.Count != 1 || d.Complete {
		t.Errorf("Summary = %+v, drain %+v; want 1 seen, 1 buried, 2 never seen, 1 refused, one latency, drain incomplete", st, d)
	}
	for _, n := range v.Notes() {
		if (n.URI == "buried") != (n.Buried != nil) || n.URI == "buried" && !n.Buried.Equal(at(5000)) {
			t.Errorf("notes log: %s buried %v", n.URI, n.Buried)
		}
	}
}

// TestSweep: the sweep pages down each home with unseen notes (max_id),
// finds them below the newest page, and stops when they are all found, at
// its page bound, or when the server repeats a page (it ignores max_id).
func TestSweep(t *testing.T) {
	// load0's home: 100 statuses, newest first; the crowd's notes n10 and
	// n75 are in it, far below a probe's newest 40.
	home := make([]Status, 100)
	for i := range home {
		home[i] = Status{ID: fmt.Sprint(1000 - i), URI: fmt.Sprintf("https://elsewhere.test/s/%d", i)}
	}
	home[50].URI, home[85].URI = "n10", "n75"
	for _, c := range []struct {
		name        string
		pages       int
		ignoreMaxID bool
		found       int
		readPages   int
	}{
		// Both found on the third page (statuses 80-119), and it stops there.
		{"found", 25, false, 2, 3},
		// Two pages reach status 79: n10 found, n75 not.
		{"page bound", 2, false, 1, 2},
		// A server that ignores max_id repeats its newest page: one more
		// read shows the repeat, and the sweep stops.
		{"max_id ignored", 25, true, 0, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeSUT("load0")
			f.home["load0"] = home
			f.ignoreMaxID = c.ignoreMaxID
			cl := f.start(t)
			v := NewVisibility(map[string][]string{"load0": {alice}})
			for _, uri := range []string{"n10", "n75"} {
				v.Sent(alice, uri, time.Now())
				v.Answered(uri, 202)
			}
			st := Sweep(context.Background(), cl, map[string]string{"load0": "tok-load0"}, v, SweepOptions{Pages: c.pages})
			if st.Found != c.found || st.Pages != c.readPages || st.Personas != 1 || st.Errors != 0 {
				t.Errorf("Sweep = %+v; want %d found in %d pages", st, c.found, c.readPages)
			}
			if vs, _ := v.Summary(time.Now(), time.Now(), time.Second); vs.Buried != int64(c.found) {
				t.Errorf("Summary: %d buried, want %d", vs.Buried, c.found)
			}
		})
	}
	// Out of time before it starts: the home is left unread, and said so.
	v := NewVisibility(map[string][]string{"load0": {alice}})
	v.Sent(alice, "n10", time.Now())
	v.Answered("n10", 202)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if st := Sweep(ctx, newFakeSUT("load0").start(t), map[string]string{"load0": "tok-load0"}, v, SweepOptions{}); st.Left != 1 || st.Personas != 0 || st.Pages != 0 {
		t.Errorf("Sweep with its time gone = %+v; want one persona left, nothing read", st)
	}
}
