package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestWeatherShown: a record with a weather timeline shows each change
// (offset, spec as written, origins per condition, the origins taken, a
// refusal) in the table, the Markdown and the HTML page; one without shows
// nothing.
func TestWeatherShown(t *testing.T) {
	r := reportRecord(t)
	r.Weather = &record.Weather{RepeatS: 240, Changes: []record.WeatherChange{
		{AtS: 60, Spec: "down=@followers", Counts: map[string]int{"down": 1, "clear": 19}, Origins: []record.WeatherOrigin{{Host: "flood7.test", Condition: "down"}}},
		{AtS: 90, Spec: "slow=30%:60s", Counts: map[string]int{"slow": 6, "clear": 14}},
		{AtS: 120, Spec: "gone=flood99.test", Error: "flood99.test is not one of the crowd's origins"},
		{AtS: 600, Spec: "clear", Counts: map[string]int{"clear": 20}},
	}}
	for i := 1; i <= 6; i++ {
		r.Weather.Changes[1].Origins = append(r.Weather.Changes[1].Origins, record.WeatherOrigin{Host: fmt.Sprintf("flood%d.test", i), Condition: "slow:1m0s:0.5"})
	}
	checkRenderings(t, []rendering{
		{"table", func(b *bytes.Buffer) error { return WriteTable(b, r) }, []string{
			"weather timeline: 4 change(s), starting over every 4m0s; 1 REFUSED by the crowd",
			"  +1m0s    down=@followers: down 1, clear 19 (flood7.test down)",
			"flood5.test slow:1m0s:0.5, and 1 more)",
			"  +2m0s    gone=flood99.test: REFUSED: flood99.test is not one of the crowd's origins",
			"  +10m0s   clear: clear 20\n"}},
		{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, r, "r.json") }, []string{
			"**Weather timeline: 4 change(s)", "- +1m0s    down=@followers: down 1, clear 19"}},
		{"html", func(b *bytes.Buffer) error { return WriteHTML(b, r) }, []string{
			"<h2>Weather timeline: 4 change(s), starting over every 4m0s; 1 REFUSED by the crowd</h2>",
			"<li>&#43;1m0s    down=@followers: down 1, clear 19 (flood7.test down)</li>", // + escaped, as html/template does
			"<li>&#43;2m0s    gone=flood99.test: REFUSED: flood99.test is not one of the crowd&#39;s origins</li>"}},
	})
	r.Weather = nil
	for name, write := range map[string]func(*bytes.Buffer) error{
		"table": func(b *bytes.Buffer) error { return WriteTable(b, r) },
		"html":  func(b *bytes.Buffer) error { return WriteHTML(b, r) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil || strings.Contains(strings.ToLower(b.String()), "weather") {
			t.Errorf("%s: a run without a timeline shows one (%v):\n%s", name, err, b.String())
		}
	}
}

// TestAmbientWeatherShown: weather the run did not set is shown before
// its own timeline, in the table, the Markdown and the page: what was in
// force at the start and since when, and another hand's change during the
// flood (to clear, too), with when it came, and a shard whose crowd did
// not say; a run that met none shows nothing of it.
func TestAmbientWeatherShown(t *testing.T) {
	r := reportRecord(t)
	for _, tc := range []struct {
		name    string
		ambient *record.AmbientWeather
		want    []string // lines of the table
	}{
		// Set an hour before the flood, then left alone.
		{"start only", &record.AmbientWeather{Start: &record.WeatherState{SinceS: -3600, Spec: "down=flood3.test",
			Counts: map[string]int{"down": 1, "clear": 19}, Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}}}},
			[]string{"weather this run did not set\n",
				"  at the start: down 1, clear 19 (flood3.test down); in force since 1h0m0s before it (crowd weather set, or crowd serve --weather)\n"}},
		// Set 0.43 s before the flood: said to a tenth of a second.
		{"start just before", &record.AmbientWeather{Start: &record.WeatherState{SinceS: -0.43, Spec: "down=flood3.test",
			Counts: map[string]int{"down": 1, "clear": 19}, Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}}}},
			[]string{"  at the start: down 1, clear 19 (flood3.test down); in force since 400ms before it (crowd weather set, or crowd serve --weather)\n"}},
		// Cleared by someone else 12.5 s into a flood that began clear.
		{"changed to clear", &record.AmbientWeather{Changed: &record.WeatherState{SinceS: 12.5, Counts: map[string]int{"clear": 20}}},
			[]string{"weather this run did not set\n", "  CHANGED by another hand during the flood, at +12.5s, to clear, every origin\n"}},
		// A merged run: one shard began under weather, another hand changed the other's.
		{"shards", &record.AmbientWeather{
			Start: &record.WeatherState{SinceS: -60, Spec: "down=flood3.test", Counts: map[string]int{"down": 1, "clear": 9},
				Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}}, Shards: []string{"0/2"}},
			Changed: &record.WeatherState{SinceS: 2.25, Spec: "down=flood4.test", Counts: map[string]int{"down": 1, "clear": 9},
				Origins: []record.WeatherOrigin{{Host: "flood4.test", Condition: "down"}}, Shards: []string{"1/2"}}},
			[]string{"  at the start on shard 0/2 (the others' clear): down 1, clear 9 (flood3.test down); in force since 1m0s before it",
				"  CHANGED by another hand during the flood on shard 1/2, at +2.25s, to down=flood4.test: down 1, clear 9 (flood4.test down)\n"}},
		// Changed between the run's last reading and the flood's start: as it started.
		{"changed before the start", &record.AmbientWeather{Changed: &record.WeatherState{SinceS: -0.2, Spec: "slow=flood1.test:30s:0.5",
			Counts: map[string]int{"slow": 1, "clear": 19}, Origins: []record.WeatherOrigin{{Host: "flood1.test", Condition: "slow:30s:0.5"}}}},
			[]string{"  CHANGED by another hand during the flood, as it started, to slow=flood1.test:30s:0.5: slow 1, clear 19 (flood1.test slow:30s:0.5)\n"}},
		// Two of another hand's changes seen, the last kept.
		{"an earlier change", &record.AmbientWeather{Changed: &record.WeatherState{SinceS: 3, Counts: map[string]int{"clear": 20}}, Others: 2, Earlier: 1},
			[]string{"  CHANGED by another hand during the flood, at +3s, to clear, every origin\n", "  and 1 earlier change by another hand, seen during the flood (the last is above)\n"}},
		// Changed and undone by another hand between the flood's readings.
		{"unseen changes", &record.AmbientWeather{Others: 2, Unseen: 2},
			[]string{"weather this run did not set\n", "  CHANGED by another hand 2 times during the flood between the flood's readings, as the crowd counts them: what it was in between is not known\n"}},
		// A merged run, one shard's crowd did not say: not known there.
		{"a shard unread", &record.AmbientWeather{Unread: []string{"1/2"}},
			[]string{"weather this run did not set\n", "  not known on shard 1/2: its crowd did not say its weather\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.Ambient = tc.ambient
			last := tc.want[len(tc.want)-1]
			checkRenderings(t, []rendering{
				{"table", func(b *bytes.Buffer) error { return WriteTable(b, r) }, tc.want},
				{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, r, "r.json") }, []string{
					"**Weather this run did not set**", "- " + strings.TrimSpace(last)}},
				{"html", func(b *bytes.Buffer) error { return WriteHTML(b, r) }, []string{"<h2>Weather this run did not set</h2>"}},
			})
		})
	}
	for _, none := range []*record.AmbientWeather{nil, {}} { // the crowd did not say; it said clear
		r.Ambient = none
		var b bytes.Buffer
		if err := WriteTable(&b, r); err != nil || strings.Contains(b.String(), "did not set") {
			t.Errorf("a run that met no weather (%+v) shows some (%v):\n%s", none, err, b.String())
		}
	}
}

// TestDeliveriesShown: a record with the SUT's deliveries under the
// weather shows them in the table and the Markdown (a line per origin, the
// observed schedule, the verdict and its rule) and plots the attempts in
// the HTML page; one without shows none of it.
func TestDeliveriesShown(t *testing.T) {
	r := reportRecord(t)
	r.Deliveries = &record.Deliveries{
		Origins: []record.OriginDeliveries{{Host: "flood1.test", Conditions: []string{"clear", "down", "clear"}, Class: "down",
			Attempts: 4, PerHour: 1200, DeliveredAfterRecovery: 1,
			Recoveries: []record.Recovery{{AtS: 14, Backlog: 1, PeakPerS: 1, DrainS: 2.5}},
			Activities: []record.ActivityAttempts{{ID: "https://sut.test/p/1",
				Attempts:   []record.Attempt{{AtS: 0.01, Weather: "down"}, {AtS: 0.4, Weather: "down"}, {AtS: 1.2, Status: 202}},
				IntervalsS: []float64{0.39, 0.8}, Outcome: record.OutcomeAfterRecovery, DeliveredOn: 3, AfterRecoveryS: 2.5}}}},
		Isolation: record.Isolation{Verdict: record.VerdictBlocking, BaselineP95US: 400000, WeatherP95US: 38000000, Ratio: 95,
			Rule: record.IsolationRule()},
		Attempts: []record.AttemptTick{{T: 1, ByClass: map[string]int{"clear": 3}}, {T: 2, ByClass: map[string]int{"down": 2}}},
	}
	want := []string{"flood1.test clear → down → clear: 4 attempts (1200/h in weather); schedule at post +0.01s (-), +0.39s (-), +0.8s (202)",
		"cleared at +14s: backlog 1, peak 1/s, drained in 2.5 s", "healthy p95 400ms clear, 38.0s under weather (95.0×): head-of-line blocking"}
	checkRenderings(t, []rendering{
		{"table", func(b *bytes.Buffer) error { return WriteTable(b, r) }, append(want, "rule: head-of-line blocking when")},
		{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, r, "r.json") }, []string{"**Deliveries under the weather:", "- flood1.test"}},
		{"html", func(b *bytes.Buffer) error { return WriteHTML(b, r) }, []string{`id="plot-attempts"`, "head-of-line blocking",
			"<h2>Deliveries under the weather:", "<li>flood1.test clear → down → clear: 4 attempts"}},
	})
	r.Deliveries = nil
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil || strings.Contains(b.String(), "plot-attempts") {
		t.Errorf("a run without deliveries plots them (%v)", err)
	}
}

// rendering is one way a record is written for people, and what it must
// contain.
type rendering struct {
	name  string
	write func(*bytes.Buffer) error
	want  []string
}

// checkRenderings writes each rendering and reports what it lacks.
func checkRenderings(t *testing.T, cases []rendering) {
	t.Helper()
	for _, tc := range cases {
		var b bytes.Buffer
		if err := tc.write(&b); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s lacks %q:\n%s", tc.name, w, b.String())
			}
		}
	}
}
