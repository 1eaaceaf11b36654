package loadrun

import (
	"fmt"
	"strings"
	"time"

	"github.com/crowdfed/crowd/pasture/weather"
)

// WeatherTimeline is a run's weather over time (--weather-at,
// --weather-repeat): specs put in force on the crowd's origins at offsets
// from the flood's start, the weather before the run put back when it
// ends. The zero value is no timeline.
type WeatherTimeline struct {
	// At are the changes, their offsets increasing.
	At []WeatherAt
	// Repeat starts the timeline over every Repeat (flapping); 0 runs it
	// once. Every offset is below it.
	Repeat time.Duration
}

// WeatherAt is one change of a timeline: at Offset from the flood's start
// (its warm-up's start), Spec is put in force.
type WeatherAt struct {
	Offset time.Duration
	// Text is the spec as written ("down=@followers", "clear"): what the
	// crowd is sent and the record keeps.
	Text string
	Spec weather.Spec
}

// ParseWeatherAt reads one --weather-at value: an offset from the flood's
// start and a weather spec, "+60s down=@followers" or "+10m clear".
func ParseWeatherAt(s string) (WeatherAt, error) {
	off, text, _ := strings.Cut(strings.TrimSpace(s), " ")
	text = strings.TrimSpace(text)
	d, err := time.ParseDuration(strings.TrimPrefix(off, "+"))
	if err != nil || d < 0 {
		return WeatherAt{}, fmt.Errorf("%q: %q is not an offset from the flood's start (+60s, +10m)", s, off)
	}
	if text == "" {
		return WeatherAt{}, fmt.Errorf("%q: no weather after the offset (e.g. \"+60s down=@followers\", \"+10m clear\")", s)
	}
	spec, err := weather.ParseSpec(text)
	if err != nil {
		return WeatherAt{}, fmt.Errorf("%q: %w", s, err)
	}
	return WeatherAt{Offset: d, Text: text, Spec: spec}, nil
}

// String writes the change as --weather-at takes it.
func (w WeatherAt) String() string { return "+" + w.Offset.String() + " " + w.Text }

// WeatherAtValue is --weather-at into t.At: each value one change,
// repeatable (a list, so that a scenario file may hold several).
func WeatherAtValue(t *WeatherTimeline) Value { return &weatherAtValue{t: t} }

// weatherAtValue is --weather-at; it is also a pflag.SliceValue, which is
// how a scenario's settings tell a list flag.
type weatherAtValue struct{ t *WeatherTimeline }

func (v *weatherAtValue) String() string { return "[" + strings.Join(v.GetSlice(), ",") + "]" }

func (v *weatherAtValue) Set(s string) error { return v.Append(s) }

func (v *weatherAtValue) Type() string { return "+offset spec" }

// Append adds one change.
func (v *weatherAtValue) Append(s string) error {
	w, err := ParseWeatherAt(s)
	if err != nil {
		return err
	}
	v.t.At = append(v.t.At, w)
	return nil
}

// Replace sets the changes to vals.
func (v *weatherAtValue) Replace(vals []string) error {
	t := WeatherTimeline{Repeat: v.t.Repeat}
	for _, s := range vals {
		if err := (&weatherAtValue{t: &t}).Append(s); err != nil {
			return err
		}
	}
	v.t.At = t.At
	return nil
}

// GetSlice is the changes as written.
func (v *weatherAtValue) GetSlice() []string {
	out := make([]string, len(v.t.At))
	for i, w := range v.t.At {
		out[i] = w.String()
	}
	return out
}

// checkWeather checks the timeline against the run: offsets increasing,
// each before --weather-repeat, and each before the run's end (warm-up and
// --seconds), since a change past it would never apply; a repeat does not
// change that. A run bounded by --max-sends alone has no end to check
// against: what it does not reach is not applied, and not recorded.
func (c Config) checkWeather(p *plan, bad func(string, ...any)) {
	t := c.Weather
	if len(t.At) == 0 {
		if t.Repeat != 0 {
			bad("--weather-repeat %v needs a timeline to repeat (--weather-at)", t.Repeat)
		}
		return
	}
	if p.ladder {
		bad("--weather-at: a weather timeline runs over one flood, and a ladder's rungs are floods of their own")
	}
	if t.Repeat < 0 || t.Repeat > 0 && t.Repeat < time.Second {
		bad("--weather-repeat %v: want 1s or more (0: the timeline runs once)", t.Repeat)
	}
	end := c.Warmup + time.Duration(c.Seconds*float64(time.Second))
	// A scenario's timeline (the outage preset's runs to +10 min) meets a
	// run shortened with --seconds: say the two ways out.
	shorter := ""
	if c.Scenario != nil && c.Scenario.Name != "" {
		shorter = fmt.Sprintf("; with --scenario %s, give --seconds past it, or a --weather-at of your own, which replaces the scenario's timeline", c.Scenario.Name)
	}
	for i, w := range t.At {
		switch {
		case i > 0 && w.Offset <= t.At[i-1].Offset:
			bad("--weather-at %q: offsets must increase, and +%v is not after +%v", w.String(), w.Offset, t.At[i-1].Offset)
		case t.Repeat > 0 && w.Offset >= t.Repeat:
			bad("--weather-at %q: +%v is not before --weather-repeat %v, so the timeline starts over before it applies", w.String(), w.Offset, t.Repeat)
		case c.Seconds > 0 && w.Offset >= end:
			bad("--weather-at %q: +%v is not before the run's end (--warmup + --seconds = %v), so it would never apply%s", w.String(), w.Offset, end, shorter)
		}
	}
}

// checkWeatherOrigins checks each change against the crowd's origins
// before the flood (a listed origin it does not serve, shares it cannot
// fill): the crowd would refuse it in the middle of the run. @followers
// rules are left to the crowd, whose follow graph ranks them when the
// change applies.
func checkWeatherOrigins(t WeatherTimeline, hosts []string) error {
	for _, w := range t.At {
		var plain weather.Spec
		for _, r := range w.Spec.Rules {
			if r.Followers == 0 {
				plain.Rules = append(plain.Rules, r)
			}
		}
		if _, err := weather.Assign(plain, hosts, 0); err != nil {
			return usagef("--weather-at %q: %v", w.String(), err)
		}
	}
	return nil
}
