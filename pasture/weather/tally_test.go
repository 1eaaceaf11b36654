package weather

import (
	"maps"
	"testing"
)

// The sky counts, by origin, what the weather answered since it was made:
// an origin has counters from the first forecast that names it, keeps them
// through every change (clear weather included), and an origin that never
// had weather has none, whatever is counted for it.
func TestSkyCountsAnswersAcrossChanges(t *testing.T) {
	origins := []string{"flood1.test", "flood2.test", "flood3.test"}
	var s Sky
	for _, c := range []struct {
		name   string
		spec   string // put in force before the counts ("clear" clears)
		counts map[string][]Answer
		want   map[string]Answered // Answered after the counts
	}{
		// clear weather from the start: nothing has counters, a stray count is dropped
		{"clear", "clear", map[string][]Answer{"flood1.test": {Lookup}}, map[string]Answered{}},
		// a down origin: its answers are counted, by kind
		{"down", "down=flood1.test", map[string][]Answer{"flood1.test": {Connection, Connection, Handshake}},
			map[string]Answered{"flood1.test": {Connections: 2, Handshakes: 1}}},
		// another origin takes weather: the first keeps its counts while clear now
		{"gone beside", "gone=flood2.test", map[string][]Answer{"flood2.test": {Document, Delivery}, "flood3.test": {Document}},
			map[string]Answered{"flood1.test": {Connections: 2, Handshakes: 1}, "flood2.test": {Documents: 1, Deliveries: 1}}},
		// clear again: every origin that had weather is still listed, counts kept
		{"cleared", "clear", nil,
			map[string]Answered{"flood1.test": {Connections: 2, Handshakes: 1}, "flood2.test": {Documents: 1, Deliveries: 1}}},
		// the first origin's weather again: its counts go on from where they were
		{"down again", "nxdomain=flood1.test", map[string][]Answer{"flood1.test": {Lookup}},
			map[string]Answered{"flood1.test": {Connections: 2, Handshakes: 1, Lookups: 1}, "flood2.test": {Documents: 1, Deliveries: 1}}},
	} {
		spec, err := ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Assign(spec, origins, 1)
		if err != nil {
			t.Fatal(err)
		}
		s.Set(f)
		for h, as := range c.counts {
			for _, a := range as {
				s.Count(h, a)
			}
		}
		if got := s.Answered(); !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	var none *Sky // a nil sky counts nothing and answers an empty map
	none.Count("flood1.test", Lookup)
	if got := none.Answered(); len(got) != 0 {
		t.Errorf("nil sky: %v", got)
	}
}
