package record

import (
	"fmt"
	"testing"
)

// TestUnansweredKeepsFewReasons: reasons are counted apart up to
// MaxUnansweredReasons, later ones under "other", and merging keeps the
// counts whatever the order the reasons came in.
func TestUnansweredKeepsFewReasons(t *testing.T) {
	many := func(n int) Unanswered {
		var u Unanswered
		for i := range n {
			u.Add(fmt.Sprintf("reason %02d", i), 1)
		}
		return u
	}
	for _, c := range []struct {
		name string
		u    Unanswered
		want string
	}{
		// Nothing unanswered: nothing said.
		{"none", nil, ""},
		// Most sends first, then by name.
		{"two", Unanswered{"timeout": 2, "connection refused": 5}, "connection refused 5, timeout 2"},
		// Past the bound, the rest are "other".
		{"many", many(MaxUnansweredReasons + 3), "other 3, reason 00 1, reason 01 1, reason 02 1, reason 03 1, reason 04 1, reason 05 1, reason 06 1, reason 07 1"},
	} {
		if got := c.u.String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Adding nothing makes no entry.
	var empty Unanswered
	if empty.Add("timeout", 0); empty != nil {
		t.Errorf("adding 0 made %v", empty)
	}
	// A merge of shards with the bound's worth each keeps the total.
	a, b := many(MaxUnansweredReasons), Unanswered{"zzz": 4, "reason 00": 2}
	var m Unanswered
	m.Merge(a)
	m.Merge(b)
	total := int64(0)
	for _, n := range m {
		total += n
	}
	if want := int64(MaxUnansweredReasons + 6); total != want || m["reason 00"] != 3 || m[UnansweredOther] != 4 {
		t.Errorf("merged %v: total %d, want %d with reason 00 3 and other 4", m, total, want)
	}
}
