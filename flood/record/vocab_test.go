package record

import (
	"strings"
	"testing"
)

// TestUndosDivertedAreADeviation: Undos sent as Announces are said, merged
// by sum, and make two runs' mixes differ past a percentage point.
func TestUndosDivertedAreADeviation(t *testing.T) {
	d := Deviations{UndosDiverted: 30}
	if d.Empty() || len(d.Lines()) != 1 || !strings.Contains(d.Lines()[0], "30 Undos were sent as Announces") {
		t.Errorf("lines %q", d.Lines())
	}
	d.merge(Deviations{UndosDiverted: 20})
	if d.UndosDiverted != 50 {
		t.Errorf("merged %d, want 50", d.UndosDiverted)
	}
	if diff := d.diff(Deviations{}, 1000, 1000); len(diff) != 1 {
		t.Errorf("5%% of sends diverted against none: %q, want a difference", diff)
	}
	if diff := (Deviations{UndosDiverted: 5}).diff(Deviations{}, 1000, 1000); len(diff) != 0 {
		t.Errorf("0.5%% of sends diverted against none: %q, want the same mix", diff)
	}
}

// TestMixNamesEveryVerb: every kind --mix names reads back as written.
func TestMixNamesEveryVerb(t *testing.T) {
	in := "create=1,like=2,follow=3,announce=4,undo=5,delete=6,update=7,reply=8,media=9"
	m, err := ParseMix(in)
	if err != nil || m.String() != in || m.Total() != 45 {
		t.Fatalf("ParseMix(%q) = %+v (%s), %v", in, m, m, err)
	}
}
