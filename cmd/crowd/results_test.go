package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// countSends is a Python program that reads a results file (gzip when its
// name says so) with the json module alone and counts its sends as the
// record does: per measured type, offered, dropped, completed, aborted and
// the status classes; the warm-up's offers apart; every line in "lines".
const countSends = `
import gzip, json, sys
path = sys.argv[1]
f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
types, warm, lines = {}, 0, 0
for raw in f:
    l = json.loads(raw)
    if l["line"] != "send":
        continue
    lines += 1
    if l["outcome"] == "unsent":
        continue
    if not l["measured"]:
        warm += 1
        continue
    t = types.setdefault(l["type"], {"offered": 0, "dropped": 0, "completed": 0, "aborted": 0, "classes": {}})
    t["offered"] += 1
    if l["outcome"] == "dropped":
        t["dropped"] += 1
    elif l["outcome"] == "aborted":
        t["aborted"] += 1
    else:
        t["completed"] += 1
        t["classes"][l["class"]] = t["classes"].get(l["class"], 0) + 1
json.dump({"types": types, "warmup_offered": warm, "lines": lines}, sys.stdout)
`

// pySends is what countSends prints.
type pySends struct {
	Types map[string]struct {
		Offered, Dropped, Completed, Aborted int64
		Classes                              map[string]int64
	}
	WarmupOffered int64 `json:"warmup_offered"`
	Lines         int
}

// TestResultsOfATenSecondFlood: the results file of a real ten-second
// self-flood, read by Python's json module, counts what the run's record
// counts, type by type and class by class; crowd report reads it back into
// a record that agrees with the run's; crowd results csv has a row per send.
func TestResultsOfATenSecondFlood(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	sends := filepath.Join(t.TempDir(), "sends.ndjson.gz")
	code, stdout, stderr := runCLIContext(t, context.Background(), standalone(state, out,
		"--seconds", "10", "--warmup", "1s", "--rate", "50", "--label", "results", "--results", sends)...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rec := records(t, out)[0]
	py, err := exec.Command("python3", "-c", countSends, sends).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got pySends
	if err := json.Unmarshal(py, &got); err != nil {
		t.Fatalf("python3 printed %s: %v", py, err)
	}
	if len(got.Types) != len(rec.Types) || got.WarmupOffered != rec.Warmup.Offered || rec.Overall.Counts.Completed < 400 {
		t.Errorf("python counts %d types, %d warm-up offers; the record %v, %+v", len(got.Types), got.WarmupOffered, rec.TypeNames(), rec.Warmup)
	}
	for name, tr := range rec.Types {
		g, c := got.Types[name], tr.Counts
		if g.Offered != c.Offered || g.Dropped != c.Dropped || g.Completed != c.Completed || g.Aborted != c.Aborted {
			t.Errorf("%s: python counts %+v, the record %+v", name, g, c)
		}
		for cl := range record.NumClasses {
			if g.Classes[cl.String()] != tr.Tally.Classes[cl] {
				t.Errorf("%s %s: python counts %d, the record %d", name, cl, g.Classes[cl.String()], tr.Tally.Classes[cl])
			}
		}
	}
	fromResults, _, err := loadReported(sends, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	reportsAgree(t, rec, fromResults)
	// The seed that replays the run, which the file's run line carries.
	if s := fromResults.Parts[0].Seed; s == 0 || s != rec.Parts[0].Seed {
		t.Errorf("the results' seed %d, the record's %d: want the same, not 0", s, rec.Parts[0].Seed)
	}
	// The same sends on stdin ("-", as crowd flood --results - writes them).
	gzf, err := os.Open(sends)
	if err != nil {
		t.Fatal(err)
	}
	defer gzf.Close()
	plain, err := gzip.NewReader(gzf)
	if err != nil {
		t.Fatal(err)
	}
	fromStdin, _, err := loadReported("-", -1, plain)
	if err != nil {
		t.Fatal(err)
	}
	reportsAgree(t, rec, fromStdin)
	html := filepath.Join(t.TempDir(), "sends.html")
	if code, _, stderr := runCLI(t, "report", sends, "-o", html); code != 0 {
		t.Errorf("crowd report %s: exit %d: %s", sends, code, stderr)
	} else if b, _ := os.ReadFile(html); !strings.Contains(string(b), "<html") {
		t.Errorf("crowd report -o %s wrote no page", html)
	}
	csvPath := filepath.Join(t.TempDir(), "sends.csv")
	if code, _, stderr := runCLI(t, "results", "csv", sends, "-o", csvPath); code != 0 {
		t.Fatalf("crowd results csv: exit %d: %s", code, stderr)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != got.Lines+1 || rows[0][0] != "line" {
		t.Errorf("the CSV has %d rows (%v), want a header and %d sends", len(rows), err, got.Lines)
	}
}

// reportsAgree: a record rebuilt from results counts each type and class as
// the run's own, its percentiles within the histograms' precision.
func reportsAgree(t *testing.T, want, got *record.Record) {
	t.Helper()
	near := func(a, b int64) bool { return max(a-b, b-a) <= 2+max(a, b)/500 }
	for name, w := range want.Types {
		g := got.Types[name]
		if g == nil || g.Counts != w.Counts || g.Tally != w.Tally {
			t.Errorf("%s from the results: %+v, want %+v", name, g, w)
			continue
		}
		if l, m := g.Latency.Quantiles, w.Latency.Quantiles; l.Count != m.Count || !near(l.P50, m.P50) || !near(l.P99, m.P99) || !near(l.Max, m.Max) {
			t.Errorf("%s latency from the results %+v, want %+v", name, l, m)
		}
	}
}

// TestResultsToStdout: --results - writes only results lines to stdout, so
// they pipe; the table and the record's path go to stderr.
func TestResultsToStdout(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	code, stdout, stderr := runCLIContext(t, context.Background(), standalone(state, out,
		"--seconds", "2", "--rate", "50", "--results", "-")...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	kinds := map[string]int{}
	for n := 0; sc.Scan(); n++ {
		var l struct{ Line string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || (n == 0) != (l.Line == "run") {
			t.Fatalf("stdout line %d is not a results line (%v): %s", n+1, err, sc.Text())
		}
		kinds[l.Line]++
	}
	if kinds["run"] != 1 || kinds["end"] != 1 || int64(kinds["send"]) < records(t, out)[0].Overall.Counts.Offered {
		t.Errorf("stdout holds %v lines; the record offered %d", kinds, records(t, out)[0].Overall.Counts.Offered)
	}
	for _, want := range []string{"status: 202=", "record: "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestResultsOnAFullDisk: results that cannot be written (/dev/full fails
// every write with ENOSPC) stop the flood long before its end, exit 1 with
// an error naming the file, and leave the record partial, saying why.
func TestResultsOnAFullDisk(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	code, _, stderr := runCLIContext(t, context.Background(), standalone(state, out,
		"--seconds", "60", "--rate", "50", "--results", "/dev/full")...)
	if code != 1 || !strings.Contains(stderr, "/dev/full") || !strings.Contains(stderr, "no space left on device") {
		t.Fatalf("exit %d, want 1 naming /dev/full and the full disk\nstderr:\n%s", code, stderr)
	}
	rec := records(t, out)[0]
	if !rec.Partial || !strings.Contains(string(rec.PartialReason), "/dev/full") || rec.Measured > 30 {
		t.Errorf("record partial %v (%q), measured %gs; want it stopped early, saying why", rec.Partial, rec.PartialReason, rec.Measured)
	}
}

// TestResultsFileThatCannotBeCreated: a --results file that cannot be
// created is a usage error naming the flag, found before a send.
func TestResultsFileThatCannotBeCreated(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	missing := filepath.Join(t.TempDir(), "no such folder", "sends.ndjson")
	code, _, stderr := runCLIContext(t, context.Background(), standalone(state, out, "--seconds", "1", "--results", missing)...)
	if code != 2 || !strings.Contains(stderr, "--results "+missing+" cannot be written") {
		t.Errorf("exit %d, want 2 naming --results\nstderr:\n%s", code, stderr)
	}
	if len(records(t, out)) != 0 {
		t.Error("a record was written: the run should not have started")
	}
}
