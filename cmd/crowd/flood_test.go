package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/internal/loopback"
)

// standalone is the command line of a small in-process self-flood writing
// its record to out, keys in state, plus more flags.
func standalone(state, out string, more ...string) []string {
	return append([]string{"flood", "--standalone", "--origins", "2", "--actors", "2", "--state", state, "--out", out,
		"--log-level", "error"}, more...)
}

// records reads every record in dir.
func records(t *testing.T, dir string) []*record.Record {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*record.Record
	for _, p := range paths {
		r, err := record.LoadRecord(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestFloodStandaloneSelfFlood(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	code, stdout, stderr := runCLIContext(t, context.Background(), standalone(state, out, "--seconds", "3", "--rate", "50", "--label", "self")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs := records(t, out)
	if len(recs) != 1 {
		t.Fatalf("%d records in --out", len(recs))
	}
	r := recs[0]
	o := r.Overall
	// The crowd's own inboxes verify every signature: each send is a 202.
	if o.Counts.Sent == 0 || o.Tally.Classes[record.Class202] != o.Counts.Sent || o.Tally.Classes[record.Class401] != 0 {
		t.Errorf("sent %d, tally %+v: want every send answered 202", o.Counts.Sent, o.Tally)
	}
	if r.Partial || r.Settings.Label != "self" || r.Settings.Mix != "create=6,like=3,follow=1" || r.Settings.Signing != "pipeline" ||
		!strings.Contains(r.Settings.Target, "self-flood: 4 crowd actors") {
		t.Errorf("record settings %+v, partial %v", r.Settings, r.Partial)
	}
	for _, typ := range []string{"Create", "Like", "Follow"} {
		if tr, ok := r.Types[typ]; !ok || tr.Counts.Sent == 0 {
			t.Errorf("no %s sent (types %v)", typ, r.TypeNames())
		}
	}
	// Every Create that left is listed in its sender's outbox, in the
	// flood's own state.
	ob, err := actors.OpenOutbox(state, actors.OutboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for o := 1; o <= 2; o++ {
		for a := range 2 {
			_, total := ob.Latest(fmt.Sprintf("https://flood%d.test/users/%s", o, actors.ActorName(a)))
			listed += total
		}
	}
	ob.Close()
	if sent := r.Types["Create"].Counts.Sent; int64(listed) != sent {
		t.Errorf("the outboxes list %d Creates, the flood sent %d", listed, sent)
	}
	md, err := os.ReadFile(filepath.Join(out, "runs.md"))
	if err != nil || !strings.Contains(string(md), "| self |") || !strings.Contains(string(md), r.FileName()) {
		t.Errorf("runs.md: %q, %v", md, err)
	}
	for _, want := range []string{"type", "Create", "all", "status: 202=", "record: " + filepath.Join(out, r.FileName())} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "t=1s") {
		t.Errorf("no live line on stderr:\n%s", stderr)
	}
}

// TestFloodFollowsOnlyNewPairs: the crowd's actors never send a Follow a
// server already has. Four actors make twelve follower/followed pairs; two
// runs of ten Follows each, on the same state, send at most twelve in all
// (the rest go out as Creates, and the second run says so, in its log,
// record, table and runs.md row).
func TestFloodFollowsOnlyNewPairs(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	follows := 0
	for run := 1; run <= 2; run++ {
		out := t.TempDir()
		code, stdout, stderr := runCLIContext(t, context.Background(), standalone(state, out,
			"--mix", "follow=1", "--max-sends", "10", "--seconds", "0", "--rate", "200", "--log-level", "warn")...)
		if code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", run, code, stdout, stderr)
		}
		r := records(t, out)[0]
		if r.Overall.Counts.Sent != 10 || r.Overall.Tally.Classes[record.Class202] != 10 {
			t.Errorf("run %d: sent %d, tally %+v; want 10 answered 202", run, r.Overall.Counts.Sent, r.Overall.Tally)
		}
		if tr, ok := r.Types["Follow"]; ok {
			follows += int(tr.Counts.Sent)
		}
		if run == 2 && !strings.Contains(stderr, "sent as Creates") {
			t.Errorf("run 2 did not say that Follows became Creates:\n%s", stderr)
		}
		// With a Follow-only mix every Create sent is a diverted Follow:
		// the record counts exactly those sent (not the drafts left in
		// the signing buffer), and the table and runs.md say so.
		creates := int64(0)
		if tr, ok := r.Types["Create"]; ok {
			creates = tr.Counts.Sent
		}
		if r.Deviations.FollowsDiverted != creates {
			t.Errorf("run %d: %d Follows diverted in the record, %d Creates sent", run, r.Deviations.FollowsDiverted, creates)
		}
		md, _ := os.ReadFile(filepath.Join(out, "runs.md"))
		if changed := strings.Contains(stdout, "CHANGED: ") && strings.Contains(string(md), "changed: "); changed != (creates > 0) {
			t.Errorf("run %d: %d diverted, table and row say so: %v\n%s\n%s", run, creates, changed, stdout, md)
		}
	}
	if follows > 12 {
		t.Errorf("%d Follows in two runs among four actors: some pair was followed twice", follows)
	}
}

func TestFloodExitCodes(t *testing.T) {
	t.Parallel()
	// The rows run one after another on one state: side by side (a state
	// each) they did not make CI's unit phase shorter among the other
	// packages' floods.
	state := t.TempDir()
	// A file where --out wants a directory: found before the first send.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		say  string // in stderr
	}{
		{"gates met", []string{"--seconds", "1", "--rate", "20", "--expect", "errors<50%", "--expect", "p99<1m"}, 0, ""},
		{"a gate missed", []string{"--seconds", "1", "--rate", "20", "--expect", "p99<1ns", "--expect", "errors<50%"}, 1, "1 expectation missed: latency.p99<1ns"},
		{"a gate that is nonsense", []string{"--expect", "nonsense"}, 2, "--expect"},
		{"an unknown activity type", []string{"--mix", "x=1"}, 2, "--mix"},
		{"a bad rate", []string{"--rate", "fast"}, 2, "--rate"},
		{"rate and ramp", []string{"--rate", "5", "--ramp", "1:3:1"}, 2, "--ramp"},
		{"a bad signing mode", []string{"--signing", "later"}, 2, "--signing"},
		// Each client floods the in-process crowd over TLS, every send answered.
		{"the fast client", []string{"--seconds", "1", "--rate", "20", "--client", "fast", "--expect", "errors<1%"}, 0, ""},
		{"the net/http client", []string{"--seconds", "1", "--rate", "20", "--client", "nethttp", "--expect", "errors<1%"}, 0, ""},
		// A client the flood does not have is a usage error naming the flag.
		{"a bad client", []string{"--client", "curl"}, 2, "--client"},
		// The dispatcher's thread under the normal policy, as asked; a
		// priority the flood does not have is a usage error.
		{"a normal-priority dispatcher", []string{"--seconds", "1", "--rate", "20", "--dispatcher-priority", "normal", "--expect", "errors<1%"}, 0, ""},
		{"a real-time dispatcher asked for outright", []string{"--seconds", "1", "--rate", "20", "--dispatcher-priority", "realtime", "--expect", "errors<1%"}, 0, ""},
		{"a bad dispatcher priority", []string{"--dispatcher-priority", "high"}, 2, "--dispatcher-priority"},
		{"zipf of 1", []string{"--zipf", "1"}, 2, "--zipf"},
		// Two origins leave shard 2 of 3 with none: a usage error naming --shard, not the inbox's "no world".
		{"more shards than origins", []string{"--shard", "2/3", "--seconds", "1", "--rate", "5"}, 2, "--shard 2/3: shard 2 of 3 holds no origin of the 2 (--origins)"},
		// A persona of an origin another shard serves: refused before any lookup of its host.
		{"a persona of another shard's origin", []string{"--shard", "1/2", "--persona", "alice@flood1.test", "--seconds", "1", "--rate", "5"}, 2,
			"persona alice@flood1.test: flood1.test is an origin of shard 0/2 of the crowd's world, and the in-process crowd serves shard 1/2 (flood2.test)"},
		// A share of forgeries with nothing to forge would do nothing.
		{"tamper-share without tamper", []string{"--tamper-share", "0.2"}, 2, "give --tamper too"},
		// A preset's share is no mistake of the user's when --tamper= takes its forgeries away.
		{"a preset's tamper-share, its forgeries taken away", []string{"--scenario", "forgery", "--tamper=", "--seconds", "1", "--rate", "5", "--expect", "errors<50%"}, 0, ""},
		// So would a settle with no forgery to look for, and a linger of metrics never served.
		{"forgery-settle without tamper", []string{"--forgery-settle", "-1s"}, 2, "--forgery-settle is the wait"},
		{"metrics-linger without metrics-addr", []string{"--metrics-linger", "15s"}, 2, "give --metrics-addr too"},
		// A rung's length with no ladder, the media's shape with no media sent, a thread's depth with no reply, a grace with no count.
		{"step without a ladder", []string{"--rate", "20", "--step", "1s"}, 2, "--step is each ladder rung's length"},
		{"media-count without media", []string{"--media-count", "3"}, 2, "--media-count shapes the media sends: give media in --mix"},
		{"reply-depth without reply", []string{"--mix", "create=1", "--reply-depth", "3"}, 2, "--reply-depth shapes the reply sends"},
		{"fetchback-grace without fetchback", []string{"--fetchback=false", "--fetchback-grace", "1s"}, 2, "--fetchback-grace is how long"},
		// A client API with no token to post through it; tokens with no persona to post as (a self-flood).
		{"post-api without post-token", []string{"--persona", "a@sut.test", "--post-api", "https://sut.test"}, 2, "--post-api is the client API --post-token posts through"},
		{"post-token in a self-flood", []string{"--post-token", "alice=t"}, 2, "--post-token posts as the SUT's personas"},
		// … and taken where the mix has what they shape, a scenario's mix included.
		{"media-count with a media scenario", []string{"--scenario", "media", "--media-count", "2", "--seconds", "1", "--rate", "5", "--expect", "errors<50%"}, 0, ""},
		{"reply-depth with a thread scenario", []string{"--scenario", "thread", "--reply-depth", "3", "--seconds", "1", "--rate", "5", "--expect", "errors<50%"}, 0, ""},
		{"a nice value out of range", []string{"--signer-nice", "20"}, 2, "--signer-nice"},
		{"a nice value that is a word", []string{"--signer-nice", "low"}, 2, "--signer-nice"},
		// The signers lowered as asked, and following a normal-priority
		// dispatcher (to 19), as the record's part says (every run with
		// exit 0 checks it: under auto, 0 beside a real-time dispatcher);
		// the threads' values are TestAutoPipelineFollowsTheDispatcher's
		// (flood/traffic).
		{"signers at 19", []string{"--seconds", "1", "--rate", "20", "--signer-nice", "19", "--expect", "errors<1%"}, 0, ""},
		{"signers following a normal-priority dispatcher", []string{"--seconds", "1", "--rate", "20", "--signer-nice", "auto", "--dispatcher-priority", "normal", "--expect", "errors<1%"}, 0, ""},
		{"count without personas", []string{"--count", "3"}, 2, "--personas"},
		{"personas without count", []string{"--personas", "load%d@sut.test"}, 2, "--count"},
		{"a bad persona", []string{"--persona", "nobody"}, 2, "--persona"},
		{"stop-when without a ladder", []string{"--stop-when", "p95>1s"}, 2, "ladder"},
		{"presign beyond the Date's shelf life", []string{"--signing", "presign", "--seconds", "3600"}, 2, "Date"},
		{"presign whose max-sends outlast the Date", []string{"--signing", "presign", "--seconds", "0", "--max-sends", "400000", "--rate", "100"}, 2, "Date"},
		{"max-sends with a ladder", []string{"--rate", "1,2", "--max-sends", "5"}, 2, "--max-sends"},
		{"seconds with a ladder", []string{"--rate", "1,2", "--seconds", "5"}, 2, "--seconds"},
		{"an --out that cannot be written", []string{"--seconds", "1", "--rate", "5", "--out", filepath.Join(notDir, "load")}, 2, "--out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := runCLIContext(t, context.Background(), standalone(state, out, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.say) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)\nstdout:\n%s", code, c.code, stderr, c.say, stdout)
			}
			if c.code == 2 && len(records(t, out)) != 0 {
				t.Error("a usage error wrote a record")
			}
			if c.code < 2 && !strings.Contains(stdout, "expect ") {
				t.Errorf("the gates are not reported:\n%s", stdout)
			}
			if c.code == 0 {
				// The record's part says how the dispatcher's thread ran:
				// real-time unless refused (and then why), or as asked.
				recs := records(t, out)
				if len(recs) != 1 || len(recs[0].Parts) != 1 || recs[0].Parts[0].Dispatcher == nil {
					t.Fatalf("the record has no dispatcher in its part: %+v", recs)
				}
				d := *recs[0].Parts[0].Dispatcher
				// auto, the default, is realtime at these rates.
				asked, want := "auto", "deadline"
				switch {
				case slices.Contains(c.args, "normal"):
					asked, want = "normal", "other"
				case slices.Contains(c.args, "realtime"):
					asked = "realtime"
				}
				// fifo where the kernel had no deadline bandwidth left
				// (other tests' floods may hold it).
				ran := d.Policy == want || (asked != "normal" && d.Policy == "fifo")
				if asked != "normal" && !ran {
					// refused, and why; never auto's choice at these rates
					ran = d.Policy == "other" && d.Refused != "" && !strings.HasPrefix(d.Refused, "auto:")
				}
				if asked == "normal" && d.Refused != "" {
					ran = false
				}
				switch {
				case d.Priority != asked:
					t.Errorf("the record's dispatcher is %+v; want %s asked", d, asked)
				case runtime.GOOS == "linux" && (d.TimerSlackNs != 1 || !ran):
					t.Errorf("the record's dispatcher is %+v; want a 1 ns slack and the %q policy (or why not)", d, want)
				}
				// The pipeline's signers, by the dispatcher unless set.
				wantNice := traffic.SignerNiceBeside(d)
				if i := slices.Index(c.args, "--signer-nice"); i >= 0 && c.args[i+1] != "auto" {
					wantNice, _ = strconv.Atoi(c.args[i+1])
				}
				if n := recs[0].Parts[0].SignerNice; n == nil || *n != wantNice {
					t.Errorf("the record's signer nice is %v beside a dispatcher under %q; want %d", n, d.Policy, wantNice)
				}
			}
			if i := slices.Index(c.args, "--client"); i >= 0 && c.code == 0 {
				// The record's part names the client that sent.
				if recs := records(t, out); len(recs) != 1 || len(recs[0].Parts) != 1 || recs[0].Parts[0].Client != c.args[i+1] {
					t.Errorf("the record does not say the %s client sent: %+v", c.args[i+1], recs)
				}
			}
		})
	}
}

func TestFloodInterruptedWritesAPartialRecord(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once the run is well under way: its first checkpoint
		// (after 5 s of sending) is on disk. A fixed sleep would race the
		// world's start-up on a loaded machine.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(out, "*.json")); len(m) > 0 {
				break
			}
		}
		cancel()
	}()
	start := time.Now()
	code, stdout, stderr := runCLIContext(t, ctx, standalone(state, out, "--seconds", "60", "--rate", "20")...)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInterrupted, stdout, stderr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("an interrupted 60 s run took %v", d)
	}
	recs := records(t, out)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if !r.Partial || r.PartialReason != "interrupted" || r.Overall.Counts.Sent == 0 {
		t.Errorf("record partial=%v (%q), sent %d: want a partial record of what was sent", r.Partial, r.PartialReason, r.Overall.Counts.Sent)
	}
	md, _ := os.ReadFile(filepath.Join(out, "runs.md"))
	if !strings.Contains(string(md), "partial: interrupted") || !strings.Contains(stdout, "PARTIAL") {
		t.Errorf("the partial run is not marked: runs.md %q\nstdout:\n%s", md, stdout)
	}
}

func TestFloodLadderPrintsARowPerRung(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	code, stdout, stderr := runCLIContext(t, context.Background(), standalone(state, out,
		"--rate", "20,40", "--step", "1s", "--warmup", "500ms", "--label", "steps")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && (f[0] == "20" || f[0] == "40") {
			rows[f[0]] = true
		}
	}
	if !rows["20"] || !rows["40"] || !strings.Contains(stdout, "offered/s") {
		t.Errorf("want a row for 20 and for 40 under a header:\n%s", stdout)
	}
	recs := records(t, out)
	if len(recs) != 2 {
		t.Fatalf("%d records, want one per rung", len(recs))
	}
	for _, r := range recs {
		if r.Settings.Warmup != 500*time.Millisecond || r.Settings.Duration != 1500*time.Millisecond ||
			r.Overall.Tally.Classes[record.Class202] != r.Overall.Counts.Sent || !strings.HasPrefix(r.Settings.Label, "steps-") {
			t.Errorf("rung record %+v, sent %d, tally %+v", r.Settings, r.Overall.Counts.Sent, r.Overall.Tally)
		}
	}
}

func TestFloodRefusesAPublicTargetWithoutSending(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	// An IP literal is checked without any lookup; the refusal comes
	// before the persona's WebFinger, so nothing is sent anywhere.
	for _, persona := range []string{"acct:x@8.8.8.8", "acct:x@[2001:4860::8888]"} {
		code, stdout, stderr := runCLIContext(t, context.Background(), standalone(state, out, "--persona", persona, "--seconds", "1")...)
		if code != 2 || !strings.Contains(stderr, "public address") || !strings.Contains(stderr, "--allow-public-target") {
			t.Errorf("%s: exit %d, stderr %q\nstdout:\n%s", persona, code, stderr, stdout)
		}
	}
	if len(records(t, out)) != 0 {
		t.Error("a refused flood wrote a record")
	}
}

// TestFloodWithoutACrowdSaysWhatToDo: no crowd at --admin is said with
// the two ways out, and the --out the flood never used is not left behind.
func TestFloodWithoutACrowdSaysWhatToDo(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out", "load")
	code, _, stderr := runCLIContext(t, context.Background(), "flood", "--admin", loopback.Free(t), "--state", t.TempDir(), "--seconds", "1", "--out", out)
	if code != 1 || !strings.Contains(stderr, "crowd serve") || !strings.Contains(stderr, "--standalone") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Dir(out)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the unused --out's parent: %v, want it gone", err)
	}
}

// TestFloodAttachedToARunningCrowd floods a `crowd serve` running in this
// process through its admin API: the flood borrows its keys, every send is
// accepted, and the Follows it registered are accepted in the crowd's graph
// (the Accepts came back to the serving crowd and found them).
func TestFloodAttachedToARunningCrowd(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	admin, https := loopback.Free(t), loopback.Free(t)
	serveInBackground(t, "--state", state, "--origins", "2", "--actors", "2", "--https", https,
		"--http", "", "--dns", "", "--admin", admin, "--log-level", "error")
	var info adminapi.WorldInfo
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + adminapi.RouteWorld.Path())
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&info)
			resp.Body.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("crowd serve did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Without --crowd-https the crowd's own origins are reached at the
	// listener its admin API gives (this machine's resolver, which does
	// not know their names, is not asked): a self-flood and a persona of
	// the crowd's own are both accepted.
	for _, who := range [][]string{nil, {"--persona", "acct:alice@flood1.test"}} {
		advertised := t.TempDir()
		code, stdout, stderr := runCLIContext(t, context.Background(), append([]string{"flood", "--admin", admin, "--state", state,
			"--seconds", "1", "--rate", "10", "--out", advertised, "--log-level", "error"}, who...)...)
		if code != 0 {
			t.Errorf("%q without --crowd-https: exit %d\nstdout:\n%s\nstderr:\n%s", who, code, stdout, stderr)
			continue
		}
		for _, r := range records(t, advertised) {
			if o := r.Overall; o.Counts.Sent == 0 || o.Tally.Classes[record.Class202] != o.Counts.Sent {
				t.Errorf("%q without --crowd-https: sent %d, tally %+v: want every send accepted", who, o.Counts.Sent, o.Tally)
			}
		}
	}
	// A --crowd-https where nothing listens, or where the crowd's admin
	// API answers (not TLS): said before the run, a set-up to mend (2),
	// not a run of connection errors.
	for _, c := range []struct{ addr, say string }{{loopback.Free(t), "nothing answers there"}, {admin, "it answers, but not as this crowd's HTTPS"}} {
		if code, _, stderr := runCLIContext(t, context.Background(), "flood", "--admin", admin, "--state", state, "--crowd-https", c.addr,
			"--seconds", "1", "--rate", "10", "--out", out, "--log-level", "error"); code != 2 || !strings.Contains(stderr, c.say) {
			t.Errorf("--crowd-https %s: exit %d, stderr %q; want 2 saying %q", c.addr, code, stderr, c.say)
		}
	}
	code, stdout, stderr := runCLIContext(t, context.Background(), "flood", "--admin", admin, "--state", state, "--crowd-https", https,
		"--seconds", "2", "--rate", "30", "--mix", "create=1,follow=1", "--out", out, "--log-level", "error")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs := records(t, out)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	o := recs[0].Overall
	if o.Counts.Sent == 0 || o.Tally.Classes[record.Class202] != o.Counts.Sent {
		t.Errorf("sent %d, tally %+v: want every send accepted", o.Counts.Sent, o.Tally)
	}
	// The Accepts of the registered Follows make accepted followings.
	deadline = time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + adminapi.RouteWorld.Path())
		if err != nil {
			t.Fatal(err)
		}
		var w adminapi.WorldInfo
		json.NewDecoder(resp.Body).Decode(&w)
		resp.Body.Close()
		following := 0
		for _, o := range w.Origins {
			for _, a := range o.Actors {
				following += a.Following
			}
		}
		if following > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no Follow the flood sent became an accepted following of the running crowd")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Another state dir holds other keys: refused, naming --state.
	other := t.TempDir()
	os.MkdirAll(filepath.Join(other, "keys"), 0o700)
	code, _, stderr = runCLIContext(t, context.Background(), "flood", "--admin", admin, "--state", other, "--seconds", "1", "--out", out)
	if code != 2 || !strings.Contains(stderr, "--state") {
		t.Errorf("foreign keys: exit %d, stderr %q", code, stderr)
	}

	// With the first origin down (its handshakes reset), the listener is
	// still found by the other origin's name: the flood runs, and meets
	// the weather it did not set.
	if code, _, stderr := runCLI(t, "weather", "set", "down=flood1.test", "--admin", admin); code != 0 {
		t.Fatalf("weather set: exit %d: %s", code, stderr)
	}
	downOut := t.TempDir()
	code, stdout, stderr = runCLIContext(t, context.Background(), "flood", "--admin", admin, "--state", state,
		"--seconds", "1", "--rate", "10", "--out", downOut, "--log-level", "error", "--expect", "ambient_weather==1")
	if code != 0 {
		t.Errorf("a self-flood with the first origin down: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// A lookup of the down origin's actor is served inside the crowd, as
	// healthy, and says the weather it did not meet; the other origin's
	// says nothing of it.
	for _, c := range []struct {
		acct string
		note bool
	}{{"acct:alice@flood1.test", true}, {"acct:alice@flood2.test", false}} {
		code, stdout, stderr := runCLI(t, "lookup", c.acct, "--admin", admin)
		noted := strings.Contains(stdout, "note: flood1.test is down in the crowd's weather")
		if code != 0 || noted != c.note {
			t.Errorf("lookup %s under down=flood1.test: exit %d, noted %v (want %v)\n%s%s", c.acct, code, noted, c.note, stdout, stderr)
		}
	}
}

// TestFloodNamedPersonas floods personas that must be discovered: here
// actors of the in-process crowd itself, looked up like any SUT's
// (WebFinger, a signed actor fetch, the outbox). Their outboxes are empty,
// so Likes of them are disabled with a warning.
func TestFloodNamedPersonas(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	code, stdout, stderr := runCLIContext(t, context.Background(), standalone(state, out, "--persona", "acct:alice@flood1.test",
		"--persona", "bob@flood2.test", "--inbox", "personal", "--seconds", "2", "--rate", "30", "--log-level", "warn")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, who := range []string{"alice@flood1.test", "bob@flood2.test"} {
		if !strings.Contains(stderr, who+" has no posts") {
			t.Errorf("no warning that %s has no posts:\n%s", who, stderr)
		}
	}
	r := records(t, out)[0]
	if _, liked := r.Types["Like"]; liked || r.Overall.Tally.Classes[record.Class202] != r.Overall.Counts.Sent || r.Overall.Counts.Sent == 0 {
		t.Errorf("types %v, sent %d, tally %+v: want Creates and Follows only, all accepted", r.TypeNames(), r.Overall.Counts.Sent, r.Overall.Tally)
	}
	if !strings.Contains(r.Settings.Target, "2 personas (alice@flood1.test … bob@flood2.test), inbox personal") {
		t.Errorf("target %q", r.Settings.Target)
	}
}

// TestFloodLadderRecordsTheRungsItSkipped: a ladder that stops at its
// shoulder says, in the shoulder's record and table, which rungs it did
// not run, so a reader does not take the ladder for the whole range.
func TestFloodLadderRecordsTheRungsItSkipped(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	// p50>=0s holds on any rung: the first is the shoulder.
	code, stdout, stderr := runCLIContext(t, context.Background(), standalone(state, out,
		"--rate", "20,40,60", "--step", "1s", "--stop-when", "p50>=0s", "--label", "skip")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	recs := records(t, out)
	if len(recs) != 1 {
		t.Fatalf("%d records, want the shoulder's only", len(recs))
	}
	if got := recs[0].Deviations.RungsSkipped; len(got) != 2 || got[0] != 40 || got[1] != 60 {
		t.Errorf("rungs skipped %v, want [40 60]", got)
	}
	runs, err := os.ReadFile(filepath.Join(out, "runs.md"))
	if err != nil || !strings.Contains(string(runs), "2 rungs skipped") {
		t.Errorf("runs.md row does not say the rungs skipped (%v):\n%s", err, runs)
	}
}
