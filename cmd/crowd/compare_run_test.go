package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// withRun is the document of rec with a crowd run section (JSON), as
// crowd run writes it: the flood's record at the top level, "run" beside.
func withRun(t *testing.T, rec *record.Record, run string) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["run"] = json.RawMessage(run)
	return doc
}

// latencyJSON is a run section's latency of n values with about these
// quantiles (µs), its histogram kept, as JSON.
func latencyJSON(t *testing.T, n, p50, p95, p99 int64) string {
	t.Helper()
	b, err := json.Marshal(recordtest.Latency(t, n, p50, p95, p99))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCompareOfRunRecords: crowd compare of two crowd run records shows
// their run sections side by side after its verdict, judged by the same
// rule, and exits 1 when either the flood's figures or the run section's
// regressed, naming which; a flood's record against a run record gets one
// line saying which has a section, and a section this crowd does not read
// one saying why it is not shown.
func TestCompareOfRunRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, lat := comparedWork(7, 8)
	slowerLat := map[string][]int64{}
	for typ, vals := range lat {
		for _, v := range vals {
			slowerLat[typ] = append(slowerLat[typ], v*13/10)
		}
	}
	quick := `{"schema":"crowd.run","version":1,"sut":"https://sut.test","personas":["load0@sut.test"],"probe_hz":4,` +
		`"home":{"probes":400,"ok":400,"latency":` + latencyJSON(t, 400, 10000, 20000, 40000) + `},` +
		`"visibility":{"sent":3000,"notes":3000,"accepted":3000,"seen":3000,"latency":` + latencyJSON(t, 3000, 300000, 2000000, 3000000) + `},` +
		`"drain":{"seconds":1.5,"complete":true,"timeout_s":60},` +
		`"delivery":{"posts":10,"expected":20,"reached":20,"completeness":1,"latency":` + latencyJSON(t, 20, 200000, 400000, 500000) + `}}`
	// Notes seen five times later, some never: a server's federation
	// slowed while the flood's own figures stayed the same.
	late := `{"schema":"crowd.run","version":1,"sut":"https://sut.test","personas":["load0@sut.test"],"probe_hz":4,` +
		`"home":{"probes":400,"ok":390,"errors":10,"latency":` + latencyJSON(t, 390, 10000, 30000, 80000) + `},` +
		`"visibility":{"sent":3000,"notes":3000,"accepted":3000,"seen":2970,"never_seen":30,"latency":` + latencyJSON(t, 2970, 1500000, 10000000, 15000000) + `},` +
		`"drain":{"seconds":60,"complete":false,"timeout_s":60},` +
		`"delivery":{"posts":10,"expected":20,"reached":18,"completeness":0.9,"latency":` + latencyJSON(t, 18, 300000, 800000, 900000) + `}}`
	base := writeJSON(t, dir, "base.json", withRun(t, shardRecord(t, s, lat, 200), quick))
	lateHead := writeJSON(t, dir, "late.json", withRun(t, shardRecord(t, s, lat, 200), late))
	slowerHead := writeJSON(t, dir, "slower.json", withRun(t, shardRecord(t, s, slowerLat, 200), quick))
	flood := writeJSON(t, dir, "flood.json", shardRecord(t, s, lat, 200))
	newerHead := writeJSON(t, dir, "newer.json", withRun(t, shardRecord(t, s, lat, 200), `{"schema":"crowd.run","version":9}`))
	lateJSON, err := os.ReadFile(lateHead)
	if err != nil {
		t.Fatal(err)
	}
	const heading = "crowd run: the personas' homes, the drain and the deliveries to the crowd, judged by the same"
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		say   []string // in stdout, in this order
		never string   // not in stdout
	}{
		// The run sections worsened, the flood's figures did not: the
		// block judges them, and the exit status is 1 for it.
		{"late notes, same flood", []string{base, lateHead}, "", 1, []string{"no regression beyond 15%", heading,
			"visibility  p95", "2.00s", "10.0s", "+400.2%", "REGRESSED", "visibility  never seen", "+1.00pp", "REGRESSED",
			"drain       after the flood", "> 60.0s (not complete)", "delivery    p99", "(few posts)", "delivery    reached", "18 of 20 (10.00% unreached)", "+10.00pp", "(within noise)",
			"crowd run: REGRESSED beyond 15%: ", "visibility p95 +400.2%", "home probe errors +2.50pp"}, ""},
		// The flood regressed, the run sections did not: exit 1, the
		// block after the verdict with its own.
		{"slower flood, same run", []string{base, slowerHead}, "", 1, []string{"REGRESSED beyond 15%", heading, "visibility  p95", "+0.0%",
			"crowd run: no regression beyond 15%"}, ""},
		// A run record from stdin: read once, its run section from those bytes.
		{"head on stdin", []string{base, "-"}, string(lateJSON), 1, []string{"head stdin: ", heading, "+400.2%"}, ""},
		// A flood's record as head: one line, no block.
		{"flood head", []string{base, flood}, "", 0, []string{"no regression", "\ncrowd run: only base (" + base + ") has a run section to show; head (" + flood + ") is a flood's record, which has none\n"}, heading},
		// As base.
		{"flood base", []string{flood, lateHead}, "", 0, []string{"crowd run: only head (" + lateHead + ") has a run section to show; base (" + flood + ") is a flood's record"}, heading},
		// A run section of a newer version as head: said to be there, for
		// an upgraded crowd to show, not that head has none.
		{"newer head", []string{base, newerHead}, "", 0, []string{"no regression", "\ncrowd run: the run sections are not set side by side: head (" + newerHead +
			") has a run section of crowd.run version 9, newer than this crowd reads (up to version 1): upgrade crowd to see it\n"}, "only base"},
		// Two floods' records: nothing of crowd run.
		{"two floods", []string{flood, flood}, "", 0, []string{"no regression"}, "crowd run"},
		// For a pull request's comment: both verdicts as headings, the
		// tables in Markdown.
		{"markdown", []string{"--format", "markdown", base, lateHead}, "", 1, []string{"#### crowd compare: no regression beyond 15%",
			"| type | metric | base | head | change | verdict |", "#### crowd run: REGRESSED beyond 15%: 5 figures",
			"| visibility | p95 | 2.00s | 10.0s | +400.2% | **REGRESSED** |"}, "\ncrowd run: the personas'"},
		// An unknown format: a usage error naming the flag.
		{"unknown format", []string{"--format", "yaml", base, lateHead}, "", 2, nil, "crowd compare"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLIStdin(t, strings.NewReader(c.stdin), append([]string{"compare"}, c.args...)...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			rest := stdout
			for _, w := range c.say {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in order):\n%s", w, stdout)
				}
				rest = rest[i+len(w):]
			}
			if c.code == 2 && !strings.Contains(stderr, `--format "yaml": want text, markdown or json`) {
				t.Errorf("stderr %q: want the flag named", stderr)
			}
			if c.never != "" && strings.Contains(stdout, c.never) {
				t.Errorf("stdout has %q:\n%s", c.never, stdout)
			}
			// The exit's reason names the run section's figures when they regressed.
			if inRun := strings.Contains(stdout, "crowd run: REGRESSED"); inRun != strings.Contains(stderr, "run section") {
				t.Errorf("stderr %q: want the run section named exactly when it regressed", stderr)
			}
		})
	}
}

// TestCompareJSON: crowd compare --format json writes one document for
// tools: the flood's rows with values in their units, its verdict, and
// the run sections' comparison as "run", their regressions named.
func TestCompareJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, lat := comparedWork(7, 8)
	run := func(seen, never int64) string {
		return fmt.Sprintf(`{"schema":"crowd.run","version":1,"probe_hz":4,"visibility":{"sent":3000,"notes":3000,"accepted":3000,"seen":%d,"never_seen":%d,"latency":%s}}`,
			seen, never, latencyJSON(t, seen, 300000, 2000000, 3000000))
	}
	base := writeJSON(t, dir, "base.json", withRun(t, shardRecord(t, s, lat, 200), run(3000, 0)))
	head := writeJSON(t, dir, "head.json", withRun(t, shardRecord(t, s, lat, 200), run(2700, 300)))
	code, stdout, stderr := runCLI(t, "compare", "--format", "json", base, head)
	var doc struct {
		Schema    string `json:"schema"`
		Regressed bool   `json:"regressed"`
		Rows      []struct {
			Type, Metric, Unit string
			Base, Change       *float64
		} `json:"rows"`
		Run struct {
			Regressed []string `json:"regressed"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if code != 1 || doc.Schema != "crowd.compare" || doc.Regressed || len(doc.Rows) == 0 || doc.Rows[0].Type != "all" || doc.Rows[0].Unit != "us" ||
		doc.Rows[0].Base == nil || strings.Join(doc.Run.Regressed, ",") != "visibility never seen +10.00pp" || !strings.Contains(stderr, "in its run section") {
		t.Errorf("exit %d, stderr %q, document %+v", code, stderr, doc)
	}
	// A pair refused (another rate): a document saying so, exit 2.
	s.Rate = 300 // the others ran at the default 100/s
	other := writeJSON(t, dir, "other.json", shardRecord(t, s, lat, 200))
	code, stdout, _ = runCLI(t, "compare", "--format", "json", base, other)
	var refused struct {
		Comparable bool   `json:"comparable"`
		Error      string `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &refused); err != nil || code != 2 || refused.Comparable || !strings.Contains(refused.Error, "not the same unit of work") {
		t.Errorf("a refused pair: exit %d, %v, stdout %s", code, err, stdout)
	}
}
