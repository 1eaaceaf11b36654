package hostorder

import (
	"slices"
	"strings"
	"testing"
)

// TestCompareCountsOrigins: origins sort as they are counted, not
// as their names' bytes.
func TestCompareCountsOrigins(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		// Numbers by value: flood2 before flood10, and flood20 last.
		{"flood10.test flood2.test flood1.test flood20.test flood3.test", "flood1.test flood2.test flood3.test flood10.test flood20.test"},
		// Leading zeros: the same value, ordered by the text.
		{"flood2.test flood02.test flood1.test", "flood1.test flood02.test flood2.test"},
		// Names without numbers: by byte.
		{"sut.test b.test a.test", "a.test b.test sut.test"},
		// A name that is a prefix of another comes first.
		{"flood1.test.example flood1.test", "flood1.test flood1.test.example"},
		// Numbers in several places.
		{"o10-r2.test o2-r10.test o2-r9.test", "o2-r9.test o2-r10.test o10-r2.test"},
	} {
		hosts := strings.Fields(c.in)
		slices.SortFunc(hosts, Compare)
		if got := strings.Join(hosts, " "); got != c.want {
			t.Errorf("%s: sorted %s, want %s", c.in, got, c.want)
		}
	}
}
