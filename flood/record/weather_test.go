package record_test

import (
	"encoding/json"
	"errors"
	"fmt"
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
			Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}, {Host: "flood12.test", Condition: "down"}}},
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

// downAt is a shard's weather: host down since sinceS from the flood's
// start, the shard's other origins clear.
func downAt(host string, sinceS float64, clearN int) *record.WeatherState {
	return &record.WeatherState{SinceS: sinceS, Spec: "down=" + host, Counts: map[string]int{"down": 1, "clear": clearN},
		Origins: []record.WeatherOrigin{{Host: host, Condition: "down"}}}
}

// onShards is s as met on shards alone.
func onShards(s *record.WeatherState, shards ...string) *record.WeatherState {
	s.Shards = shards
	return s
}

// TestAmbientWeatherMerge: the shards' weather at the start and another
// hand's change are joined as one crowd's would be: origins by host,
// counts added, the rules in one spec; the start since the earliest
// shard's, a change from the latest; a shard that met none adds nothing,
// and the shards that met it are named; a shard whose crowd did not say
// is named as unread.
func TestAmbientWeatherMerge(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b *record.AmbientWeather
		want *record.AmbientWeather
	}{
		// Neither shard's crowd said its weather: the merge cannot say either.
		{"none said", nil, nil, nil},
		// Both crowds said, and neither met weather: the merge met none.
		{"both clear", &record.AmbientWeather{}, &record.AmbientWeather{}, &record.AmbientWeather{}},
		// One shard began under weather, the other clear: the shard is named,
		// the counts its alone.
		{"one shard", &record.AmbientWeather{Start: downAt("flood3.test", -60, 9)}, &record.AmbientWeather{},
			&record.AmbientWeather{Start: onShards(downAt("flood3.test", -60, 9), "1/2")}},
		// Each shard's crowd counted another hand's changes: added.
		{"counted", &record.AmbientWeather{Others: 1, Earlier: 1}, &record.AmbientWeather{Others: 2, Unseen: 2}, &record.AmbientWeather{Others: 3, Unseen: 2, Earlier: 1}},
		// One shard's crowd did not say: what it met is not known, and named.
		{"one unread", &record.AmbientWeather{}, nil, &record.AmbientWeather{Unread: []string{"2/2"}}},
		// One shard began under weather, another hand changed the other's.
		{"one started, one changed", &record.AmbientWeather{Start: downAt("flood3.test", -60, 9)}, &record.AmbientWeather{Changed: downAt("flood14.test", 2, 9)},
			&record.AmbientWeather{Start: onShards(downAt("flood3.test", -60, 9), "1/2"), Changed: onShards(downAt("flood14.test", 2, 9), "2/2")}},
		// Both began under weather, put in force at different times.
		{"both started", &record.AmbientWeather{Start: downAt("flood3.test", -60, 9)}, &record.AmbientWeather{Start: downAt("flood12.test", -5, 9)},
			&record.AmbientWeather{Start: &record.WeatherState{SinceS: -60, Spec: "down=flood3.test,down=flood12.test",
				Counts:  map[string]int{"down": 2, "clear": 18},
				Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}, {Host: "flood12.test", Condition: "down"}}}}},
		// Both began in the same weather (a share, written alike): its rule once.
		{"same spec", &record.AmbientWeather{Start: &record.WeatherState{SinceS: -5, Spec: "down=10%", Counts: map[string]int{"down": 1, "clear": 9},
			Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}}}},
			&record.AmbientWeather{Start: &record.WeatherState{SinceS: -5, Spec: "down=10%", Counts: map[string]int{"down": 1, "clear": 9},
				Origins: []record.WeatherOrigin{{Host: "flood14.test", Condition: "down"}}}},
			&record.AmbientWeather{Start: &record.WeatherState{SinceS: -5, Spec: "down=10%", Counts: map[string]int{"down": 2, "clear": 18},
				Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}, {Host: "flood14.test", Condition: "down"}}}}},
		// Another hand changed both crowds: the later change is when both were changed.
		{"both changed", &record.AmbientWeather{Changed: downAt("flood3.test", 2, 9)}, &record.AmbientWeather{Changed: downAt("flood12.test", 4, 9)},
			&record.AmbientWeather{Changed: &record.WeatherState{SinceS: 4, Spec: "down=flood3.test,down=flood12.test",
				Counts:  map[string]int{"down": 2, "clear": 18},
				Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}, {Host: "flood12.test", Condition: "down"}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := weatherRecord(t, "1/2", nil), weatherRecord(t, "2/2", nil)
			a.Ambient, b.Ambient = c.a, c.b
			a = recordtest.RoundTrip(t, a)
			shard1, _ := json.Marshal(a.Ambient)
			m, err := record.Merge(a, recordtest.RoundTrip(t, b))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.Ambient, c.want) {
				t.Errorf("merged %+v, want %+v", m.Ambient, c.want)
			}
			if after, _ := json.Marshal(a.Ambient); string(after) != string(shard1) {
				t.Errorf("the merge changed shard 1's own record: %s, was %s", after, shard1)
			}
		})
	}
}

// TestWeatherMet: the few words compare sets side by side, and the runs.md
// row shows, name the weather at the start, the run's own timeline and
// another hand's change; a run that met none is "clear", and its row says
// nothing of weather.
func TestWeatherMet(t *testing.T) {
	for _, c := range []struct {
		name    string
		weather *record.Weather
		ambient *record.AmbientWeather
		want    string
	}{
		// No weather at all.
		{"clear", nil, nil, "clear"},
		// Begun under weather someone set before.
		{"start", nil, &record.AmbientWeather{Start: downAt("flood3.test", -60, 19)}, "at the start down=flood3.test"},
		// Another origin in the same condition is other weather.
		{"another origin", nil, &record.AmbientWeather{Start: downAt("flood4.test", -60, 19)}, "at the start down=flood4.test"},
		// On one shard of a merged run.
		{"one shard", nil, &record.AmbientWeather{Start: onShards(downAt("flood3.test", -60, 9), "1/2")}, "at the start down=flood3.test (on shard 1/2)"},
		// The run's own timeline.
		{"timeline", outage("flood3.test", 20), nil, "timeline +1s down=@followers then +3s clear"},
		// A repeating timeline: one turn of it, however many the run made,
		// a refused change included (two runs of one command write it alike).
		{"repeating", &record.Weather{RepeatS: 10, Changes: []record.WeatherChange{
			{AtS: 1, Spec: "down=@followers"}, {AtS: 3, Spec: "clear"}, {AtS: 11, Spec: "down=@followers", Error: "refused"}, {AtS: 13, Spec: "clear"}}},
			nil, "timeline +1s down=@followers then +3s clear (every 10s)"},
		// All three.
		{"all", outage("flood3.test", 20), &record.AmbientWeather{Start: downAt("flood3.test", -60, 19), Changed: &record.WeatherState{SinceS: 4}},
			"at the start down=flood3.test; timeline +1s down=@followers then +3s clear; changed by another hand to clear"},
		// Changed and undone between readings: the crowd's count says so.
		{"unseen", nil, &record.AmbientWeather{Others: 2, Unseen: 2}, "changed by another hand 2 times between readings"},
		// Two changes, the last seen: both counted.
		{"two, the last seen", nil, &record.AmbientWeather{Changed: &record.WeatherState{SinceS: 4}, Others: 2, Unseen: 1},
			"changed by another hand 2 times, last to clear"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := weatherRecord(t, "", c.weather)
			r.Ambient = c.ambient
			if got := r.WeatherMet(); got != c.want {
				t.Errorf("WeatherMet() = %q, want %q", got, c.want)
			}
			// The runs.md row says it too, unless the run met none.
			row := r.MarkdownRow("r.json")
			if marked := strings.Contains(row, "(weather: "+c.want+")"); marked != (c.want != "clear") || c.want == "clear" && strings.Contains(row, "weather") {
				t.Errorf("runs.md row %q: want the weather marked %v", row, c.want != "clear")
			}
		})
	}
}

// TestLadderWeatherNote: a ladder whose rungs met clear weather says
// nothing of it; one whose rungs all met the same says so once; one whose
// rungs met different weather (another hand's change during a rung, which
// the next rung starts in) says what each met, and that its capacity
// verdict compares unlike floods.
func TestLadderWeatherNote(t *testing.T) {
	down := &record.AmbientWeather{Start: downAt("flood3.test", -60, 19)}
	for _, c := range []struct {
		name  string
		rungs []*record.AmbientWeather // each rung's, at 10/s, 20/s…
		want  []string
	}{
		// Clear throughout.
		{"clear", []*record.AmbientWeather{nil, nil}, nil},
		// Begun under weather, left alone.
		{"same", []*record.AmbientWeather{down, down}, []string{"weather: every rung met at the start down=flood3.test"}},
		// Another hand put flood3.test down during the first rung.
		{"changed", []*record.AmbientWeather{{Changed: downAt("flood3.test", 1.5, 19)}, down}, []string{
			"weather: the rungs met different weather, so the capacity verdict compares unlike floods:",
			"  10/s: changed by another hand to down=flood3.test",
			"  20/s: at the start down=flood3.test"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var res record.LadderResult
			for i, a := range c.rungs {
				r := weatherRecord(t, "", nil)
				r.Ambient = a
				res.Rows = append(res.Rows, record.RungRow{Index: i, Rate: float64(10 * (i + 1)), Record: r})
			}
			if got := res.WeatherNote(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("note %q, want %q", got, c.want)
			}
		})
	}
}

// TestAmbientWeatherGate: the gate ambient_weather counts the origins that
// met weather the run did not set, so 'ambient_weather==0' fails a run
// measured under another hand's weather; a crowd that did not say gives
// it no data (missed, as every gate without data is).
func TestAmbientWeatherGate(t *testing.T) {
	slowAt := func(host string, sinceS float64) *record.WeatherState {
		return &record.WeatherState{SinceS: sinceS, Spec: "slow=" + host + ":30s:0.5", Counts: map[string]int{"slow": 1, "clear": 19},
			Origins: []record.WeatherOrigin{{Host: host, Condition: "slow:30s:0.5"}}}
	}
	for _, c := range []struct {
		name    string
		weather *record.Weather
		ambient *record.AmbientWeather
		origins int64 // -1: no data
	}{
		// The crowd did not say its weather: nothing to judge.
		{"not said", nil, nil, -1},
		// It said, and the run met none it did not set.
		{"clear", nil, &record.AmbientWeather{}, 0},
		// The run's own timeline is its own, however bad.
		{"own timeline", outage("flood3.test", 20), &record.AmbientWeather{}, 0},
		// Begun with an origin down (crowd weather set before the run).
		{"start", nil, &record.AmbientWeather{Start: downAt("flood3.test", -60, 19)}, 1},
		// Another hand put an origin down during the flood.
		{"changed", nil, &record.AmbientWeather{Changed: downAt("flood7.test", 2, 19)}, 1},
		// The origin down at the start, another put down by another hand: two.
		{"start and changed", nil, &record.AmbientWeather{Start: downAt("flood3.test", -60, 19), Changed: downAt("flood7.test", 2, 19)}, 2},
		// Another hand cleared what the timeline had put down: that origin
		// met clear weather the run did not set.
		{"cleared behind the timeline", outage("flood3.test", 20), &record.AmbientWeather{Changed: &record.WeatherState{SinceS: 2, Counts: map[string]int{"clear": 20}}}, 1},
		// Another hand put the timeline's origin in the same condition again
		// and slowed another: only the other one differs.
		{"same condition again", outage("flood3.test", 20), &record.AmbientWeather{Changed: &record.WeatherState{SinceS: 2, Spec: "down=flood3.test,slow=flood4.test:30s:0.5",
			Counts:  map[string]int{"down": 1, "slow": 1, "clear": 18},
			Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}, {Host: "flood4.test", Condition: "slow:30s:0.5"}}}}, 1},
		// Another hand's change after the timeline cleared (at +3 s) is
		// judged against clear.
		{"after the timeline's clear", outage("flood3.test", 20), &record.AmbientWeather{Changed: slowAt("flood3.test", 4)}, 1},
		// A merged run, one shard's crowd did not say: not known.
		{"a shard unread", nil, &record.AmbientWeather{Unread: []string{"2/2"}}, -1},
		// The crowd counted another hand's change the readings saw.
		{"counted and seen", nil, &record.AmbientWeather{Changed: downAt("flood7.test", 2, 19), Others: 1}, 1},
		// It counted two, one made and undone between readings: which
		// origins met it is not known.
		{"one unseen", nil, &record.AmbientWeather{Changed: downAt("flood7.test", 2, 19), Others: 2, Unseen: 1}, -1},
		{"changed and back", nil, &record.AmbientWeather{Others: 2, Unseen: 2}, -1},
		// Two seen, the earlier's weather not kept: not known either.
		{"an earlier seen", nil, &record.AmbientWeather{Changed: downAt("flood7.test", 2, 19), Others: 2, Earlier: 1}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := weatherRecord(t, "", c.weather)
			r.Ambient = c.ambient
			r = recordtest.RoundTrip(t, r)
			n, ok := r.AmbientOrigins()
			if !ok && c.origins >= 0 || ok && n != c.origins {
				t.Fatalf("AmbientOrigins() = %d, %v; want %d (-1: no data)", n, ok, c.origins)
			}
			g, err := record.ParseGate("ambient_weather==0")
			if err != nil {
				t.Fatal(err)
			}
			res := g.Eval(r)
			if res.Known != (c.origins >= 0) || res.Holds != (c.origins == 0) {
				t.Errorf("%s: known %v holds %v; want known %v holds %v", res, res.Known, res.Holds, c.origins >= 0, c.origins == 0)
			}
			// The result line says what it counts.
			if want := fmt.Sprintf("ambient_weather = %d %s (want == 0)", c.origins, record.Plural(int(c.origins), "origin", "origins")); c.origins >= 0 && !strings.HasPrefix(res.String(), want) {
				t.Errorf("the result reads %q, want it to begin %q", res, want)
			}
		})
	}
}
