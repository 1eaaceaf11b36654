package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// A results file of one run of two sends, line by line (flood/record/
// SCHEMA.md, "Results"), as crowd flood --results writes it.
const (
	resultsRunLine = `{"line":"run","schema":"crowd.flood.results","version":1,"run":0,"start":"2026-12-02T17:00:00Z","settings":{"label":"f","mix":"create=1"},"rate_hz":10,"duration_us":2000000,"max_inflight":4,"timeout_us":1000000,"seed":7}` + "\n"
	resultsSends   = `{"line":"send","run":0,"type":"Create","measured":true,"outcome":"answered","class":"202","status":202,"intended_us":100000,"picked_us":100100,"sent_us":100200,"done_us":150000}` + "\n" +
		`{"line":"send","run":0,"type":"Create","measured":true,"outcome":"answered","class":"202","status":202,"intended_us":1100000,"picked_us":1100100,"sent_us":1100200,"done_us":1150000}` + "\n"
	resultsEndLine = `{"line":"end","run":0,"end":"2026-12-02T17:00:02Z","window_end_us":2000000,"sends":2}` + "\n"
	resultsWhole   = resultsRunLine + resultsSends + resultsEndLine
)

// writeFile writes data to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// gzipped is lines compressed as crowd flood --results x.gz writes them: a
// block flushed after each line; killed, the stream is left there, without
// its end (what a flood killed with SIGKILL leaves).
func gzipped(t *testing.T, killed bool, lines ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	for _, l := range lines {
		if _, err := zw.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if !killed {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestOutputIsNotTheInput: crowd report and crowd results csv refuse an -o
// that is their input file (the atomic write would replace it with the
// report), by any path to it, leaving it as it was; and csv refuses a
// compressed name for the plain CSV it writes.
func TestOutputIsNotTheInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := writeJSON(t, dir, "victim.json", shardRecord(t, record.Settings{Label: "victim", Mix: "create=1"}, map[string][]int64{"Create": {1000, 2000}}, 0))
	res := writeFile(t, dir, "x.ndjson", []byte(resultsWhole))
	other := filepath.Join(dir, "link.ndjson") // another path to the same file
	if err := os.Symlink(res, other); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		// A record rendered over itself.
		{"report over its record", []string{"report", rec, "-o", rec, "--format", "text"}, 2, "-o " + rec + " is the input file"},
		// A results file rendered over itself.
		{"report over its results", []string{"report", res, "-o", res, "--format", "text"}, 2, "-o " + res + " is the input file"},
		// The CSV over its results file.
		{"csv over its results", []string{"results", "csv", res, "-o", res}, 2, "-o " + res + " is the input file"},
		// By another path to the same file.
		{"csv over its results, another path", []string{"results", "csv", res, "-o", other}, 2, "is the input file"},
		// A compressed name for plain CSV.
		{"csv under .gz", []string{"results", "csv", res, "-o", filepath.Join(dir, "out.csv.gz")}, 2, "writes plain CSV, and .gz names a compressed file"},
		// In capitals too.
		{"csv under .ZST", []string{"results", "csv", res, "-o", filepath.Join(dir, "OUT.CSV.ZST")}, 2, "| zstd >"},
		// Another file: written.
		{"csv to another file", []string{"results", "csv", res, "-o", filepath.Join(dir, "out.csv")}, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := map[string][]byte{}
			for _, p := range []string{rec, res} {
				before[p], _ = os.ReadFile(p)
			}
			code, _, stderr := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.say) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, stderr, c.code, c.say)
			}
			for p, b := range before {
				if now, _ := os.ReadFile(p); !bytes.Equal(now, b) {
					t.Errorf("%s was rewritten", p)
				}
			}
		})
	}
	for _, p := range []string{"out.csv.gz", "OUT.CSV.ZST"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("a refused -o %s was written", p)
		}
	}
}

// TestCSVAndReportOfNoRun: a file that holds no run is refused alike by
// crowd report and crowd results csv (exit 1, no run in it), and a file
// that is no results file gets no CSV header before the error.
func TestCSVAndReportOfNoRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.ndjson", nil)
	notes := writeFile(t, dir, "notes.jsonl", []byte(`{"note":"first"}`+"\n"))
	for _, c := range []struct {
		name string
		args []string
		say  string
	}{
		// An empty file: no run, said by both commands.
		{"report of an empty file", []string{"report", empty}, "no run in it"},
		{"csv of an empty file", []string{"results", "csv", empty}, "no run in it"},
		// JSON lines that are not results: refused before any output.
		{"csv of notes", []string{"results", "csv", notes}, `want a "run" line first`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != 1 || !strings.Contains(stderr, c.say) {
				t.Errorf("exit %d, stderr %q; want exit 1 saying %q", code, stderr, c.say)
			}
			if stdout != "" {
				t.Errorf("stdout got %q", stdout)
			}
		})
	}
}

// TestCutResultsRenderAndConvert: a results file cut short (a killed flood:
// a gzip stream that breaks off, a last line not whole, no end line) is
// rendered by crowd report, marked PARTIAL with the cut, and converted by
// crowd results csv, a row per whole send line; both then exit 1 saying
// the file is cut. A whole file exits 0.
func TestCutResultsRenderAndConvert(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		file   string
		data   []byte
		cut    bool   // the file is cut short: exit 1
		reason string // the PARTIAL reason; "" = the run is whole
	}{
		// A whole file: no cut, exit 0.
		{"whole", "whole.ndjson", []byte(resultsWhole), false, ""},
		{"whole gzip", "whole.ndjson.gz", gzipped(t, false, resultsRunLine, resultsSends, resultsEndLine), false, ""},
		// A flood killed before its end line, its gzip stream broken off.
		{"gzip killed", "killed.ndjson.gz", gzipped(t, true, resultsRunLine, resultsSends), true,
			"the results file is cut short (its compressed stream ends early)"},
		// Killed after its end line: the run is whole, the file is not.
		{"gzip killed after the end line", "late.ndjson.gz", gzipped(t, true, resultsRunLine, resultsSends, resultsEndLine), true, ""},
		// A plain file whose last line is half written.
		{"last line cut", "killed.ndjson", []byte(resultsRunLine + resultsSends + resultsEndLine[:20]), true, "line 4: the results file is cut short: its last line is not whole"},
		// A file that only lacks its end line.
		{"no end line", "noend.ndjson", []byte(resultsRunLine + resultsSends), true, "the results file is cut short: the run has no end line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, dir, c.file, c.data)
			code, stdout, stderr := runCLI(t, "report", p)
			if (code == 1) != c.cut || (code != 0 && code != 1) || !strings.Contains(stdout, "offered 2") {
				t.Errorf("report: exit %d, want the two sends shown, exit 1 when cut\n%s%s", code, stdout, stderr)
			}
			if strings.Contains(stdout, "PARTIAL: "+c.reason) != (c.reason != "") || strings.Contains(stderr, "marked PARTIAL") != (c.reason != "") {
				t.Errorf("report: want the run marked PARTIAL: %q (\"\" none), got\n%s%s", c.reason, stdout, stderr)
			}
			if c.cut && (!strings.Contains(stderr, p+": ") || !strings.Contains(stderr, "the results file is cut short")) {
				t.Errorf("report: stderr %q does not say %s is cut", stderr, p)
			}
			code, stdout, stderr = runCLI(t, "results", "csv", p)
			if rows := strings.Count(stdout, "\n"); rows != 3 || (code == 1) != c.cut || (code != 0 && code != 1) {
				t.Errorf("csv: exit %d, %d lines, stderr %q; want the header and 2 rows, exit 1 when cut", code, rows, stderr)
			}
			if c.cut && !strings.Contains(stderr, "the results file is cut short") {
				t.Errorf("csv: stderr %q does not say the file is cut", stderr)
			}
		})
	}
}

// TestResultsFilesKnownByContent: a results file is known by what it holds,
// not by its name: crowd report renders one under a .json name or
// compressed under any name (stdin included); crowd compare and crowd merge
// say plainly that they take records and where a results file goes, of a
// file or a stream (stdin) alike, plain or compressed.
func TestResultsFilesKnownByContent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := writeJSON(t, dir, "base.json", shardRecord(t, record.Settings{Label: "f", Mix: "create=1"}, map[string][]int64{"Create": {1000, 2000}}, 0))
	asJSON := writeFile(t, dir, "sends.json", []byte(resultsWhole))
	gz := writeFile(t, dir, "sends.ndjson.gz", gzipped(t, false, resultsWhole))
	gzUnnamed := writeFile(t, dir, "sends.ndjson", gzipped(t, false, resultsWhole))
	recGz := writeFile(t, dir, "base.json.gz", gzipped(t, false, "{\n  \"schema\": \"crowd.flood.record\"\n}\n"))
	plainRecords := "crowd compare and crowd merge take records"
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		say   string // on stdout (code 0) or stderr
	}{
		// A results file under a .json name (--results x.json writes one).
		{"report of results named .json", []string{"report", asJSON}, "", 0, "offered 2"},
		// gzip under a plain name.
		{"report of gzip named .ndjson", []string{"report", gzUnnamed}, "", 0, "offered 2"},
		// compare given a results file: said plainly, with what to do.
		{"compare with results", []string{"compare", rec, gz}, "", 2, gz + " is a results file (crowd flood --results), not a record: " + plainRecords},
		{"compare with results named .json", []string{"compare", asJSON, rec}, "", 2, "crowd report " + asJSON + " renders a results file"},
		// On stdin, gzip-compressed (cat sends.ndjson.gz | crowd compare - x.json):
		// known by its content as the file is, not a JSON error at byte 1.
		{"compare with gzip results on stdin", []string{"compare", "-", rec}, string(gzipped(t, false, resultsWhole)), 2,
			"stdin is a results file (crowd flood --results), not a record: " + plainRecords},
		// Plain on stdin: the same words, and crowd report - for it.
		{"compare with results on stdin", []string{"compare", rec, "-"}, resultsWhole, 2, "crowd report - renders a results file"},
		// merge too.
		{"merge of results", []string{"merge", gz}, "", 1, plainRecords},
		// A compressed record: decompress it first.
		{"compare with a gzipped record", []string{"compare", rec, recGz}, "", 2, recGz + " is compressed and holds no results: a record is plain JSON"},
		// On stdin too.
		{"compare with a gzipped record on stdin", []string{"compare", rec, "-"}, string(gzipped(t, false, "{\n  \"schema\": \"crowd.flood.record\"\n}\n")), 2,
			"stdin is compressed and holds no results: a record is plain JSON"},
		// merge reads one record from stdin, known by its content as compare's.
		{"merge with a gzipped record on stdin", []string{"merge", "-", rec}, string(gzipped(t, false, "{\n  \"schema\": \"crowd.flood.record\"\n}\n")), 1,
			"stdin is compressed and holds no results: a record is plain JSON"},
		{"merge of a record on stdin", []string{"merge", "-"}, string(mustRead(t, rec)), 0, `"schema": "crowd.flood.record"`},
		// stdin holds one record.
		{"merge of stdin twice", []string{"merge", "-", "-"}, "", 2, `"-" twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLIStdin(t, strings.NewReader(c.stdin), c.args...)
			out := stderr
			if c.code == 0 {
				out = stdout
			}
			if code != c.code || !strings.Contains(out, c.say) || strings.Contains(stderr, `\x1f`) {
				t.Errorf("exit %d\nstdout: %s\nstderr: %s\nwant exit %d saying %q", code, stdout, stderr, c.code, c.say)
			}
		})
	}
	// A compressed record through a pipe that is not stdin (a shell's
	// <(…)): read once, so known by its content, not a JSON error.
	fifo := filepath.Join(dir, "record.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	compressed := gzipped(t, false, "{\n  \"schema\": \"crowd.flood.record\"\n}\n")
	go func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Write(compressed)
			w.Close()
		}
	}()
	// Were the pipe never opened for reading, the writer above would wait
	// forever: a reader opened at the end, without blocking, lets it go.
	t.Cleanup(func() {
		if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close()
		}
	})
	if code, _, stderr := runCLI(t, "merge", fifo, rec); code != 1 || !strings.Contains(stderr, fifo+" is compressed and holds no results") {
		t.Errorf("merge of a compressed record through a pipe: exit %d, stderr %q", code, stderr)
	}
	// A gzip stream on stdin (cat sends.ndjson.gz | crowd report -).
	got, cut, err := loadReported("-", -1, bytes.NewReader(gzipped(t, false, resultsWhole)))
	if err != nil || cut != nil || got.Overall.Counts.Offered != 2 {
		t.Errorf("a gzip stream on stdin: %v, %v", err, cut)
	}
}

// TestForeignFilesSaidPlainly: a file that is no crowd record is said to be
// none, naming it, in plain words: not Go's types, nor a bare EOF.
func TestForeignFilesSaidPlainly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := writeJSON(t, dir, "base.json", shardRecord(t, record.Settings{Label: "f", Mix: "create=1"}, map[string][]int64{"Create": {1000, 2000}}, 0))
	pkg := writeFile(t, dir, "package.json", []byte(`{"name":"x","version":"1.0.0"}`+"\n"))
	list := writeFile(t, dir, "list.json", []byte("[]\n"))
	empty := writeFile(t, dir, "empty.json", nil)
	for _, c := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		// An npm manifest to report.
		{"report of package.json", []string{"report", pkg}, 1, pkg + ` is not a crowd record (it has no "schema"; a flood record's schema is "crowd.flood.record")`},
		// A JSON list.
		{"report of a list", []string{"report", list}, 1, list + " is not a crowd record (it holds a JSON list, not an object)"},
		// An empty file to compare: no verdict.
		{"compare with an empty file", []string{"compare", rec, empty}, 2, empty + " is not a crowd record (it is empty)"},
		// To merge.
		{"merge of an empty file", []string{"merge", rec, empty}, 1, empty + " is not a crowd record (it is empty)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.say) || strings.Contains(stderr, "Go ") || strings.Contains(stderr, "EOF") {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, stderr, c.code, c.say)
			}
		})
	}
}

// TestReportRunFlag: --run names a run of a results file, 0 or more; left
// out, the file's only run. The help advertises no -1, which is refused.
func TestReportRunFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	one := writeFile(t, dir, "one.ndjson", []byte(resultsWhole))
	two := writeFile(t, dir, "ladder.ndjson", []byte(resultsWhole+strings.ReplaceAll(resultsWhole, `"run":0`, `"run":1`)))
	// A killed ladder: its second rung has no end line.
	killed := writeFile(t, dir, "killed.ndjson", []byte(resultsWhole+strings.ReplaceAll(resultsRunLine+resultsSends, `"run":0`, `"run":1`)))
	for _, c := range []struct {
		name string
		args []string
		code int
		say  string // on stderr
	}{
		// Left out: the only run.
		{"the only run", []string{one}, 0, ""},
		// Named: that run.
		{"run 0", []string{one, "--run", "0"}, 0, ""},
		{"run 1 of two", []string{two, "--run", "1"}, 0, ""},
		// -1 is no run's number, given or not in the help.
		{"run -1", []string{two, "--run", "-1"}, 2, "--run -1: want a run's number, 0 or more"},
		// Left out of a file of two runs: name one.
		{"two runs, none named", []string{two}, 2, "name one with --run 0 … 1"},
		// Past the last run.
		{"run 1 of one", []string{one, "--run", "1"}, 2, "--run 1: " + one + " holds 1 run"},
		// A whole rung of a file cut later: whole, exit 0; the cut rung: shown, exit 1.
		{"a whole run of a cut file", []string{killed, "--run", "0"}, 0, ""},
		{"the cut run", []string{killed, "--run", "1"}, 1, "cut short"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"report"}, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.say) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, stderr, c.code, c.say)
			}
		})
	}
	_, help, _ := runCLI(t, "report", "--help")
	if line := help[strings.Index(help, "--run int"):]; strings.Contains(line[:strings.IndexByte(line, '\n')], "-1") {
		t.Errorf("--help advertises -1: %s", line[:strings.IndexByte(line, '\n')])
	}
}

// mustRead is the file's content.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
