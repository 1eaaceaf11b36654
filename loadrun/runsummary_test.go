package loadrun

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestRunComparison: what crowd compare shows of two records' run
// sections, by what each record holds: the block for two it reads,
// judged, with the figures that regressed; one
// line otherwise, saying of a section it does not read that it is there
// and why it is not shown (never that its record has none), nothing for
// two floods' records.
func TestRunComparison(t *testing.T) {
	t.Parallel()
	const (
		flood = `{"schema":"crowd.flood.record","version":2}`
		run   = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"crowd.run","version":1,"probe_hz":4,"visibility":{"sent":1000,"notes":1000,"accepted":1000,"seen":999,"never_seen":1,"latency":{"count":999,"p95_us":2000000}}}}`
		// Half the notes never seen: a regression the run sections show.
		lost    = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"crowd.run","version":1,"probe_hz":4,"visibility":{"sent":1000,"notes":1000,"accepted":1000,"seen":500,"never_seen":500,"latency":{"count":500,"p95_us":2000000}}}}`
		newer   = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"crowd.run","version":9,"personas":{"a shape":"unread"}}}`
		foreign = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"elsewhere.run","version":1}}`
		damaged = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"crowd.run","version":1,"personas":{"not":"a list"}}}`
	)
	for _, c := range []struct {
		name       string
		base, head string
		want       []string // the text begins with the first and holds the others; none: no text at all
		line       bool     // the text is one line
		regressed  string   // the figures said to regress, joined
	}{
		// Two run records: the block, judged, and nothing regressed.
		{"both runs", run, run, []string{"crowd run: the personas' homes", "judged by the same", "visibility  p95", "2.00s", "+0.0%", "crowd run: no regression beyond 15%"}, false, ""},
		// Half the notes never seen in head: the regression is returned.
		{"notes lost", run, lost, []string{"crowd run: the personas' homes", "visibility  never seen", "REGRESSED"}, false, "visibility never seen +49.90pp"},
		// A flood's record as head: one line naming the one with a section.
		{"flood head", run, flood, []string{"crowd run: only base (b.json) has a run section to show; head (h.json) is a flood's record, which has none\n"}, true, ""},
		// As base, the same, the other way round.
		{"flood base", flood, run, []string{"crowd run: only head (h.json) has a run section to show; base (b.json) is a flood's record, which has none\n"}, true, ""},
		// A section of a newer version: there, not shown, and upgrading
		// crowd shows it; not "only base has one".
		{"newer head", run, newer, []string{"crowd run: the run sections are not set side by side: head (h.json) has a run section of crowd.run version 9, newer than this crowd reads (up to version 1): upgrade crowd to see it\n"}, true, ""},
		// A section of another schema: there, and no crowd reads it.
		{"other schema head", run, foreign, []string{"crowd run: the run sections are not set side by side: head (h.json) has a run section of another schema, elsewhere.run version 1, which this crowd does not read (it reads crowd.run)\n"}, true, ""},
		// A section that does not decode is said to be a damaged record,
		// why in plain words (no Go types): the flood's figures, which
		// compare judges, did read.
		{"damaged base", damaged, run, []string{"crowd run: the run sections are not set side by side: base (b.json) has a run section that does not read, a damaged record: its \"run.personas\" is a JSON object where a run section has a list\n"}, true, ""},
		// Neither read, one a flood's: a clause for what each is.
		{"flood and newer", flood, newer, []string{"crowd run: no run section to show: base (b.json) is a flood's record, which has none; head (h.json) has a run section of crowd.run version 9, newer than this crowd reads (up to version 1): upgrade crowd to see it\n"}, true, ""},
		// Neither read, both there: each is said for what it is.
		{"damaged and other schema", damaged, foreign, []string{"crowd run: no run section to show: base (b.json) has a run section that does not read, a damaged record: its \"run.personas\" is a JSON object where a run section has a list; " +
			"head (h.json) has a run section of another schema, elsewhere.run version 1, which this crowd does not read (it reads crowd.run)\n"}, true, ""},
		// Two floods' records: nothing, as compare printed before run sections.
		{"two floods", flood, flood, nil, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, regressed := RunComparison("b.json", []byte(c.base), "h.json", []byte(c.head),
				record.CompareOptions{MaxRegression: 0.15, ShareFloor: 0.001, LatencyFloor: record.DefaultLatencyFloor}, "text")
			if r := strings.Join(regressed, ", "); r != c.regressed {
				t.Errorf("regressed %q, want %q", r, c.regressed)
			}
			if c.want == nil && got != "" {
				t.Fatalf("want nothing, got:\n%s", got)
			}
			if len(c.want) > 0 && !strings.HasPrefix(got, c.want[0]) {
				t.Errorf("want it to begin %q:\n%s", c.want[0], got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("want %q in:\n%s", w, got)
				}
			}
			if c.line && strings.Count(got, "\n") != 1 {
				t.Errorf("want one line, got:\n%s", got)
			}
		})
	}
}

// TestRunComparisonFormats: crowd compare --format markdown and json get
// the run sections' comparison in their form: a Markdown block headed by
// its verdict, a JSON object with the rows, notes and regressions, or the
// one line as {"unshown": …}.
func TestRunComparisonFormats(t *testing.T) {
	t.Parallel()
	const (
		flood = `{"schema":"crowd.flood.record","version":2}`
		run   = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"crowd.run","version":1,"probe_hz":4,"visibility":{"sent":1000,"notes":1000,"accepted":1000,"seen":999,"never_seen":1}}}`
		lost  = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"crowd.run","version":1,"probe_hz":4,"visibility":{"sent":1000,"notes":1000,"accepted":1000,"seen":500,"never_seen":500}}}`
	)
	o := record.CompareOptions{MaxRegression: 0.15, ShareFloor: 0.001, LatencyFloor: record.DefaultLatencyFloor}
	md, regressed := RunComparison("b.json", []byte(run), "h.json", []byte(lost), o, "markdown")
	if !strings.HasPrefix(md, "#### crowd run: REGRESSED beyond 15%") || !strings.Contains(md, "| visibility | never seen | 1 of 1000 accepted (0.10%) | 500 of 1000 accepted (50.00%) | +49.90pp | **REGRESSED** |") ||
		len(regressed) != 1 {
		t.Errorf("markdown, regressed %q:\n%s", regressed, md)
	}
	doc, _ := RunComparison("b.json", []byte(run), "h.json", []byte(lost), o, "json")
	var got struct {
		Rows []struct {
			Part, Metric, Verdict, Unit string
			Judged                      bool
			Base, Head, Change          *float64
		} `json:"rows"`
		Notes     []string `json:"notes"`
		Regressed []string `json:"regressed"`
	}
	if err := json.Unmarshal([]byte(doc), &got); err != nil || got.Notes == nil || len(got.Regressed) != 1 || got.Regressed[0] != "visibility never seen +49.90pp" {
		t.Fatalf("json %v: %s", err, doc)
	}
	found := false
	for _, r := range got.Rows {
		// Its figures for a tool: shares as fractions, the change relative.
		found = found || r.Part == "visibility" && r.Metric == "never seen" && r.Verdict == "REGRESSED" && r.Judged &&
			r.Unit == "share" && r.Base != nil && *r.Base == 0.001 && r.Head != nil && *r.Head == 0.5 && r.Change != nil && *r.Change == 499
	}
	if !found {
		t.Errorf("json rows lack the never-seen regression: %s", doc)
	}
	line, _ := RunComparison("b.json", []byte(run), "h.json", []byte(flood), o, "json")
	if !strings.HasPrefix(line, `{"unshown":"crowd run: only base (b.json) has a run section to show`) {
		t.Errorf("json of a run against a flood: %s", line)
	}
}
