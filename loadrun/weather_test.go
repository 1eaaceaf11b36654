package loadrun

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/pasture/weather"
)

// TestWeatherAtFlag: what --weather-at reads, and what it refuses, naming
// the entry.
func TestWeatherAtFlag(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		offset   time.Duration
		text     string // the spec kept as written; with error: what the error names
		error    bool
	}{
		// The outage: a selector.
		{"selector", "+60s down=@followers", time.Minute, "down=@followers", false},
		// Clear weather is a change like any other.
		{"clear", "+10m clear", 10 * time.Minute, "clear", false},
		// The plus is optional, spaces around are not kept.
		{"no plus", "  90s  slow=5%:60s ", 90 * time.Second, "slow=5%:60s", false},
		// A spec holds commas: one value is one change.
		{"commas", "+0s down=5%,flaky=10%:0.5", 0, "down=5%,flaky=10%:0.5", false},
		// The offset is a duration.
		{"no unit", "+60 down=1%", 0, `"+60" is not an offset`, true},
		// Not before the flood.
		{"negative", "-5s down=1%", 0, `"-5s" is not an offset`, true},
		// An offset alone changes nothing.
		{"no spec", "+5s", 0, "no weather after the offset", true},
		// The spec's own error, with the entry.
		{"bad spec", "+5s drizzle=5%", 0, `"+5s drizzle=5%": bad weather spec`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tl WeatherTimeline
			err := WeatherAtValue(&tl).Set(tc.in)
			if tc.error {
				if err == nil || !strings.Contains(err.Error(), tc.text) {
					t.Fatalf("Set(%q) = %v, want an error naming %q", tc.in, err, tc.text)
				}
				return
			}
			if err != nil || len(tl.At) != 1 || tl.At[0].Offset != tc.offset || tl.At[0].Text != tc.text {
				t.Fatalf("Set(%q) = %+v %v, want +%v %q", tc.in, tl.At, err, tc.offset, tc.text)
			}
			want, _ := weather.ParseSpec(tc.text)
			if tl.At[0].Spec.String() != want.String() {
				t.Errorf("spec %q, want %q", tl.At[0].Spec, want)
			}
		})
	}
}

// TestWeatherAtIsAList: the flag is repeatable, each value appended, and
// a scenario's settings see a list (pflag.SliceValue).
func TestWeatherAtIsAList(t *testing.T) {
	var tl WeatherTimeline
	v := WeatherAtValue(&tl)
	for _, s := range []string{"+1s gone=flood2.test", "+3s clear"} {
		if err := v.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	list, ok := v.(interface {
		GetSlice() []string
		Replace([]string) error
		Append(string) error
	})
	if !ok {
		t.Fatal("--weather-at is not a slice value: a scenario could set it only once")
	}
	if got := strings.Join(list.GetSlice(), " | "); got != "+1s gone=flood2.test | +3s clear" {
		t.Errorf("changes %s", got)
	}
	if err := list.Replace([]string{"+2s down=1%"}); err != nil || len(tl.At) != 1 || tl.At[0].Offset != 2*time.Second {
		t.Errorf("Replace: %+v %v", tl.At, err)
	}
}

// TestWeatherTimelineRules: what Validate refuses of a timeline, each
// naming its flag and the entry.
func TestWeatherTimelineRules(t *testing.T) {
	at := func(ss ...string) WeatherTimeline {
		var tl WeatherTimeline
		for _, s := range ss {
			if err := WeatherAtValue(&tl).Set(s); err != nil {
				t.Fatal(err)
			}
		}
		return tl
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "": valid
	}{
		// An outage and its recovery within a 10 s run.
		{"valid", func(c *Config) { c.Weather = at("+1s down=1%", "+3s clear") }, ""},
		// Offsets must increase: the second is not after the first.
		{"not increasing", func(c *Config) { c.Weather = at("+3s down=1%", "+3s clear") },
			`--weather-at "+3s clear": offsets must increase, and +3s is not after +3s`},
		// A change at the run's end never applies.
		{"past the end", func(c *Config) { c.Weather = at("+1s down=1%", "+10s clear") },
			`--weather-at "+10s clear": +10s is not before the run's end (--warmup + --seconds = 10s)`},
		// A scenario's timeline past a shortened run: the two ways out.
		{"a scenario's, past the end", func(c *Config) {
			c.Weather = at("+1m down=1%")
			c.Scenario = &ScenarioConfig{Name: "outage"}
		}, "never apply; with --scenario outage, give --seconds past it, or a --weather-at of your own, which replaces the scenario's timeline"},
		// The warm-up is part of the flood: offsets count from its start.
		{"warm-up counts", func(c *Config) { c.Warmup = 5 * time.Second; c.Weather = at("+12s clear") }, ""},
		// A repeat does not make a change past the end apply.
		{"repeat keeps the end", func(c *Config) { c.Weather = at("+20s clear"); c.Weather.Repeat = 30 * time.Second },
			"is not before the run's end"},
		// Each change of a repeated timeline comes before it starts over.
		{"past the repeat", func(c *Config) { c.Weather = at("+1s flaky=5%", "+4s clear"); c.Weather.Repeat = 4 * time.Second },
			`--weather-at "+4s clear": +4s is not before --weather-repeat 4s`},
		// Flapping within the run.
		{"flapping", func(c *Config) { c.Weather = at("+0s flaky=5%", "+2s clear"); c.Weather.Repeat = 4 * time.Second }, ""},
		// A repeat without a timeline.
		{"repeat alone", func(c *Config) { c.Weather.Repeat = time.Minute }, "--weather-repeat 1m0s needs a timeline"},
		// A repeat too short to mean anything.
		{"repeat too short", func(c *Config) { c.Weather = at("+0s down=1%"); c.Weather.Repeat = time.Millisecond }, "--weather-repeat 1ms: want 1s or more"},
		// A ladder's rungs are floods of their own.
		{"ladder", func(c *Config) { c.Rates = []float64{10, 20}; c.Step = time.Second; c.Weather = at("+0s down=1%") },
			"a ladder's rungs are floods of their own"},
		// A run bounded by sends only has no end to check against.
		{"max sends only", func(c *Config) { c.Seconds, c.MaxSends = 0, 100; c.Weather = at("+1h down=1%") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid(t)
			tc.edit(&c)
			errs := c.Validate()
			var all []string
			for _, e := range errs {
				all = append(all, e.Error())
			}
			text := strings.Join(all, "\n")
			if tc.want == "" && len(errs) > 0 || tc.want != "" && !strings.Contains(text, tc.want) {
				t.Errorf("Validate: %q, want %q", text, tc.want)
			}
		})
	}
}

// TestWeatherOriginsCheckedBeforeTheFlood: a change that lists an origin
// the crowd does not serve, or shares more origins than it has, is refused
// before the flood as a usage error; @followers is left to the crowd.
func TestWeatherOriginsCheckedBeforeTheFlood(t *testing.T) {
	hosts := []string{"flood1.test", "flood2.test"}
	for _, tc := range []struct {
		name, at, want string // want: what the error names; "" none
	}{
		// An origin the crowd serves: accepted.
		{"served", "+1s gone=flood2.test", ""},
		// One it does not: refused before the flood, naming it.
		{"not served", "+1s gone=flood3.test", "flood3.test is not one of the crowd's origins"},
		// Shares the origins left cannot fill: refused.
		{"too many", "+1s down=flood1.test,gone=100%", "needs 2 origins"},
		// A selector is ranked by the crowd when the change applies: not checked here.
		{"selector", "+1s down=@followers:5", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tl WeatherTimeline
			if err := WeatherAtValue(&tl).Set(tc.at); err != nil {
				t.Fatal(err)
			}
			err := checkWeatherOrigins(tl, hosts)
			if tc.want == "" && err != nil || tc.want != "" && (!errors.As(err, new(*record.UsageError)) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--weather-at")) {
				t.Errorf("checkWeatherOrigins(%s) = %v, want a usage error naming %q", tc.at, err, tc.want)
			}
		})
	}
}
