package record_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// weatherRecord is shard's record of a short run with the weather w.
func weatherRecord(t *testing.T, shard string, w *record.Weather) *record.Record {
	t.Helper()
	ms := func(int) time.Duration { return time.Millisecond }
	res := recordtest.Run(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 5*time.Second, map[string]*record.Stats{
		"Create": recordtest.Sends(10, ms, recordtest.Always(record.Class202)),
	})
	r := recordtest.MustRecord(t, res, record.Settings{Arrivals: "constant", Mix: "create=1", Shard: shard})
	r.Weather = w
	return recordtest.RoundTrip(t, r)
}

// outage is a shard's timeline: its origin down at +1 s, clear at +3 s.
func outage(host string, clearN int) *record.Weather {
	return &record.Weather{Changes: []record.WeatherChange{
		{AtS: 1, Spec: "down=@followers", Counts: map[string]int{"down": 1, "clear": clearN - 1},
			Origins: []record.WeatherOrigin{{Host: host, Condition: "down"}}},
		{AtS: 3, Spec: "clear", Counts: map[string]int{"clear": clearN}},
	}}
}

func TestWeatherMerge(t *testing.T) {
	merged := &record.Weather{Changes: []record.WeatherChange{
		{AtS: 1, Spec: "down=@followers", Counts: map[string]int{"down": 2, "clear": 18},
			Origins: []record.WeatherOrigin{{Host: "flood12.test", Condition: "down"}, {Host: "flood3.test", Condition: "down"}}},
		{AtS: 3, Spec: "clear", Counts: map[string]int{"clear": 20}},
	}}
	differs := outage("flood12.test", 10)
	differs.Changes[1].AtS = 4
	repeats := outage("flood12.test", 10)
	repeats.RepeatS = 4
	for _, c := range []struct {
		name    string
		a, b    *record.Weather
		want    *record.Weather
		error   string // the merge's error names this; "" merges
		partial bool   // b's run stopped early
	}{
		// Each shard's origins joined, by host; the counts added.
		{"same timeline", outage("flood3.test", 10), outage("flood12.test", 10), merged, "", false},
		// Records without a timeline merge without one.
		{"none", nil, nil, nil, "", false},
		// A change at another offset is another timeline.
		{"offset differs", outage("flood3.test", 10), differs, nil, "change 2 is \"clear\" at +4s, not \"clear\" at +3s", false},
		// So is a timeline that starts over.
		{"repeat differs", outage("flood3.test", 10), repeats, nil, "repeat every 4s", false},
		// And a shard that ran none.
		{"one without", outage("flood3.test", 10), nil, nil, "the other none", false},
		// A whole run with fewer changes ran another timeline.
		{"fewer changes", outage("flood3.test", 10), &record.Weather{Changes: outage("x", 1).Changes[:1]}, nil, "1 changes, not 2", false},
		// A partial shard (stopped early) applied the first change only:
		// each change merges the shards that applied it.
		{"partial shard", outage("flood3.test", 10), &record.Weather{Changes: outage("flood12.test", 10).Changes[:1]}, &record.Weather{Changes: []record.WeatherChange{
			merged.Changes[0], {AtS: 3, Spec: "clear", Counts: map[string]int{"clear": 10}}}}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := weatherRecord(t, "2/2", c.b)
			b.Partial = c.partial
			m, err := record.Merge(weatherRecord(t, "1/2", c.a), b)
			if c.error != "" {
				if !errors.Is(err, record.ErrMerge) || !strings.Contains(err.Error(), c.error) {
					t.Fatalf("merge = %v, want ErrMerge naming %q", err, c.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.Weather, c.want) {
				t.Errorf("merged weather %+v, want %+v", m.Weather, c.want)
			}
		})
	}
}

// TestWeatherSectionRoundTrip: the section reads back from its JSON as
// written, and a refused change is counted.
func TestWeatherSectionRoundTrip(t *testing.T) {
	w := outage("flood3.test", 20)
	w.RepeatS = 240
	w.Changes[1].Error = "the crowd refused it"
	got := weatherRecord(t, "", w).Weather
	if !reflect.DeepEqual(got, w) || got.Failed() != 1 {
		t.Errorf("read back %+v (failed %d), want %+v", got, got.Failed(), w)
	}
	if s := w.Changes[0].WeatherCounts(); s != "down 1, clear 19" {
		t.Errorf("counts written %q", s)
	}
}
