package record

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReactionsDivertedAreADeviation: Likes and Announces sent as Creates
// are said (CHANGED lines, runs.md), kept in the record's JSON, merged by
// sum, and make two runs' mixes differ past a percentage point.
func TestReactionsDivertedAreADeviation(t *testing.T) {
	for _, c := range []struct {
		name string
		d    Deviations
		line string // the sentence Lines says
		row  string // the words of the runs.md row
		key  string // the record's JSON field
	}{
		// A Like with no liker left.
		{"one Like", Deviations{LikesDiverted: 1}, "1 Like was sent as a Create: every crowd actor had already liked every post",
			"1 Like sent as a Create", `"likes_diverted":1`},
		// Announces with no booster left.
		{"Announces", Deviations{AnnouncesDiverted: 40}, "40 Announces were sent as Creates: every crowd actor had already boosted every post",
			"40 Announces sent as Creates", `"announces_diverted":40`},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, _ := json.Marshal(c.d)
			if c.d.Empty() || len(c.d.Lines()) != 1 || !strings.Contains(c.d.Lines()[0], c.line) ||
				c.d.short() != c.row || !strings.Contains(string(raw), c.key) {
				t.Errorf("lines %q, row %q, JSON %s", c.d.Lines(), c.d.short(), raw)
			}
		})
	}
	d := Deviations{LikesDiverted: 30, AnnouncesDiverted: 2}
	d.merge(Deviations{LikesDiverted: 20, AnnouncesDiverted: 1})
	if d.LikesDiverted != 50 || d.AnnouncesDiverted != 3 {
		t.Errorf("merged %+v, want 50 and 3", d)
	}
	if diff := d.diff(Deviations{}, 1000, 1000); len(diff) != 1 || !strings.Contains(diff[0], "Likes sent as Creates 50") {
		t.Errorf("5%% of sends diverted against none: %q, want one difference, the Likes'", diff)
	}
	if raw, _ := json.Marshal(Deviations{}); strings.Contains(string(raw), "likes_diverted") {
		t.Errorf("no reaction diverted: %s, want the fields omitted", raw)
	}
}
