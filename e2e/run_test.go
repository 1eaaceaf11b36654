package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runRecord is the part of a `crowd run` record this test reads.
type runRecord struct {
	Schema  string    `json:"schema"`
	Partial bool      `json:"partial"`
	End     time.Time `json:"end"`
	Types   map[string]struct {
		Tally map[string]int64 `json:"tally"`
	} `json:"types"`
	Run struct {
		Schema string `json:"schema"`
		Setup  struct {
			FollowsRequested      int `json:"follows_requested"`
			FollowsAccepted       int `json:"follows_accepted"`
			CrowdFollowsRequested int `json:"crowd_follows_requested"`
			CrowdFollowsAccepted  int `json:"crowd_follows_accepted"`
			Posts                 int `json:"posts"`
		} `json:"setup"`
		Home struct {
			Probes, OK, Errors int64
			Latency            struct {
				P95 int64 `json:"p95_us"`
			} `json:"latency"`
		} `json:"home"`
		Visibility struct {
			Sent, Accepted, Seen, Notes int64
			NeverSeen                   int64 `json:"never_seen"`
			Latency                     struct {
				P50 int64  `json:"p50_us"`
				P95 int64  `json:"p95_us"`
				HDR string `json:"hdr"`
			} `json:"latency"`
		} `json:"visibility"`
		Drain struct {
			Seconds  float64 `json:"seconds"`
			Complete bool    `json:"complete"`
		} `json:"drain"`
		Delivery struct {
			Posts, Expected, Reached int64
		} `json:"delivery"`
		NotesFile string `json:"notes_file"`
	} `json:"run"`
}

// noteLine is one line of the run's notes file.
type noteLine struct {
	Persona string     `json:"persona"`
	URI     string     `json:"uri"`
	Sent    time.Time  `json:"sent"`
	Status  int        `json:"status"`
	Seen    *time.Time `json:"seen"`
	Asked   *time.Time `json:"asked"`
}

// sutVisible is one entry of the Fedify SUT's own visibility log.
type sutVisible struct {
	Persona   string    `json:"persona"`
	URI       string    `json:"uri"`
	VisibleAt time.Time `json:"visibleAt"`
}

// tokensFile writes the Fedify SUT's personas' tokens (GET /personas) as a
// tokens file, as a user would from their server's admin tools.
func (f *federation) tokensFile(t *testing.T) string {
	var personas []struct{ Name, Token string }
	f.call(t, "GET", fedifyCtl+"/personas", nil, &personas)
	var b strings.Builder
	b.WriteString("# tokens of the Fedify SUT's personas\n")
	for _, p := range personas {
		fmt.Fprintf(&b, "%s=%s\n", p.Name, p.Token)
	}
	path := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// crowdRun runs `crowd run` in the namespace against the federation's
// crowd and returns its combined output and error.
func (f *federation) crowdRun(t *testing.T, out string, args ...string) (string, error) {
	t.Helper()
	base := []string{"run", "--admin", "127.0.0.1:9180", "--state", f.state, "--out", out, "--log-format", "json"}
	cmd := f.ns.Command(context.Background(), BuildCrowd(t), append(base, args...)...)
	output, err := cmd.CombinedOutput()
	return string(output), err
}

// TestRunRealFedify is a whole `crowd run` of 20 s against a real Fedify
// 1.5.9 with the client-API subset: the audience is set up through the
// client API, the flood goes out, the home timelines are probed, and the
// record's visibility and drain figures are checked note by note against
// Fedify's own log of when each note became visible in each home.
func TestRunRealFedify(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	out := t.TempDir()
	const probeHz = 4
	output, err := f.crowdRun(t, out, "--rate", "10", "--seconds", "20", "--timeout", "60s",
		"--count", "3", "--sut-host", "sut.test", "--tokens-file", f.tokensFile(t),
		"--follows", "12", "--followers", "2", "--post-every", "4s", "--probe-hz", fmt.Sprint(probeHz),
		"--setup-timeout", "90s", "--drain-timeout", "30s", "--label", "fedify-run",
		"--expect", "visibility.never_seen==0", "--expect", "visibility.p99<30s", "--expect", "delivery.unreached<1%", "--expect", "home.p95<10s")
	if err != nil {
		t.Fatalf("crowd run: %v\n%s", err, output)
	}
	// Gates on the run section, judged after the drain, each said.
	for _, want := range []string{"expect visibility.never_seen = 0 (want == 0): met", "expect visibility.latency.p99 = ",
		"expect delivery.unreached = 0% (want < 1%): met", "expect home.latency.p95 = "} {
		if !strings.Contains(output, want) {
			t.Errorf("no %q in the output:\n%s", want, output)
		}
	}
	paths, _ := filepath.Glob(filepath.Join(out, "*-fedify-run.json"))
	if len(paths) != 1 {
		t.Fatalf("want one record in %s, got %v\n%s", out, paths, output)
	}
	raw, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec runRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	run := rec.Run
	t.Logf("crowd run:\n%s", output)
	t.Logf("setup %+v home %+v visibility %+v drain %+v delivery %+v", run.Setup, run.Home, run.Visibility, run.Drain, run.Delivery)
	if rec.Schema != "crowd.flood.record" || run.Schema != "crowd.run" || rec.Partial {
		t.Fatalf("record schema %q, run %q, partial %v", rec.Schema, run.Schema, rec.Partial)
	}
	if run.Setup.FollowsRequested != 36 || run.Setup.FollowsAccepted != 36 {
		t.Errorf("3 personas × 12 follows: %d requested, %d accepted", run.Setup.FollowsRequested, run.Setup.FollowsAccepted)
	}
	if run.Setup.CrowdFollowsAccepted != 6 || run.Setup.Posts != 6 {
		t.Errorf("crowd followers accepted %d (want 6), posts %d (want 6)", run.Setup.CrowdFollowsAccepted, run.Setup.Posts)
	}
	// 3 personas × 4/s × 20 s, less the ticks a slow answer made skip.
	if run.Home.Probes < 3*probeHz*10 || run.Home.Errors != 0 {
		t.Errorf("home probes: %d made, %d errors: want about %d, none failing", run.Home.Probes, run.Home.Errors, 3*probeHz*20)
	}
	if run.Visibility.Sent < 30 || run.Visibility.Accepted != run.Visibility.Sent || run.Visibility.NeverSeen != 0 {
		t.Errorf("visibility: %+v: want 30 or more notes owed, every one accepted and seen", run.Visibility)
	}
	if !run.Drain.Complete {
		t.Errorf("the drain did not complete: %+v", run.Drain)
	}
	if run.Delivery.Posts < 9 || run.Delivery.Reached != run.Delivery.Expected || run.Delivery.Expected != 2*run.Delivery.Posts {
		t.Errorf("deliveries: %+v: want every post of the run at its 2 crowd followers", run.Delivery)
	}

	// The crowd's figures against Fedify's own log, note by note.
	var sut []sutVisible
	f.call(t, "GET", fedifyCtl+"/visibility", nil, &sut)
	sutAt := map[[2]string]time.Time{}
	crowdNotes := 0
	for _, v := range sut {
		if strings.Contains(v.URI, ".test/users/") && !strings.HasPrefix(v.URI, "https://sut.test/") {
			sutAt[[2]string{v.Persona, v.URI}] = v.VisibleAt
			crowdNotes++
		}
	}
	fh, err := os.Open(filepath.Join(out, run.NotesFile))
	if err != nil {
		t.Fatalf("the notes file: %v", err)
	}
	defer fh.Close()
	tolerance := 250*time.Millisecond + time.Second/probeHz
	seen, lastVisible, slowestAnswer := 0, time.Time{}, time.Duration(0)
	uris := map[string]bool{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var n noteLine
		if err := json.Unmarshal(sc.Bytes(), &n); err != nil {
			t.Fatalf("notes file line %q: %v", sc.Text(), err)
		}
		uris[n.URI] = true
		at, ok := sutAt[[2]string{n.Persona, n.URI}]
		switch {
		case n.Seen == nil:
			t.Errorf("%s never saw %s (Fedify: visible %v)", n.Persona, n.URI, at)
			continue
		case !ok:
			t.Errorf("%s saw %s, which Fedify never put in its home", n.Persona, n.URI)
			continue
		}
		seen++
		if at.After(lastVisible) {
			lastVisible = at
		}
		crowd, fedify := n.Seen.Sub(n.Sent), at.Sub(n.Sent)
		// Fedify logs milliseconds; the crowd's probe sees a note only after
		// Fedify made it visible, within a probe period and the time of the
		// probe that saw it (a busy Node answers late).
		tol := tolerance + n.Seen.Sub(*n.Asked)
		slowestAnswer = max(slowestAnswer, n.Seen.Sub(*n.Asked))
		if crowd < fedify-2*time.Millisecond || crowd > fedify+tol {
			t.Errorf("%s %s: the crowd measured %v, Fedify's log says %v after the send (tolerance %v)", n.Persona, n.URI, crowd, fedify, tol)
		}
	}
	if int64(seen) != run.Visibility.Seen || seen != crowdNotes {
		t.Errorf("notes visible: the crowd's notes file has %d, its record %d, Fedify's log %d", seen, run.Visibility.Seen, crowdNotes)
	}
	// The drain: from the flood's end to the last accepted note's
	// visibility, by Fedify's log (0 when it was visible before the end).
	// The crowd dates it by the probe that saw that note, so the tolerance
	// is the per-note one with the slowest probe's answer.
	sutDrain := max(0, lastVisible.Sub(rec.End).Seconds())
	if drainTol := tolerance + slowestAnswer; run.Drain.Seconds < sutDrain-0.002 || run.Drain.Seconds > sutDrain+drainTol.Seconds() {
		t.Errorf("drain: the crowd measured %.3f s, Fedify's log says %.3f s (tolerance %v)", run.Drain.Seconds, sutDrain, drainTol)
	}
	// The visibility's independent units are its notes, each owed to the
	// personas that follow its sender; its histogram is kept, so crowd
	// compare judges the run, here against itself: nothing moved.
	if run.Visibility.Notes != int64(len(uris)) || run.Visibility.Latency.HDR == "" {
		t.Errorf("visibility: %d notes, histogram kept %v; want the notes file's %d distinct notes and the histogram",
			run.Visibility.Notes, run.Visibility.Latency.HDR != "", len(uris))
	}
	if cmp, err := exec.Command(BuildCrowd(t), "compare", paths[0], paths[0]).CombinedOutput(); err != nil ||
		!strings.Contains(string(cmp), "crowd run: no regression beyond 15% and the noise") {
		t.Errorf("crowd compare of the run with itself: %v\n%s", err, cmp)
	}
	// For a tool: the run section's rows with their figures as numbers.
	var doc struct {
		Run struct {
			Rows []struct {
				Part, Metric, Unit string
				Base, Head         *float64
			} `json:"rows"`
			Regressed []string `json:"regressed"`
		} `json:"run"`
	}
	cmpJSON, err := exec.Command(BuildCrowd(t), "compare", "--format", "json", paths[0], paths[0]).Output()
	if err == nil {
		err = json.Unmarshal(cmpJSON, &doc)
	}
	visP95 := false
	for _, r := range doc.Run.Rows {
		visP95 = visP95 || r.Part == "visibility" && r.Metric == "p95" && r.Unit == "us" && r.Base != nil && *r.Base == float64(run.Visibility.Latency.P95)
	}
	if err != nil || !visP95 || len(doc.Run.Regressed) != 0 {
		t.Errorf("crowd compare --format json of the run with itself: %v; want the visibility p95 (%d µs) as a number\n%s", err, run.Visibility.Latency.P95, cmpJSON)
	}
	if !strings.Contains(output, "run record:") || !strings.Contains(output, "visibility:") {
		t.Errorf("crowd run should print its summary and name its record:\n%s", output)
	}
	md, err := os.ReadFile(filepath.Join(out, "crowd-run.md"))
	if err != nil || !strings.Contains(string(md), "fedify-run") {
		t.Errorf("crowd-run.md: %v\n%s", err, md)
	}
	t.Logf("crowd-run.md:\n%s", md)

	// A second run on the same personas: the crowd's actors already follow
	// them, so its set-up sends no Follow again (GoToSocial answers a
	// second Follow of a relation it has with a 500), yet counts them as
	// its followers. The flood sends no Follow either (--mix), so the
	// crowd's log of outgoing Follows must not grow.
	rerun := time.Now()
	out2 := t.TempDir()
	output, err = f.crowdRun(t, out2, "--rate", "5", "--seconds", "2", "--timeout", "60s", "--mix", "create=1",
		"--count", "3", "--sut-host", "sut.test", "--tokens-file", f.tokensFile(t),
		"--follows", "12", "--followers", "2", "--post-every", "0", "--probe-hz", "1",
		"--setup-timeout", "90s", "--drain-timeout", "10s", "--label", "fedify-rerun")
	if err != nil {
		t.Fatalf("second crowd run: %v\n%s", err, output)
	}
	if n := f.outgoingFollowsSince(t, rerun); n != 0 {
		t.Errorf("the second run's set-up sent %d Follows of personas the crowd already follows", n)
	}
	paths, _ = filepath.Glob(filepath.Join(out2, "*-fedify-rerun.json"))
	var rec2 runRecord
	if len(paths) != 1 {
		t.Fatalf("second run: want one record, got %v", paths)
	}
	if raw, err := os.ReadFile(paths[0]); err != nil || json.Unmarshal(raw, &rec2) != nil {
		t.Fatalf("second run's record: %v", err)
	}
	if s := rec2.Run.Setup; s.CrowdFollowsRequested != 6 || s.CrowdFollowsAccepted != 6 {
		t.Errorf("second run: crowd followers requested %d, accepted %d; want 6 and 6 (3 personas × 2, from the first run)",
			s.CrowdFollowsRequested, s.CrowdFollowsAccepted)
	}
}

// outgoingFollowsSince counts the Follows the crowd has sent since t0, by
// its activity log (admin API; the log's ring keeps the newest entries).
func (f *federation) outgoingFollowsSince(t *testing.T, t0 time.Time) int {
	t.Helper()
	resp, err := f.ns.HTTPClient(nil, nil).Get("http://127.0.0.1:9180/api/activities?type=Follow&direction=out&limit=100000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var entries []struct {
		Time time.Time `json:"time"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/activities: %d %v", resp.StatusCode, err)
	}
	n := 0
	for _, e := range entries {
		if !e.Time.Before(t0) {
			n++
		}
	}
	return n
}

// TestRunBadInput: what a user gets wrong is said clearly, with exit
// status 1, before anything is flooded: a refused token, a persona the SUT
// does not have, a SUT without the client API.
func TestRunBadInput(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	tokens := f.tokensFile(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		// load1's token is not one Fedify issued.
		{"bad token", []string{"--count", "2", "--tokens-file", tokens, "--token", "load1=not-a-token"},
			"the token for load1 was refused (401)"},
		// Fedify has load0 … load2; load3 has a token (a made-up one) but no account.
		{"persona that does not exist", []string{"--count", "4", "--tokens-file", tokens, "--token", "load3=token-load3"},
			"persona load3 does not exist on sut.test"},
		// The crowd's own origin answers, but it has no client API.
		{"SUT without the client API", []string{"--count", "1", "--tokens-file", tokens, "--client-api", "https://flood1.test"},
			"the SUT has no Mastodon client API at https://flood1.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			output, err := f.crowdRun(t, out, append([]string{"--rate", "5", "--seconds", "2", "--sut-host", "sut.test"}, tc.args...)...)
			var ee *exec.ExitError
			if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("want exit status 1, got %v\n%s", err, output)
			}
			if !strings.Contains(output, tc.want) {
				t.Errorf("want %q in the output:\n%s", tc.want, output)
			}
			lines := strings.Split(strings.TrimSpace(output), "\n")
			t.Logf("crowd run says: %s", lines[len(lines)-1])
			if recs, _ := filepath.Glob(filepath.Join(out, "*.json")); len(recs) != 0 {
				t.Errorf("nothing should have been flooded, yet records: %v", recs)
			}
		})
	}
}

// TestRunRecordFedifyAnswers records what the Fedify test SUT answers to
// each client-API call the audience makes, into
// audience/testdata/fedify/, where the client's unit tests read
// them. It runs only when CROWD_RECORD_FEDIFY=1 (the files are kept in the
// repository; re-record them when the peer's client API changes).
func TestRunRecordFedifyAnswers(t *testing.T) {
	if os.Getenv("CROWD_RECORD_FEDIFY") != "1" {
		t.Skip("set CROWD_RECORD_FEDIFY=1 to re-record audience/testdata/fedify")
	}
	f := startFederation(t, 3)
	dir := filepath.Join(ModuleRoot(t), "audience", "testdata", "fedify")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	record := func(file, method, path, token, form string) []byte {
		t.Helper()
		var body *strings.Reader
		if form != "" {
			body = strings.NewReader(form)
		} else {
			body = strings.NewReader("")
		}
		req, _ := http.NewRequest(method, "https://sut.test"+path, body)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if form != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := f.web.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		pretty, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, file), append(pretty, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s → %d, %s", method, path, resp.StatusCode, file)
		return raw
	}
	record("instance_v1.json", "GET", "/api/v1/instance", "", "")
	record("verify_credentials.json", "GET", "/api/v1/accounts/verify_credentials", "token-load0", "")
	record("error_401.json", "GET", "/api/v1/accounts/verify_credentials", "not-a-token", "")
	record("lookup_local.json", "GET", "/api/v1/accounts/lookup?acct=load0", "", "")
	record("error_404_lookup.json", "GET", "/api/v1/accounts/lookup?acct=load9", "", "")
	var alice struct{ ID string }
	json.Unmarshal(record("lookup_remote.json", "GET", "/api/v1/accounts/lookup?acct=alice@flood1.test", "token-load0", ""), &alice)
	record("follow.json", "POST", "/api/v1/accounts/"+alice.ID+"/follow", "token-load0", "reblogs=true")
	eventually(t, 20*time.Second, "alice's Accept", func() bool {
		return f.fedifyFollowing(t, "load0")["https://flood1.test/users/alice"] == "accepted"
	})
	record("relationships.json", "GET", "/api/v1/accounts/relationships?id[]="+alice.ID+"&id[]=1", "token-load0", "")
	record("status.json", "POST", "/api/v1/statuses", "token-load0", "status=hello+from+load0&visibility=public")
	// A note from alice, whom load0 follows, reaches load0's home.
	out := f.ns.Run(t, BuildCrowd(t), "send", "--admin", "127.0.0.1:9180", "--from", "alice@flood1.test",
		"--type", "Create", "--to", "acct:load0@sut.test")
	if !strings.Contains(out, "202") {
		t.Fatalf("crowd send Create: %s", out)
	}
	record("home_timeline.json", "GET", "/api/v1/timelines/home?limit=40", "token-load0", "")
}
