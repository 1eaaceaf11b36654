package inbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLogRotationAndRing: the file rotates by size keeping Keep old files,
// every line is a whole JSON entry, and memory holds only the last Ring.
func TestLogRotationAndRing(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(LogOptions{Dir: dir, Ring: 5, RotateBytes: 4 << 10, Keep: 2, BodyBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		l.Append(Entry{Direction: DirIn, Type: "Create", Body: strings.Repeat("b", 300), Status: 202 + i%2})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	latest := l.Latest(0, Filter{})
	if len(latest) != 5 || latest[0].Seq != 196 || latest[4].Seq != 200 {
		t.Fatalf("ring holds %d entries, seqs %v…", len(latest), seqs(latest))
	}
	if !latest[0].Truncated || len(latest[0].Body) != 100 || latest[0].BodyBytes != 300 {
		t.Errorf("body not cut: %d bytes, truncated=%v, body_bytes=%d", len(latest[0].Body), latest[0].Truncated, latest[0].BodyBytes)
	}
	if _, err := os.Stat(filepath.Join(dir, LogFile+".3")); err == nil {
		t.Error("more rotated files than Keep")
	}
	// The newest files hold a contiguous tail of the sequence.
	var all []uint64
	for _, name := range []string{LogFile + ".2", LogFile + ".1", LogFile} {
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Size() > 4<<10 {
			t.Errorf("%s is %d bytes, over the rotation size", name, st.Size())
		}
		file, _ := os.Open(path)
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			var e Entry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%s: bad line %q: %v", name, sc.Text(), err)
			}
			all = append(all, e.Seq)
		}
		file.Close()
	}
	if len(all) == 0 || all[len(all)-1] != 200 {
		t.Fatalf("files end at %v", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i] != all[i-1]+1 {
			t.Fatalf("gap in the files between %d and %d", all[i-1], all[i])
		}
	}
	// Appending after Close keeps to memory and does not panic.
	l.Append(Entry{Direction: DirIn})
}

func seqs(es []Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// TestSlowSubscriber: a subscriber that never reads does not slow Append;
// it loses entries and is told how many with the next one it gets.
func TestSlowSubscriber(t *testing.T) {
	l, err := OpenLog(LogOptions{Ring: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lost := 0
	l.o.OnLost = func() { lost++ }
	slow := l.Subscribe(Filter{}, 2)
	onlyFollows := l.Subscribe(Filter{Type: "Follow"}, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			l.Append(Entry{Direction: DirIn, Type: "Create"})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Append blocked on a subscriber that does not read")
	}
	<-slow.C()
	<-slow.C()
	l.Append(Entry{Direction: DirIn, Type: "Follow"})
	ev := <-slow.C()
	if ev.Lost != 998 || ev.Entry.Seq != 1001 || slow.Lost() != 998 {
		t.Errorf("event %+v lost=%d, want 998 lost before seq 1001", ev, slow.Lost())
	}
	if lost != 998 {
		t.Errorf("OnLost called %d times", lost)
	}
	// The filtered subscriber saw only the Follow, and lost nothing.
	ev = <-onlyFollows.C()
	if ev.Entry.Type != "Follow" || ev.Lost != 0 {
		t.Errorf("filtered subscriber got %+v", ev)
	}
	slow.Close()
	slow.Close() // idempotent
	if _, ok := <-slow.C(); ok {
		t.Error("channel open after Close")
	}
	if n := l.Subscribers(); n != 1 {
		t.Errorf("%d subscribers", n)
	}
}

func TestFilter(t *testing.T) {
	e := Entry{Direction: DirIn, Type: "Follow", Actor: "https://sut.test/users/pat", Local: "https://flood3.test/users/alice",
		Object: "https://flood3.test/users/alice"}
	tests := []struct {
		name string
		f    Filter
		want bool
	}{
		{"zero filter", Filter{}, true},                                                        // matches everything
		{"type", Filter{Type: "follow"}, true},                                                 // any case
		{"type list", Filter{Type: "Create, Follow"}, true},                                    // comma-separated
		{"other type", Filter{Type: "Create"}, false},                                          // no match
		{"direction", Filter{Direction: DirOut}, false},                                        // wrong direction
		{"actor id", Filter{Actor: "https://sut.test/users/pat"}, true},                        // the sender
		{"actor id with fragment", Filter{Actor: "https://sut.test/users/pat#main-key"}, true}, // keyId form
		{"actor id, host in capitals", Filter{Actor: "https://SUT.test/users/pat/"}, true},     // a host has no case; a trailing slash
		{"actor id, path in capitals", Filter{Actor: "https://sut.test/users/Pat"}, false},     // a path keeps its case
		{"local acct", Filter{Actor: "alice@flood3.test"}, true},                               // the crowd recipient by acct
		{"local acct in capitals", Filter{Actor: "ALICE@FLOOD3.TEST"}, true},                   // names and hosts have no case
		{"acct: form", Filter{Actor: "acct:pat@sut.test"}, true},                               // with scheme
		{"@ form", Filter{Actor: "@pat@sut.test"}, true},                                       // with leading @
		{"host", Filter{Actor: "sut.test"}, true},                                              // every actor of a host
		{"other acct", Filter{Actor: "bob@flood3.test"}, false},                                // not involved
		{"prefix is not a match", Filter{Actor: "https://sut.test/users/pa"}, false},           // ids match whole
		{"acct prefix is not a match", Filter{Actor: "ali@flood3.test"}, false},                // names match whole
		{"all together", Filter{Actor: "alice@flood3.test", Type: "Follow", Direction: DirIn}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Match(&e); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
	// A Like of carol's note, to the shared inbox: about carol, whose name
	// only its object's path carries.
	like := Entry{Direction: DirIn, Type: "Like", Actor: "https://sut.test:8443/users/pat", URL: "flood4.test/inbox",
		Object: "https://flood4.test/users/carol/notes/n1"}
	for _, tt := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"the actor whose note it is", Filter{Actor: "carol@flood4.test"}, true},  // an object under her
		{"ACCT: in capitals", Filter{Actor: "ACCT:carol@flood4.test"}, true},      // the scheme has no case
		{"another actor of that host", Filter{Actor: "bob@flood4.test"}, false},   // not his
		{"a name that ends another's", Filter{Actor: "rol@flood4.test"}, false},   // names match whole
		{"the sender with its port", Filter{Actor: "pat@sut.test:8443"}, true},    // a server on 8443 keeps it in its ids
		{"the sender's host with its port", Filter{Actor: "sut.test:8443"}, true}, // the same, as a host
		{"the sender's host without", Filter{Actor: "sut.test"}, true},            // as before
	} {
		if got := tt.f.Match(&like); got != tt.want {
			t.Errorf("%s: Match = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSafeHeaders: the log shows signatures but no secrets.
func TestSafeHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("Signature", `keyId="k",signature="abc"`)
	h.Set("Cookie", "session=secret")
	h.Set("Proxy-Authorization", "Basic secret")
	h.Set("Authorization", "Bearer secret")
	got := safeHeaders(h)
	if got.Get("Signature") == "" || got.Get("Cookie") != "" || got.Get("Proxy-Authorization") != "" || got.Get("Authorization") != "[redacted]" {
		t.Errorf("safeHeaders = %v", got)
	}
	h.Set("Authorization", `Signature keyId="k"`)
	if got := safeHeaders(h); got.Get("Authorization") != `Signature keyId="k"` {
		t.Errorf("a signature in Authorization was hidden: %v", got)
	}
	// Names as a peer may spell them (Go's server canonicalizes, a
	// handler given a raw header map need not be).
	raw := http.Header{"cookie": {"session=secret"}, "set-cookie": {"a=b"}, "authorization": {"Bearer secret"}}
	//lint:ignore SA1008 the names are not canonical on purpose: that is the case tested
	if got := safeHeaders(raw); len(got["cookie"]) != 0 || len(got["set-cookie"]) != 0 || strings.Join(got["authorization"], ",") != "[redacted]" {
		t.Errorf("lower-case secret headers kept: %v", got)
	}
}

// TestSafeHeadersCopiesAreSeparate: the copy shares nothing with the
// request's headers, and its values, which share one backing array, do
// not overwrite each other when one is appended to.
func TestSafeHeadersCopiesAreSeparate(t *testing.T) {
	h := http.Header{"Accept": {"a1", "a2"}, "Date": {"d1"}, "Digest": {"g1"}, "Signature": {"s1"}}
	got := safeHeaders(h)
	h["Accept"][0] = "changed"
	for k := range got {
		got[k] = append(got[k], "appended to "+k)
	}
	want := http.Header{"Accept": {"a1", "a2", "appended to Accept"}, "Date": {"d1", "appended to Date"},
		"Digest": {"g1", "appended to Digest"}, "Signature": {"s1", "appended to Signature"}}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("safeHeaders then appends = %v, want %v", got, want)
	}
}

// TestLogOnDiskAfterInbox: what the inbox logs reaches activity.jsonl.
func TestLogOnDiskAfterInbox(t *testing.T) {
	f := newFixture(t, false)
	bob := remoteID("bob")
	f.deliver("/users/alice/inbox", "bob", likeJSON(bob))
	if err := f.in.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(f.state, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), fmt.Sprintf(`"actor":%q`, bob)) || !strings.Contains(string(b), `"verdict":"accepted"`) {
		t.Errorf("activity.jsonl = %s", b)
	}
}

// TestLogReachesDiskWhileOpen: entries reach activity.jsonl without the
// log closing, a burst in batches and a lone entry after a quiet spell
// alike, within a few commit intervals.
func TestLogReachesDiskWhileOpen(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, LogOptions{Dir: dir, Ring: 100})
	defer l.Close()
	lines := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, LogFile))
		return strings.Count(string(b), "\n")
	}
	waitFor := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for lines() < want {
			if time.Now().After(deadline) {
				t.Fatalf("activity.jsonl holds %d lines while open, want %d", lines(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	mixed(l, 500) // a burst
	waitFor(500)
	time.Sleep(10 * commitEvery) // quiet: the writer waits for the next entry
	l.Append(Entry{Direction: DirIn, Type: "Like"})
	waitFor(501)
}

// TestCompactBodyHint: the inbox's hint that a body is compact JSON holds
// only for a body logged as it came: a body the log cuts at its limit is
// written as a string, as without the hint, not embedded as JSON it no
// longer is; one it mends into UTF-8 goes through the writer's check (it
// stays compact JSON, so this row shows the line is the same, not which
// path made it).
func TestCompactBodyHint(t *testing.T) {
	const compact = `{"id":"https://a.test/1","type":"Like","content":"0123456789"}`
	tests := []struct {
		name  string
		body  string
		limit int // the log's body limit
		want  string
	}{
		// Logged whole: embedded as it is.
		{"whole", compact, 1 << 10, `,"body":` + compact + "}\n"},
		// Longer than the log's limit: cut, so a string.
		{"cut at the limit", compact, 40, `,"body":"{\"id\":\"https://a.test/1\",\"type\":\"Like\",\"","body_encoding":"string"}`},
		// Not UTF-8: mended with U+FFFD inside its string, still compact JSON.
		{"mended", `{"a":"` + "\xff" + `"}`, 1 << 10, `,"body":{"a":"` + "\uFFFD" + `"}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			written := func(hint bool) string {
				dir := t.TempDir()
				l := openLog(t, LogOptions{Dir: dir, Ring: 10, BodyBytes: tt.limit})
				l.appendEntry(Entry{Time: time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), Direction: DirIn, Body: tt.body}, hint)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(dir, LogFile))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			hinted, checked := written(true), written(false)
			if hinted != checked {
				t.Fatalf("with the hint:\n%s\nwithout it:\n%s", hinted, checked)
			}
			if !json.Valid([]byte(hinted)) || !strings.Contains(hinted, tt.want) {
				t.Fatalf("the line\n%s\nis not valid JSON holding %s", hinted, tt.want)
			}
		})
	}
}
