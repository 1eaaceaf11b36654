package loadrun

import (
	"strings"
	"testing"
)

// TestRunComparison: what crowd compare shows of two records' run
// sections, by what each record holds: the block for two it reads, one
// line when it reads one or finds a section it cannot read, nothing for
// two floods' records.
func TestRunComparison(t *testing.T) {
	t.Parallel()
	const (
		flood   = `{"schema":"crowd.flood.record","version":2}`
		run     = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"crowd.run","version":1,"probe_hz":4,"visibility":{"sent":10,"accepted":9,"seen":8,"never_seen":1,"latency":{"count":8,"p95_us":2000000}}}}`
		newer   = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"crowd.run","version":9,"personas":{"a shape":"unread"}}}`
		damaged = `{"schema":"crowd.flood.record","version":2,"run":{"schema":"crowd.run","version":1,"personas":{"not":"a list"}}}`
	)
	for _, c := range []struct {
		name       string
		base, head string
		want       []string // in the text; none: no text at all
		line       bool     // the text is one line
	}{
		// Two run records: the block, saying it is not judged.
		{"both runs", run, run, []string{"shown, not judged", "visibility  p95", "2.00s", "+0.0%"}, false},
		// A flood's record as head: one line naming the one with a section.
		{"flood head", run, flood, []string{"crowd run: only base (b.json) has a run section to show; head (h.json) is a flood's record, which has none\n"}, true},
		// As base, the same, the other way round.
		{"flood base", flood, run, []string{"crowd run: only head (h.json) has a run section to show; base (b.json) is a flood's record"}, true},
		// A section of a newer version: said to be one, with the upgrade.
		{"newer head", run, newer, []string{"only base (b.json)", "head (h.json): the record's run section is crowd.run version 9", "upgrade crowd"}, true},
		// A section that does not decode is said too: the flood's figures,
		// which compare judges, did read.
		{"damaged base", damaged, run, []string{"only head (h.json)", "base (b.json): its run section does not read"}, true},
		// Neither read, one unread: a line for what each is.
		{"flood and newer", flood, newer, []string{"crowd run: no run section to show: base (b.json) is a flood's record, which has none; head (h.json): the record's run section is crowd.run version 9"}, true},
		// Two floods' records: nothing, as compare printed before run sections.
		{"two floods", flood, flood, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := RunComparison("b.json", []byte(c.base), "h.json", []byte(c.head))
			if c.want == nil && got != "" {
				t.Fatalf("want nothing, got:\n%s", got)
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
