package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/crowdfed/crowd/flood/record"
)

// fixtureDir holds the deterministic record flood's report tests render,
// report.json, and its golden renderings (go test -update ./flood/
// rewrites them).
const fixtureDir = "../../flood/report/testdata"

// recordsStart is when the synthetic runs started.
func recordsStart() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

// newHist is a histogram of the flood's geometry (1 µs .. 1 h, 3 digits;
// flood/record/SCHEMA.md).
func newHist() *hdr.Histogram { return hdr.New(1, 3_600_000_000, 3) }

// shardRecord is one generator's record of a 10 s run in which the sends of
// each type took the given latencies (µs); service time is half of each,
// lateness a tenth; every send got a 202 except every errEvery-th (a 503;
// 0 = none).
func shardRecord(t *testing.T, s record.Settings, lat map[string][]int64, errEvery int) *record.Record {
	t.Helper()
	res := &record.Result{
		Start: recordsStart(), End: recordsStart().Add(10 * time.Second), Elapsed: 10 * time.Second, Measured: 10 * time.Second,
		Overall: record.NewStats(), Types: map[string]*record.Stats{}, Dispatch: newHist(),
		Rate: s.Rate, Duration: 10 * time.Second, MaxInflight: 100, Timeout: 10 * time.Second,
	}
	if res.Rate == 0 {
		res.Rate = 100
	}
	for typ, vals := range lat {
		st := record.NewStats()
		for i, v := range vals {
			for _, rec := range []struct {
				h *hdr.Histogram
				v int64
			}{{st.Latency, v}, {st.Service, v / 2}, {st.Lateness, v / 10}, {res.Dispatch, 50}} {
				if err := rec.h.RecordValue(rec.v); err != nil {
					t.Fatal(err)
				}
			}
			if errEvery > 0 && i%errEvery == errEvery-1 {
				st.Tally.Classes[record.Class503]++
			} else {
				st.Tally.Classes[record.Class202]++
			}
		}
		n := int64(len(vals))
		st.Counts = record.Counts{Offered: n, Sent: n, Completed: n}
		res.Types[typ] = st
		res.Overall.Merge(st)
	}
	r, err := res.Record(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeJSON writes a record (or any document) to dir/name and returns the path.
func writeJSON(t *testing.T, dir, name string, r any) string {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// latencies draws n latencies (µs) from a log-normal-ish spread around
// median µs.
func latencies(rng *rand.Rand, n int, median float64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = max(1, int64(median*rng.ExpFloat64()*rng.ExpFloat64()*2))
	}
	return out
}

// TestMergeCLIIsExact: two shards' records, merged by `crowd merge`, hold
// the percentiles of one histogram of every value both recorded, overall
// and per type, and not an average of the shards' percentiles.
func TestMergeCLIIsExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	s := record.Settings{Label: "sharded", Arrivals: "constant", Mix: "create=3,like=1", Signing: "pipeline"}
	// Shard 0 meets a fast SUT, shard 1 a slow one: their percentiles differ
	// a lot, so an average of percentiles would be far off.
	lat := []map[string][]int64{
		{"Create": latencies(rng, 3000, 2_000), "Like": latencies(rng, 1000, 1_000)},
		{"Create": latencies(rng, 2000, 80_000), "Like": latencies(rng, 700, 40_000)},
	}
	var paths []string
	for i, l := range lat {
		s.Shard = []string{"0/2", "1/2"}[i] // shards are 0-based, as --shard numbers them
		paths = append(paths, writeJSON(t, dir, "shard"+s.Shard[:1]+".json", shardRecord(t, s, l, 0)))
	}
	out := filepath.Join(dir, "merged.json")
	code, stdout, stderr := runCLI(t, append([]string{"merge"}, append(paths, "-o", out)...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "2 generators") || !strings.Contains(stdout, "merged 2 records into "+out) {
		t.Errorf("merge printed:\n%s", stdout)
	}
	m, err := record.LoadRecord(out)
	if err != nil {
		t.Fatal(err)
	}
	union := func(typ string) *hdr.Histogram {
		h := newHist()
		for _, l := range lat {
			for name, vals := range l {
				if typ == "" || name == typ {
					for _, v := range vals {
						_ = h.RecordValue(v)
					}
				}
			}
		}
		return h
	}
	for _, typ := range []string{"", "Create", "Like"} {
		tr, ok := m.Type(typ)
		if !ok {
			t.Fatalf("merged record lacks type %q", typ)
		}
		want := union(typ)
		if got := tr.Latency.Quantiles; got != record.Summarize(want) {
			t.Errorf("type %q: merged %+v\nwant     %+v", typ, got, record.Summarize(want))
		}
		h, err := tr.Latency.Decode()
		if err != nil {
			t.Fatal(err)
		}
		for q := 1.0; q <= 100; q += 0.5 {
			if h.ValueAtQuantile(q) != want.ValueAtQuantile(q) {
				t.Fatalf("type %q p%g: merged %d, union %d", typ, q, h.ValueAtQuantile(q), want.ValueAtQuantile(q))
			}
		}
	}
	// The data discriminate: averaging the shards' p99 is not the answer.
	var avg int64
	for _, p := range paths {
		r, _ := record.LoadRecord(p)
		avg += r.Overall.Latency.P99 / 2
	}
	if got := m.Overall.Latency.P99; avg > got*9/10 && avg < got*11/10 {
		t.Errorf("the shards' average p99 %d is near the merged %d: the test cannot tell merging from averaging", avg, got)
	}
	if c := m.Overall.Counts; c.Sent != 6700 || m.Generators() != 2 || m.Settings.Shard != "" {
		t.Errorf("merged counts %+v, generators %d, shard %q", c, m.Generators(), m.Settings.Shard)
	}

	// Without -o: the record on stdout, the table on stderr.
	code, stdout, stderr = runCLI(t, append([]string{"merge"}, paths...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	again, err := record.DecodeRecord(strings.NewReader(stdout))
	if err != nil || again.Overall.Latency.Quantiles != m.Overall.Latency.Quantiles {
		t.Errorf("stdout is not the merged record: %v", err)
	}
	if !strings.Contains(stderr, "2 generators") {
		t.Errorf("the table is not on stderr: %q", stderr)
	}
}

// TestMergeOfOneRecord: one record merges into itself (a one-shard
// fleet's Job does so), and the count is said in the singular.
func TestMergeOfOneRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := record.Settings{Label: "one", Arrivals: "constant", Mix: "create=1", Shard: "0/1"}
	in := writeJSON(t, dir, "one.json", shardRecord(t, s, map[string][]int64{"Create": {1000, 2000}}, 0))
	out := filepath.Join(dir, "merged.json")
	code, stdout, stderr := runCLI(t, "merge", in, "-o", out)
	if code != 0 || !strings.Contains(stdout, "merged 1 record into "+out+"\n") {
		t.Errorf("exit %d, stdout %q, stderr %q; want \"merged 1 record into\"", code, stdout, stderr)
	}
}

func TestMergeCLIRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lat := map[string][]int64{"Create": {1000, 2000, 3000}}
	s := record.Settings{Label: "sharded", Arrivals: "constant", Mix: "create=1", Shard: "0/2"}
	a := writeJSON(t, dir, "a.json", shardRecord(t, s, lat, 0))
	s.Shard = "1/2"
	s.Rate = 200
	b := writeJSON(t, dir, "b.json", shardRecord(t, s, lat, 0))
	s.Rate, s.Mix = 100, "like=1"
	c := writeJSON(t, dir, "c.json", shardRecord(t, s, lat, 0))
	s.Mix = "create=1"
	later := shardRecord(t, s, lat, 0) // shard 1/2, as b is, but run a minute after a
	later.Start, later.End = later.Start.Add(time.Minute), later.End.Add(time.Minute)
	d := writeJSON(t, dir, "d.json", later)
	notJSON := filepath.Join(dir, "notes.json")
	os.WriteFile(notJSON, []byte("not a record"), 0o644)
	out := filepath.Join(dir, "merged.json")
	for _, tc := range []struct {
		name string
		args []string
		code int
		say  []string // the message names these
	}{
		// Another rate: named, with both values and the files.
		{"rate differs", []string{a, b}, 1, []string{"settings differ", "rate 100 ≠ 200", "record 2 is " + b, "record 1 is " + a}},
		// Another mix.
		{"mix differs", []string{a, c}, 1, []string{`mix create=1 ≠ like=1`, "record 2 is " + c}},
		// One record twice.
		{"same record twice", []string{a, a}, 1, []string{"a second time"}},
		// Two shards run one after the other: no rate of theirs together.
		{"not together", []string{a, d}, 1, []string{"did not flood together", "record 2 is " + d}},
		// A file that is not a record.
		{"not a record", []string{a, notJSON}, 1, []string{notJSON}},
		// A file that is not there.
		{"missing file", []string{a, filepath.Join(dir, "nope.json")}, 1, []string{"nope.json"}},
		// Nothing to merge, or one record alone: a usage error.
		{"no arguments", nil, 2, []string{"crowd merge wants RECORD.json..."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"merge", "-o", out}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			for _, s := range tc.say {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q lacks %q", stderr, s)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused merge wrote %s", out)
			}
		})
	}
	// Where it writes: not over a record it merges, not under a name
	// promising another format; each refused before anything is read.
	before, _ := os.ReadFile(a)
	for _, tc := range []struct {
		out, say string
	}{
		{a, "-o " + a + " is the input file"},
		{filepath.Join(dir, "m.html"), "the merged record is JSON, and .html names another format"},
	} {
		if code, _, stderr := runCLI(t, "merge", a, "-o", tc.out); code != 2 || !strings.Contains(stderr, tc.say) {
			t.Errorf("-o %s: exit %d, stderr %q; want 2 saying %q", tc.out, code, stderr, tc.say)
		}
	}
	if after, _ := os.ReadFile(a); !bytes.Equal(after, before) {
		t.Error("a refused merge changed its input")
	}
}

// TestReportOfARunRecord: a crowd run record's report has, after the
// flood's parts, what its run section measured (the personas' homes, the
// drain, the deliveries), in every format, as crowd run printed it; a run
// section this crowd cannot read is said in its place, not dropped, and a
// damaged one is said with why, the flood's parts rendered and the exit 1.
func TestReportOfARunRecord(t *testing.T) {
	t.Parallel()
	flood, err := os.ReadFile(filepath.Join(fixtureDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(flood, &doc); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, run string) string {
		doc["run"] = json.RawMessage(run)
		return writeJSON(t, dir, name, doc)
	}
	rec := write("run.json", `{"schema":"crowd.run","version":1,"sut":"https://sut.test","personas":["load0@sut.test"],"follows":2,"followers":3,`+
		`"visibility":{"sent":10,"accepted":9,"seen":8,"never_seen":1},"drain":{"seconds":1.5,"complete":true,"timeout_s":60}}`)
	for _, c := range []struct {
		format string
		want   []string
	}{
		{"text", []string{"\ncrowd run: the personas' homes, the drain and the deliveries to the crowd\n", "visibility: 10 notes owed to a follower's home, 9 accepted, 8 seen, 1 never seen", "drain: the last accepted note was visible 1.50 s after the flood"}},
		{"markdown", []string{"**crowd run: the personas' homes", "- visibility: 10 notes owed"}},
		{"html", []string{"<h2>crowd run: the personas&#39; homes", "<li>visibility: 10 notes owed"}},
	} {
		code, out, errOut := runCLI(t, "report", rec, "--format", c.format)
		for _, w := range c.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("%s: exit %d (%s), want %q in:\n%s", c.format, code, errOut, w, out)
			}
		}
	}
	// A flood's own record has no such part.
	if _, out, _ := runCLI(t, "report", filepath.Join(fixtureDir, "report.json")); strings.Contains(out, "crowd run:") {
		t.Errorf("a flood's record reported as a run's:\n%s", out)
	}
	// Merged, its flood's figures are; its run section is said to be left out.
	if code, _, errOut := runCLI(t, "merge", rec, "-o", filepath.Join(dir, "merged.json")); code != 0 || !strings.Contains(errOut, "is a crowd run's record: its run section") {
		t.Errorf("merge of a run record: exit %d, stderr %q", code, errOut)
	}
	// A run section this crowd does not read is said in its place, the
	// flood's parts reported as ever: they are the flood record's, which
	// this crowd reads. A damaged one exits 1 all the same, as a results
	// file cut short does, saying so in the line and on stderr.
	for _, c := range []struct {
		name, run, say string
		code           int
		stderr         string // in stderr; "" for nothing
	}{
		// A newer version of the section: upgrading crowd reads it.
		{"newer", `{"schema":"crowd.run","version":9,"personas":{"a shape":"this crowd does not read"}}`,
			"the record's run section is crowd.run version 9: this crowd does not read it (it reads crowd.run up to version 1): upgrade crowd to see it", 0, ""},
		// Another schema: no crowd run's section at all.
		{"other schema", `{"schema":"elsewhere.run","version":1}`,
			"the record's run section is elsewhere.run version 1: this crowd does not read it (it reads crowd.run up to version 1)\n", 0, ""},
		// This version, a field of the wrong kind: a damaged record, why in
		// plain words (no Go types), the flood's parts rendered, exit 1.
		{"damaged", `{"schema":"crowd.run","version":1,"visibility":"x"}`,
			`the record's run section does not read: its "run.visibility" is a JSON string where a run section has an object: a damaged record, so crowd report exits 1, though it shows the flood's parts` + "\n",
			1, `damaged.json: the record's run section does not read: its "run.visibility" is a JSON string where a run section has an object; the report shows the flood's parts, and why in the run section's place`},
		// A list that is an object: the same.
		{"damaged personas", `{"schema":"crowd.run","version":1,"personas":{"not":"a list"}}`,
			`the record's run section does not read: its "run.personas" is a JSON object where a run section has a list: a damaged record`, 1, "the record's run section does not read"},
	} {
		code, out, errOut := runCLI(t, "report", write(c.name+".json", c.run))
		if code != c.code || !strings.Contains(out, "crowd run: the personas' homes, the drain and the deliveries to the crowd\n"+c.say) || !strings.Contains(out, "Create") {
			t.Errorf("%s run section: exit %d (%s), want %d, the flood's parts and %q:\n%s", c.name, code, errOut, c.code, c.say, out)
		}
		if (c.stderr == "") != (errOut == "") || !strings.Contains(errOut, c.stderr) || strings.Contains(out+errOut, "Go ") {
			t.Errorf("%s run section: stderr %q, want %q (and no Go types)", c.name, errOut, c.stderr)
		}
	}
	// A damaged one in the other formats: the page is written, the line in it.
	html := filepath.Join(dir, "damaged.html")
	if code, _, errOut := runCLI(t, "report", filepath.Join(dir, "damaged.json"), "-o", html); code != 1 || !strings.Contains(errOut, "the report shows the flood's parts") {
		t.Errorf("a damaged run section to HTML: exit %d, %s", code, errOut)
	}
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "a damaged record, so crowd report exits 1") {
		t.Errorf("the HTML page of a damaged run section lacks its line (%v)", err)
	}
}

// TestReportCLIGolden: `crowd report` prints the fixture as flood's golden
// renderings, to stdout or a file, the format picked by flag or by the
// file's extension.
func TestReportCLIGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fixture, err := os.ReadFile(filepath.Join(fixtureDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, dir, "report.json", fixture) // beside the reports, which link it by its name
	golden := func(name string) string {
		b, err := os.ReadFile(filepath.Join(fixtureDir, name))
		if err != nil {
			t.Fatalf("%v (go test -update ./flood/ writes it)", err)
		}
		return string(b)
	}
	for _, c := range []struct {
		name   string
		args   []string
		file   string // output file, "" = stdout
		golden string
	}{
		// Text is the default.
		{"text", nil, "", "report.txt.golden"},
		// Markdown by flag, linking the record's file name.
		{"markdown", []string{"--format", "markdown"}, "", "report.md.golden"},
		// HTML by flag.
		{"html", []string{"--format", "html"}, "", "report.html.golden"},
		// HTML picked by the output file's extension.
		{"html by extension", []string{"-o", filepath.Join(dir, "run.html")}, "run.html", "report.html.golden"},
		// Markdown by extension.
		{"markdown by extension", []string{"-o", filepath.Join(dir, "run.md")}, "run.md", "report.md.golden"},
		// The flag wins over the extension.
		{"flag over extension", []string{"--format", "text", "-o", filepath.Join(dir, "run.txt.html")}, "run.txt.html", "report.txt.golden"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"report", in}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			got := stdout
			if c.file != "" {
				b, err := os.ReadFile(filepath.Join(dir, c.file))
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
				if stdout != "" {
					t.Errorf("with -o, stdout got %q", stdout)
				}
			}
			if want := golden(c.golden); got != want {
				t.Errorf("crowd report %s differs from flood/report/testdata/%s", strings.Join(c.args, " "), c.golden)
			}
		})
	}
	// Written into another folder, the Markdown links the record from there.
	if err := os.MkdirAll(filepath.Join(dir, "pr"), 0o755); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "pr", "comment.md")
	if code, _, stderr := runCLI(t, "report", in, "-o", md); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "[../report.json](../report.json)") {
		t.Errorf("a report in pr/ links the record as %q (%v); want ../report.json", b, err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"unknown format", []string{"report", in, "--format", "pdf"}, 2, `--format "pdf"`},      // usage
		{"no record", []string{"report"}, 2, "crowd report wants RECORD.json"},                  // usage
		{"two records", []string{"report", in, in}, 2, "got 2 arguments"},                       // usage
		{"missing record", []string{"report", filepath.Join(dir, "nope.json")}, 1, "nope.json"}, // bad input
		// An -o name promising a format the report has not would get text under it.
		{"a pdf", []string{"report", in, "-o", filepath.Join(dir, "r.pdf")}, 2, "-o " + filepath.Join(dir, "r.pdf") + ": a report is text, markdown or html, and .pdf names none of them"},
		{"a json", []string{"report", in, "-o", filepath.Join(dir, "r.JSON")}, 2, ".json names none of them"},
		// --format says what the name does not: the user's choice.
		{"a pdf named text", []string{"report", in, "-o", filepath.Join(dir, "r2.pdf"), "--format", "text"}, 0, ""},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.say) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming %s", c.name, code, stderr, c.code, c.say)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.pdf")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused -o was written: %v", err)
	}
}

// comparedWork is the work of crowd compare's test runs: its settings, and
// each type's latencies drawn from the seeds (3000 Creates around 5 ms,
// 1000 Likes around 3 ms).
func comparedWork(seed1, seed2 uint64) (record.Settings, map[string][]int64) {
	rng := rand.New(rand.NewPCG(seed1, seed2))
	return record.Settings{Label: "cmp", Arrivals: "constant", Mix: "create=3,like=1"},
		map[string][]int64{"Create": latencies(rng, 3000, 5_000), "Like": latencies(rng, 1000, 3_000)}
}

// TestCompareCLI: exit 0 when nothing regressed, 1 when something did, 2
// when there is no verdict to give.
func TestCompareCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, baseLat := comparedWork(5, 6)
	scaled := func(f float64, n int) map[string][]int64 {
		out := map[string][]int64{}
		for typ, vals := range baseLat {
			for _, v := range vals[:len(vals)*n/100] {
				out[typ] = append(out[typ], int64(float64(v)*f))
			}
		}
		return out
	}
	base := writeJSON(t, dir, "base.json", shardRecord(t, s, baseLat, 200))
	same := writeJSON(t, dir, "same.json", shardRecord(t, s, baseLat, 200))
	slower := writeJSON(t, dir, "slower.json", shardRecord(t, s, scaled(1.3, 100), 200))
	faster := writeJSON(t, dir, "faster.json", shardRecord(t, s, scaled(0.7, 100), 200))
	failing := writeJSON(t, dir, "failing.json", shardRecord(t, s, baseLat, 20))
	fewer := writeJSON(t, dir, "fewer.json", shardRecord(t, s, scaled(1, 75), 200))
	s2 := s
	s2.Rate = 300
	faster3x := writeJSON(t, dir, "rate300.json", shardRecord(t, s2, scaled(0.7, 100), 200))
	s3 := s
	s3.Mix = "create=1,like=1"
	otherMix := writeJSON(t, dir, "othermix.json", shardRecord(t, s3, baseLat, 200))
	stopped := shardRecord(t, s, scaled(1, 1), 200)
	stopped.Measured, stopped.Partial, stopped.PartialReason = 0.04, true, "results /dev/full: no space left on device"
	unmeasured := writeJSON(t, dir, "unmeasured.json", stopped)
	baseJSON, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name  string
		args  []string
		stdin string // the command's standard input
		code  int
		say   []string // in stdout+stderr
	}{
		// The same measurements: 0.
		{"no change", []string{base, same}, "", 0, []string{"no regression beyond 15%"}},
		// 30 % slower: 1, naming the metrics; a p99 of 4000 sends, whose
		// interval is wide, moved within noise.
		{"slower", []string{base, slower}, "", 1, []string{"all     p95", "REGRESSED beyond 15%", "all p95 +30", "(within noise)", "regressed against"}},
		// 30 % slower is within a 40 % threshold.
		{"slower within threshold", []string{base, slower, "--max-regression", "40%"}, "", 0, []string{"no regression beyond 40%"}},
		// Faster: better, exit 0.
		{"faster", []string{base, faster}, "", 0, []string{"better", "no regression"}},
		// Errors from 0.5 % to 5 %: 1.
		{"more errors", []string{base, failing}, "", 1, []string{"all     errors", "+4.50pp"}},
		// ... unless errors are not compared.
		{"errors not compared", []string{base, failing, "--metric", "p95,p99"}, "", 0, []string{"no regression"}},
		// A quarter fewer sends in the same window: the rates fell.
		{"rate down", []string{base, fewer, "--metric", "rate,throughput"}, "", 1, []string{"all rate -25.0%"}},
		// Another offered rate: no verdict, 2, pointing at --force.
		{"other rate refused", []string{base, faster3x}, "", 2, []string{"offered rate 100/s ≠ 300/s", "--force"}},
		// Another mix: 2.
		{"other mix refused", []string{base, otherMix}, "", 2, []string{`mix "create=3,like=1" ≠ "create=1,like=1"`}},
		// --force compares anyway, and says so.
		{"forced", []string{base, faster3x, "--force"}, "", 0, []string{"note: forced: offered rate"}},
		// Usage errors: 2.
		{"one record", []string{base}, "", 2, []string{"wants BASE.json HEAD.json"}},
		{"bad threshold", []string{base, same, "--max-regression", "lots"}, "", 2, []string{"--max-regression"}},
		{"bad metric", []string{base, same, "--metric", "p95,speed"}, "", 2, []string{"--metric", "speed"}},
		{"bad share floor", []string{base, same, "--share-floor", "-1"}, "", 2, []string{"--share-floor"}},
		// A bare number could be 15 % or 0.15 %: refused, offering both.
		{"bare threshold", []string{base, same, "--max-regression", "0.15"}, "", 2, []string{`--max-regression "0.15": give a percentage: 15% (0.15 as a fraction) or 0.15%`}},
		// A share moves by 100 points at most.
		{"share floor past 100%", []string{base, same, "--share-floor", "200%"}, "", 2, []string{"--share-floor 200%: a share changes by 100 percentage points at most"}},
		// 100 % is the most: every share change below it is noise.
		{"share floor 100%", []string{base, same, "--share-floor", "100%"}, "", 0, []string{"no regression"}},
		{"bad latency floor", []string{base, same, "--latency-floor", "-1ms"}, "", 2, []string{"--latency-floor"}},
		// A rate falls by 100 % at most: a threshold of 100 % or more could
		// never flag one, and is refused while one is compared, naming them ...
		{"threshold past any fall", []string{base, fewer, "--max-regression", "200%"}, "", 2, []string{"--max-regression 200%: rate, throughput can fall by 100% at most", "leave rate,throughput out of --metric"}},
		{"threshold of a whole fall", []string{base, fewer, "--max-regression", "100%", "--metric", "p99,ok"}, "", 2, []string{"--max-regression 100%: ok can fall"}},
		// ... and judges latency when none is.
		{"threshold past any fall, latency alone", []string{base, slower, "--max-regression", "200%", "--metric", "p95,p99,errors"}, "", 0, []string{"no regression beyond 200%"}},
		// A record that does not read: no verdict.
		{"missing record", []string{base, filepath.Join(dir, "nope.json")}, "", 2, []string{"nope.json"}},
		// A head stopped before its window opened measured nothing: no
		// verdict, saying why, forced or not.
		{"unmeasured head", []string{base, unmeasured}, "", 2, []string{"no verdict on " + unmeasured, "head: nothing measured to compare: it stopped 0.04s into its measured window", "a partial run (results /dev/full"}},
		{"unmeasured head forced", []string{base, unmeasured, "--force"}, "", 2, []string{"head: nothing measured"}},
		// So with base.
		{"unmeasured base", []string{unmeasured, base}, "", 2, []string{"base: nothing measured to compare"}},
		// "-" reads a record from stdin (git show main:… | crowd compare -
		// head.json), named stdin in the table.
		{"base on stdin", []string{"-", same}, string(baseJSON), 0, []string{"base stdin: ", "head " + same + ": ", "no regression"}},
		{"head on stdin", []string{same, "-"}, string(baseJSON), 0, []string{"base " + same + ": ", "head stdin: ", "no regression"}},
		// Both: stdin holds one record; a usage error naming the arguments.
		{"both on stdin", []string{"-", "-"}, string(baseJSON), 2, []string{`BASE and HEAD are both "-"`}},
		// Nothing on stdin: no verdict, saying what stdin held.
		{"empty stdin", []string{base, "-"}, "", 2, []string{"stdin is not a crowd record (it is empty)"}},
		// A results file on stdin is said to be one, as a file is.
		{"results on stdin", []string{"-", base}, resultsWhole, 2, []string{"stdin is a results file (crowd flood --results), not a record"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLIStdin(t, strings.NewReader(c.stdin), append([]string{"compare"}, c.args...)...)
			all := stdout + stderr
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, all)
			}
			for _, s := range c.say {
				if !strings.Contains(all, s) {
					t.Errorf("output lacks %q:\n%s", s, all)
				}
			}
		})
	}
}

// TestRecordCommandsHelp: the record commands are wired into the CLI.
func TestRecordCommandsHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"merge", "report", "compare"} {
		code, stdout, _ := runCLI(t, cmd, "--help")
		if code != 0 || !bytes.Contains([]byte(stdout), []byte("crowd "+cmd)) {
			t.Errorf("crowd %s --help: exit %d\n%s", cmd, code, stdout)
		}
	}
}

// TestReportOfAPipe: a record or a results file given as a pipe (crowd
// report <(git show main:out/load/x.json)) or on stdin is read once, known by
// its content as a file is: looked at by peeking, read by one reader.
func TestReportOfAPipe(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(filepath.Join(fixtureDir, "report.txt.golden"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := os.ReadFile(filepath.Join(fixtureDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		data  []byte
		stdin bool   // given as "-", else as a named pipe
		say   string // stdout has this ("" for the golden report)
	}{
		{"a record through a pipe", rec, false, ""},
		{"a record on stdin", rec, true, ""},
		{"compressed results through a pipe with no results name", gzipped(t, false, resultsWhole), false, "Create"},
		{"plain results on stdin", []byte(resultsWhole), true, "Create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			var out, errOut string
			if tc.stdin {
				var o bytes.Buffer
				if err := runReport(bytes.NewReader(tc.data), &o, "-", "text", "", -1); err != nil {
					code, errOut = 1, err.Error()
				}
				out = o.String()
			} else {
				code, out, errOut = runCLI(t, "report", servedByPipe(t, tc.data))
			}
			if code != 0 || (tc.say == "" && out != string(want)) || !strings.Contains(out, tc.say) {
				t.Errorf("exit %d, stderr %q; stdout:\n%s", code, errOut, out)
			}
		})
	}
}

// servedByPipe is a named pipe from which data can be read once. A reader
// that opened it again would wait for another writer forever: after 5 s
// empty ones come, each open ending at once, so that the test fails rather
// than hangs.
func servedByPipe(t *testing.T, data []byte) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "ff")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(data)
		f.Close()
	}()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for start := time.Now(); ; {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if time.Since(start) < 5*time.Second {
				continue
			}
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	}()
	return fifo
}
