package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/internal/loopback"
	"github.com/crowdfed/crowd/loadrun"
)

// serveArgs is a small `crowd serve` on loopback ports of its own, state
// in state ("" for the default ./crowd-state), admin API at admin.
func serveArgs(state, admin string, more ...string) []string {
	args := []string{"serve", "--origins", "2", "--actors", "2", "--https", "127.0.0.1:0", "--http", "",
		"--dns", "", "--admin", admin}
	if state != "" {
		args = append(args, "--state", state)
	}
	return append(args, more...)
}

// backgroundServe runs `crowd serve` in this process until the test ends
// (or stop is called, which returns its exit status), and waits until its
// admin API answers. Its output is shown only if the test fails.
func backgroundServe(t *testing.T, args []string, admin string) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	stderr := keptStderr(t, "serve")
	go func() { code <- execute(ctx, args, nil, io.Discard, stderr) }()
	stopped := false
	var status int
	stop = func() int {
		if !stopped {
			stopped = true
			cancel()
			select {
			case status = <-code:
			case <-time.After(15 * time.Second):
				t.Error("serve did not stop within 15 s")
			}
		}
		return status
	}
	t.Cleanup(func() { stop() })
	waitAdmin(t, admin, code)
	return stop
}

// waitAdmin polls the admin API at admin until it answers, failing when
// the serve ends first (its status arrives on code) or after 30 s.
func waitAdmin(t *testing.T, admin string, code chan int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/api/world")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case c := <-code:
			code <- c
			t.Fatalf("serve ended with %d before its admin API answered", c)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admin API at %s did not answer: %v", admin, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// graphLines is a follow-graph journal of n valid lines.
func graphLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"op":"follower","local":"https://flood1.test/users/alice","remote":"https://sut.test/users/u%d","follow_id":"f%d","state":"accepted","since":"2026-01-01T00:00:00Z"}`, i, i)
	}
	return lines
}

// A bad line in the middle of graph.jsonl: serve refuses to start, names
// file:line, and leaves the journal byte-identical (it used to start, log
// nothing and cut the journal to the lines before it).
func TestServeRefusesADamagedFollowGraph(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	lines := graphLines(9)
	lines[4] = lines[4][:40] + "\x00\x00" + lines[4][42:]
	journal := []byte(strings.Join(lines, "\n") + "\n")
	path := filepath.Join(state, "graph.jsonl")
	os.WriteFile(path, journal, 0o600)
	// Bounded: a serve that starts anyway is stopped, and fails the test.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, _, stderr := runCLIContext(t, ctx, serveArgs(state, "127.0.0.1:0")...)
	if code == 0 || !strings.Contains(stderr, path+":5") || !strings.Contains(stderr, "sed -i '5d'") {
		t.Errorf("exit %d, stderr %q: want a refusal naming %s:5 and the repair", code, stderr, path)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, journal) {
		t.Errorf("the damaged journal changed: %d bytes → %d", len(journal), len(after))
	}
}

// A torn last line (a crash mid-append): serve starts, keeps every whole
// line, drops the torn one and says so, naming the file and line.
func TestServeDropsATornFollowGraphTail(t *testing.T) {
	t.Parallel()
	state, admin := t.TempDir(), loopback.Free(t)
	lines := graphLines(4)
	path := filepath.Join(state, "graph.jsonl")
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"+lines[0][:30]), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	codes, stderrs := make(chan int, 1), make(chan string, 1)
	go func() {
		code, _, stderr := runCLIContext(t, ctx, serveArgs(state, admin, "--log-level", "warn")...)
		stderrs <- stderr
		codes <- code
	}()
	waitAdmin(t, admin, codes)
	cancel()
	r := struct {
		code   int
		stderr string
	}{<-codes, <-stderrs}
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "torn last line") || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, `"line":5`) {
		t.Errorf("stderr %q: want the torn line logged with %s and line 5", r.stderr, path)
	}
	if after, _ := os.ReadFile(path); string(after) != strings.Join(lines, "\n")+"\n" {
		t.Errorf("journal after start: %q", after)
	}
}

// One process owns a state directory: a second serve, and a standalone
// flood, on the state of a running serve are refused, naming its pid and
// the directory.
func TestStateIsOwnedByOneProcess(t *testing.T) {
	t.Parallel()
	state, admin := t.TempDir(), loopback.Free(t)
	backgroundServe(t, serveArgs(state, admin, "--log-level", "error"), admin)
	pid := "pid " + strconv.Itoa(os.Getpid())
	for _, c := range []struct {
		name string
		args []string
	}{
		{"a second serve", serveArgs(state, loopback.Free(t), "--log-level", "error")},
		{"a standalone flood", standalone(state, t.TempDir(), "--seconds", "1")},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code == 0 || !strings.Contains(stderr, pid) || !strings.Contains(stderr, state) {
				t.Errorf("exit %d, stderr %q: want a refusal naming %s and %s", code, stderr, pid, state)
			}
		})
	}
}

// hashTree is a digest of every file under dir (path and content).
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		out[p] = hex.EncodeToString(sum[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The README's first two commands in one folder: `crowd serve`, then
// `crowd flood --standalone`. The flood runs on a state of its own and
// leaves the serve's untouched (it used to write 1 200 log entries with
// clashing seq and graph lines the serve never saw into it).
func TestStandaloneFloodBesideAServeKeepsItsOwnState(t *testing.T) {
	t.Chdir(t.TempDir())
	admin := loopback.Free(t)
	backgroundServe(t, serveArgs("", admin, "--log-level", "error"), admin)
	before := hashTree(t, "crowd-state")
	if len(before) == 0 {
		t.Fatal("the serve wrote no state in ./crowd-state")
	}
	code, stdout, stderr := runCLI(t, "flood", "--standalone", "--seconds", "1", "--rate", "20", "--origins", "2",
		"--actors", "2", "--mix", "create=1,follow=1", "--out", "out", "--log-level", "error")
	if code != 0 {
		t.Fatalf("standalone flood: exit %d\n%s\n%s", code, stdout, stderr)
	}
	after := hashTree(t, "crowd-state")
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the standalone flood changed the serve's state:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := os.Stat(filepath.Join(loadrun.StandaloneState, "graph.jsonl")); err != nil {
		t.Errorf("the standalone flood kept no state of its own in ./%s: %v", loadrun.StandaloneState, err)
	}
}

// adminJSON GETs path from the admin API at admin into v.
func adminJSON(t *testing.T, admin, path string, v any) {
	t.Helper()
	resp, err := http.Get("http://" + admin + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// sendOne has the serve at admin send a Create between its own actors,
// which logs entries.
func sendOne(t *testing.T, admin string) {
	t.Helper()
	resp, err := http.Post("http://"+admin+"/api/send", "application/json",
		strings.NewReader(`{"from":"alice@flood1.test","type":"Create","to":"https://flood2.test/users/bob"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// tailBacklog runs `crowd tail --backlog n` against admin and returns the
// n lines it prints first.
func tailBacklog(t *testing.T, admin string, n int) []string {
	t.Helper()
	tail := startTail(t, "--admin", admin, "--backlog", strconv.Itoa(n))
	var lines []string
	for range n {
		lines = append(lines, tail.next(t))
	}
	tail.wait(t, true)
	return lines
}

// After a restart, `crowd tail --backlog 10` shows the 10 entries it
// showed before, /api/activities and the totals hold what was logged
// before, and seq continues (the log used to come back empty at seq 1).
func TestServeRestartKeepsTheActivityLog(t *testing.T) {
	t.Parallel()
	state, admin := t.TempDir(), loopback.Free(t)
	args := serveArgs(state, admin, "--log-level", "error")
	stop := backgroundServe(t, args, admin)
	for range 7 {
		sendOne(t, admin)
	}
	var before []inbox.Entry
	waitFor(t, "the sends to be logged", func() bool {
		adminJSON(t, admin, "/api/activities?limit=100", &before)
		return len(before) == 14 // each Create: out sent, in accepted
	})
	var totalsBefore inbox.Totals
	adminJSON(t, admin, "/api/activities/totals", &totalsBefore)
	tailBefore := tailBacklog(t, admin, 10)
	if code := stop(); code != 0 {
		t.Fatalf("serve exit %d", code)
	}

	backgroundServe(t, args, admin)
	if tailAfter := tailBacklog(t, admin, 10); strings.Join(tailAfter, "\n") != strings.Join(tailBefore, "\n") {
		t.Errorf("tail --backlog 10 after the restart:\n%s\nbefore it:\n%s", strings.Join(tailAfter, "\n"), strings.Join(tailBefore, "\n"))
	}
	var after []inbox.Entry
	adminJSON(t, admin, "/api/activities?limit=100", &after)
	if len(after) != len(before) || after[len(after)-1].Seq != before[len(before)-1].Seq {
		t.Errorf("after the restart /api/activities holds %d entries up to seq %d, before it %d up to %d",
			len(after), after[len(after)-1].Seq, len(before), before[len(before)-1].Seq)
	}
	var totalsAfter inbox.Totals
	adminJSON(t, admin, "/api/activities/totals", &totalsAfter)
	if totalsAfter != totalsBefore || totalsAfter.Entries != uint64(len(before)) {
		t.Errorf("totals after the restart %+v, before it %+v (%d entries)", totalsAfter, totalsBefore, len(before))
	}
	last := before[len(before)-1].Seq
	sendOne(t, admin)
	waitFor(t, "the send after the restart to be logged", func() bool {
		adminJSON(t, admin, "/api/activities?limit=100", &after)
		return len(after) > len(before)
	})
	if got := after[len(before)].Seq; got != last+1 {
		t.Errorf("first seq after the restart = %d, want %d", got, last+1)
	}
}
