package record

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// TestUnansweredKeepsTheLargestReasons: a record keeps the
// MaxUnansweredReasons reasons with the most sends, the rest under
// "other", whatever the order they were counted or merged in.
func TestUnansweredKeepsTheLargestReasons(t *testing.T) {
	// rare(n) is n reasons of one send each; common is one of many.
	rare := func(n int) Unanswered {
		var u Unanswered
		for i := range n {
			u.Add(fmt.Sprintf("reason %02d", i), 1)
		}
		return u
	}
	for _, c := range []struct {
		name string
		u    Unanswered
		want string // its String once kept
	}{
		// Nothing unanswered: nothing said.
		{"none", nil, ""},
		// Most sends first, then by name.
		{"two", Unanswered{"timeout": 2, "connection refused": 5}, "connection refused 5, timeout 2"},
		// Past the bound, the smallest are "other".
		{"many", rare(MaxUnansweredReasons + 3), "other 3, reason 00 1, reason 01 1, reason 02 1, reason 03 1, reason 04 1, reason 05 1, reason 06 1, reason 07 1"},
		// A common reason counted after many rare ones is kept, not folded into "other".
		{"common last", func() Unanswered { u := rare(MaxUnansweredReasons); u.Add("timeout", 50); return u }(),
			"timeout 50, other 1, reason 00 1, reason 01 1, reason 02 1, reason 03 1, reason 04 1, reason 05 1, reason 06 1"},
		// An "other" already there takes the folded sends and is not a reason of its own.
		{"other there", Unanswered{UnansweredOther: 4, "a": 9, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "h": 1, "i": 1},
			"a 9, other 5, b 1, c 1, d 1, e 1, f 1, g 1, h 1"},
	} {
		if got := c.u.Kept().String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Adding nothing makes no entry.
	var empty Unanswered
	if empty.Add("timeout", 0); empty != nil {
		t.Errorf("adding 0 made %v", empty)
	}
	// Two generators' reasons merged in either order keep the same.
	a, b := rare(MaxUnansweredReasons), Unanswered{"zzz": 40, "reason 00": 2}
	var ab, ba Unanswered
	ab.Merge(a)
	ab.Merge(b)
	ba.Merge(b)
	ba.Merge(a)
	if !maps.Equal(ab.Kept(), ba.Kept()) || ab.Kept()["zzz"] != 40 || ab.Kept()["reason 00"] != 3 {
		t.Errorf("merged a b %v, b a %v: want the same, zzz 40 and reason 00 3 kept", ab.Kept(), ba.Kept())
	}
}

// TestPastRungSaysWhyNoAnswer: a ladder's rung past the sustained one
// that failed by sends without an answer says why they got none.
func TestPastRungSaysWhyNoAnswer(t *testing.T) {
	r := &Record{}
	r.Overall.Counts.Completed = 10
	r.Overall.Tally.Classes[Class202] = 6
	r.Overall.Tally.Classes[ClassConnError] = 4
	r.Overall.Unanswered = Unanswered{"connection reset": 4}
	how, graceful := DefaultCapacityRule().pastRung(RungRow{Record: r}, func(*Record) bool { return true }, 0)
	if want := "40% of the sends failed other than by shedding (conn_error=4; no answer: connection reset 4)"; graceful || !strings.Contains(how, want) {
		t.Errorf("rung %q (graceful %v), want it not graceful, saying %q", how, graceful, want)
	}
}
