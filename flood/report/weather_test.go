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
// refusal) in the table and the Markdown; one without shows nothing.
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
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
		want  []string
	}{
		{"table", func(b *bytes.Buffer) error { return WriteTable(b, r) }, []string{
			"weather timeline: 4 change(s), starting over every 4m0s; 1 REFUSED by the crowd",
			"  +1m0s    down=@followers: down 1, clear 19 (flood7.test down)",
			"flood5.test slow:1m0s:0.5, and 1 more)",
			"  +2m0s    gone=flood99.test: REFUSED: flood99.test is not one of the crowd's origins",
			"  +10m0s   clear: clear 20\n"}},
		{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, r, "r.json") }, []string{
			"**Weather timeline: 4 change(s)", "- +1m0s    down=@followers: down 1, clear 19"}},
	} {
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
	r.Weather = nil
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil || strings.Contains(b.String(), "weather") {
		t.Errorf("a run without a timeline shows one (%v):\n%s", err, b.String())
	}
}
