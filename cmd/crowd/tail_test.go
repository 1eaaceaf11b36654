package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/internal/crowdtest"
	"github.com/crowdfed/crowd/internal/loopback"
)

// tailRun is a `crowd tail` running in the background.
type tailRun struct {
	lines  chan string // its stdout, line by line; closed when it ends
	cancel context.CancelFunc
	code   chan int
	finish func() string // what it wrote to stderr
}

// startTail runs `crowd tail args…` as main would, in the background.
func startTail(t *testing.T, args ...string) *tailRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	var stderr crowdtest.SyncBuffer
	r := &tailRun{lines: make(chan string, 100), cancel: cancel, code: make(chan int, 1), finish: stderr.String}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	go func() {
		code := execute(ctx, append([]string{"tail"}, args...), nil, w, &stderr)
		w.Close()
		r.code <- code
	}()
	t.Cleanup(func() { cancel() })
	return r
}

// next returns the next line the tail prints, failing after 10 s.
func (r *tailRun) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			t.Fatal("the tail's output ended")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line from the tail within 10 s")
	}
	return ""
}

// wait returns the tail's exit status and stderr once it has ended
// (failing after 10 s), having cancelled it first when stop is set, as
// Ctrl-C would.
func (r *tailRun) wait(t *testing.T, stop bool) (int, string) {
	t.Helper()
	if stop {
		r.cancel()
	}
	select {
	case code := <-r.code:
		return code, r.finish()
	case <-time.After(10 * time.Second):
		r.finish()
		t.Fatal("the tail did not end within 10 s")
	}
	return 0, ""
}

// followAndWait has alice@flood1.test follow bob@flood2.test and waits
// until the log holds all four entries: Follow out and in, Accept out
// and in.
func followAndWait(t *testing.T, c *testCrowd) {
	t.Helper()
	_, err := c.inbox.SendActivity(context.Background(), adminapi.SendRequest{From: "alice@flood1.test", Type: "Follow", To: "https://flood2.test/users/bob"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Accept to be logged", func() bool {
		return len(c.inbox.Log().Latest(10, inbox.Filter{Type: "Accept", Direction: inbox.DirIn})) == 1
	})
}

func TestTailFollowsTheLogLive(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	followAndWait(t, c)

	tail := startTail(t, "--admin", c.admin, "--backlog", "10")
	var backlog []string
	for range 4 {
		backlog = append(backlog, tail.next(t))
	}
	all := strings.Join(backlog, "\n")
	for _, want := range []string{
		"in  Follow         alice@flood1.test → bob@flood2.test  accepted 202",
		"out Follow         alice@flood1.test → bob@flood2.test  sent 202",
		"out Accept(Follow) bob@flood2.test → alice@flood1.test  delivered 202",
		"in  Accept(Follow) bob@flood2.test → alice@flood1.test  accepted 202",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the backlog lacks %q:\n%s", want, all)
		}
	}

	// Live: a Create sent now shows up while the tail runs.
	if _, err := c.inbox.SendActivity(context.Background(), adminapi.SendRequest{From: "bob@flood2.test", Type: "Create", To: "acct:alice@flood1.test"}); err != nil {
		t.Fatal(err)
	}
	live := tail.next(t) + "\n" + tail.next(t)
	if strings.Count(live, "Create(Note)   bob@flood2.test → ") != 2 {
		t.Errorf("the live Create is not shown in and out:\n%s", live)
	}

	// Ctrl-C ends it cleanly.
	if code, errOut := tail.wait(t, true); code != 0 {
		t.Errorf("exit %d after Ctrl-C, want 0; stderr %q", code, errOut)
	}
}

func TestTailFiltersAndPrintsJSON(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	followAndWait(t, c)
	tail := startTail(t, "--admin", c.admin, "--json", "--type", "accept", "--direction", "in", "--actor", "alice@flood1.test")
	var e inbox.Entry
	if err := json.Unmarshal([]byte(tail.next(t)), &e); err != nil {
		t.Fatal(err)
	}
	if e.Type != "Accept" || e.Direction != inbox.DirIn || e.Verdict != inbox.VerdictAccepted || e.Body == "" || len(e.Headers) == 0 {
		t.Errorf("entry %+v: want the whole incoming Accept", e)
	}
	code, _ := tail.wait(t, true)
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	for l := range tail.lines {
		t.Errorf("a line that does not pass the filter: %s", l)
	}
}

func TestTailSaysWhenTheStreamEnds(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	followAndWait(t, c)
	tail := startTail(t, "--admin", c.admin, "--backlog", "1")
	tail.next(t) // connected
	c.stop()
	code, errOut := tail.wait(t, false)
	if code != 1 || !strings.Contains(errOut, "the activity stream of the crowd at "+c.admin+" (--admin) ended") {
		t.Errorf("exit %d, stderr %q; want 1 and why", code, errOut)
	}
}

// TestTailTellsOfLostEntries plays a stream whose server dropped entries
// for this client: the tail says how many, in place (on stderr with
// --json, so that stdout stays JSON lines).
func TestTailTellsOfLostEntries(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/activities/stream" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": ping\n\n")
		io.WriteString(w, "event: lost\ndata: {\"lost\":3}\n\n")
		fmt.Fprintf(w, "id: 9\nevent: activity\ndata: %s\n\n",
			`{"seq":9,"time":"2026-01-02T03:04:05Z","direction":"in","type":"Like","actor":"https://sut.test/users/ann","local":"https://flood1.test/users/alice","verdict":"accepted","status":202}`)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name       string
		json       bool
		stdoutLost bool   // the notice goes to stdout (else stderr)
		activity   string // how stdout shows the activity
	}{
		// Readable: the notice is a line among the others, where the gap is.
		{"readable", false, true, "ann@sut.test → alice@flood1.test"},
		// JSON lines: stdout must stay parseable, the notice goes to stderr.
		{"json", true, false, `"actor":"https://sut.test/users/ann"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"tail", "--admin", addr}
			if tc.json {
				args = append(args, "--json")
			}
			code, out, errOut := runCLI(t, args...)
			if code != 1 || !strings.Contains(errOut, "ended") {
				t.Errorf("exit %d, stderr %q: the stream's end must be told (exit 1)", code, errOut)
			}
			notice := "3 entries lost here"
			if got := strings.Contains(out, notice); got != tc.stdoutLost {
				t.Errorf("stdout has the notice: %v, want %v\n%s", got, tc.stdoutLost, out)
			}
			if got := strings.Contains(errOut, notice); got == tc.stdoutLost {
				t.Errorf("stderr has the notice: %v, want %v\n%s", got, !tc.stdoutLost, errOut)
			}
			if !strings.Contains(out, tc.activity) {
				t.Errorf("the activity is missing:\n%s", out)
			}
		})
	}
}

func TestTailRejectsBadInput(t *testing.T) {
	t.Parallel()
	down := loopback.Free(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		// Usage errors name their flag (2).
		{"bad --direction", []string{"--direction", "sideways"}, 2, "--direction"},
		// A type as the lines show it with its object's: it would match nothing.
		{"a type with its object's", []string{"--type", "Accept(Follow)"}, 2, `--type "Accept(Follow)": a line's Accept(Follow) names the activity, then its object's type in parentheses; give --type Accept`},
		{"negative --backlog", []string{"--backlog", "-1"}, 2, "--backlog"},
		{"--backlog not a number", []string{"--backlog", "lots"}, 2, "--backlog"},
		{"a positional argument", []string{"alice"}, 2, "no arguments"},
		// No crowd to follow (1), and what to do about it.
		{"no crowd", []string{"--admin", down}, 1, "no crowd serve answers at " + down + " (--admin): start one with `crowd serve`"},
		// A type no server sends is told at once, not waited for in silence.
		{"a misspelt type", []string{"--admin", down, "--type", "Accept,Folow"}, 1, `crowd tail: --type "Folow" is no ActivityStreams activity type; waiting for it all the same (did you mean Follow?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, append([]string{"tail"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.say) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, errOut, tc.code, tc.say)
			}
		})
	}
	// A misspelt crowd actor would match nothing, and the tail wait
	// forever: the crowd refuses it (2), naming the flag and the names the
	// host has.
	c := startTestCrowd(t)
	code, _, errOut := runCLI(t, "tail", "--admin", c.admin, "--actor", "alcie@flood1.test")
	for _, want := range []string{`--actor="alcie@flood1.test"`, `no actor "alcie"`, "actors: alice, bob"} {
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("a misspelt actor: exit %d, stderr %q; want exit 2 naming %q", code, errOut, want)
		}
	}
}

func TestUnknownTypeWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ  string
		want string // "" for no warning
	}{
		{"Follow", ""},     // a known type
		{"emojireact", ""}, // any case: the filter folds case
		{"", ""},           // an empty item of the list
		{"Folow", `--type "Folow" is no ActivityStreams activity type; waiting for it all the same (did you mean Follow?)`},           // a letter missing
		{"Annnounce", `--type "Annnounce" is no ActivityStreams activity type; waiting for it all the same (did you mean Announce?)`}, // a letter too many
		{"Note", `--type "Note" is no ActivityStreams activity type; waiting for it all the same`},                                    // an object type: nothing near enough to suggest
		{"Bite", `--type "Bite" is no ActivityStreams activity type; waiting for it all the same`},                                    // a server's own type: shown should it come
	} {
		if got := unknownTypeWarning(tc.typ); got != tc.want {
			t.Errorf("unknownTypeWarning(%q) = %q, want %q", tc.typ, got, tc.want)
		}
	}
}

func TestEntryLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 60e6, time.Local)
	for _, tc := range []struct {
		name string
		e    inbox.Entry
		want string
	}{
		// A verified Follow into a crowd actor's inbox.
		{"incoming", inbox.Entry{Time: at, Direction: "in", Type: "Follow", Actor: "https://sut.test/users/ann",
			Local: "https://flood1.test/users/alice", Verdict: "accepted", Status: 202, DurationMS: 2.345, Note: "follower recorded"},
			"03:04:05.060 in  Follow         ann@sut.test → alice@flood1.test  accepted 202 2.3ms  follower recorded"},
		// A rejection: no parsable body, the keyId names the sender; the
		// reason is kept on one line.
		{"rejected", inbox.Entry{Time: at, Direction: "in", KeyID: "https://sut.test/ap/ann#key", URL: "flood1.test/inbox",
			Verdict: "rejected", Status: 401, DurationMS: 12.6, Reason: "signature:\nbad"},
			"03:04:05.060 in  ?              sut.test/ap/ann → flood1.test/inbox  rejected 401 13ms  signature: bad"},
		// A retried delivery: the object type, the attempt, no status.
		{"retrying", inbox.Entry{Time: at, Direction: "out", Type: "Accept", ObjectType: "Follow", Actor: "https://flood1.test/users/alice",
			To: "https://sut.test/users/ann", Verdict: "retrying", Attempt: 3, Reason: "dial tcp: refused"},
			"03:04:05.060 out Accept(Follow) alice@flood1.test → ann@sut.test  retrying --- - attempt 3  dial tcp: refused"},
		// A shared inbox with no known recipient: the inbox URL stands in.
		{"shared inbox", inbox.Entry{Time: at, Direction: "in", Type: "Create", ObjectType: "Note", Actor: "https://flood2.test/users/bob",
			URL: "flood1.test/inbox", Verdict: "accepted", Status: 202},
			"03:04:05.060 in  Create(Note)   bob@flood2.test → flood1.test/inbox  accepted 202 -"},
		// A delivery the origin's weather answered instead of the inbox: marked with the
		// condition and the crowd's answer.
		{"flaky", inbox.Entry{Time: at, Direction: "in", Method: "POST", Type: "Like", Actor: "https://sut.test/users/ann", URL: "flood1.test/inbox",
			Weather: "flaky:0.3", Verdict: "rejected", Status: 503, DurationMS: 0.4, Reason: "the origin is flaky:0.3: answered 503"},
			"03:04:05.060 in  Like           ann@sut.test → flood1.test/inbox  [flaky 503] rejected 503 0.4ms  the origin is flaky:0.3: answered 503"},
		// A reset or a black hole's hold: no answer at all.
		{"blackhole", inbox.Entry{Time: at, Direction: "in", Method: "POST", Type: "Like", Actor: "https://sut.test/users/ann", URL: "flood1.test/inbox",
			Weather: "blackhole", Verdict: "rejected", DurationMS: 10000},
			"03:04:05.060 in  Like           ann@sut.test → flood1.test/inbox  [blackhole no answer] rejected --- 10000ms"},
		// A slow origin's wait before the inbox answered.
		{"slow", inbox.Entry{Time: at, Direction: "in", Method: "POST", Type: "Like", Actor: "https://sut.test/users/ann", URL: "flood1.test/inbox",
			Weather: "slow:30s:0.5", WeatherHeldMS: 30000.2, Verdict: "accepted", Status: 202, DurationMS: 30001},
			"03:04:05.060 in  Like           ann@sut.test → flood1.test/inbox  [slow +30.0s] accepted 202 30001ms"},
		// A connection the weather reset before any request was read: the host, the
		// condition, what happened on the wire and the client.
		{"refused", inbox.Entry{Time: at, Direction: "in", URL: "flood3.test", Remote: "127.0.0.1:50412", Weather: "down",
			Verdict: "rejected", Reason: "connection reset: the origin is down"},
			"03:04:05.060 in  flood3.test  refused (down): connection reset: the origin is down  from 127.0.0.1:50412"},
		// A lookup the lapse refused, its querier unknown: no "from".
		{"refused lookup", inbox.Entry{Time: at, Direction: "in", URL: "flood4.test", Weather: "nxdomain",
			Verdict: "rejected", Reason: "NXDOMAIN: the domain has lapsed"},
			"03:04:05.060 in  flood4.test  refused (nxdomain): NXDOMAIN: the domain has lapsed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := entryLine(&tc.e); got != tc.want {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
