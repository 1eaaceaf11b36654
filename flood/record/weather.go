package record

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Weather is the weather timeline a run put in force on the crowd
// (--weather-at, --weather-repeat): each change, when, as written, and the
// origins it took. A run without a timeline has none.
type Weather struct {
	// RepeatS is the timeline's period in seconds (--weather-repeat); 0
	// when it ran once.
	RepeatS float64 `json:"repeat_s,omitempty"`
	// Changes are the changes applied, in order; a repeated timeline lists
	// each of its turns.
	Changes []WeatherChange `json:"changes"`
}

// WeatherChange is one change of the weather in a run.
type WeatherChange struct {
	// AtS is its offset from the flood's start, in seconds, as scheduled.
	AtS float64 `json:"at_s"`
	// AppliedS is when the crowd answered that the change was in force,
	// in seconds from the flood's start (at or a little after AtS); 0 for
	// a refused change and in records made before it was kept.
	AppliedS float64 `json:"applied_s,omitempty"`
	// Spec is the spec as the timeline wrote it ("down=@followers",
	// "clear").
	Spec string `json:"spec"`
	// Counts is how many origins each condition took ("down", "clear"…),
	// the origins left clear included.
	Counts map[string]int `json:"counts,omitempty"`
	// Origins are the origins in a condition other than clear, by host.
	Origins []WeatherOrigin `json:"origins,omitempty"`
	// Error is why the crowd refused the change (the weather stayed as
	// it was); "" when it was applied.
	Error string `json:"error,omitempty"`
}

// WeatherOrigin is an origin a change put in bad weather.
type WeatherOrigin struct {
	Host string `json:"host"`
	// Condition is the condition with its parameters, as a spec writes it
	// after the target ("slow:30s:0.5", "down").
	Condition string `json:"condition"`
}

// Failed is how many of the changes the crowd refused.
func (w *Weather) Failed() int {
	if w == nil {
		return 0
	}
	n := 0
	for _, c := range w.Changes {
		if c.Error != "" {
			n++
		}
	}
	return n
}

// mergeWeather merges the shards' timelines: every shard ran the same one
// (its changes at the same offsets with the same specs), each on the
// origins it serves, so the origins are joined and the counts added. A
// partial shard (one stopped early) may have applied only the first
// changes of the others': each change merges what the shards that applied
// it say. A shard whose timeline differs otherwise is refused.
func mergeWeather(out *Record, recs []*Record) error {
	ref := longestWeather(recs)
	var w *Weather
	if ref != nil {
		w = &Weather{RepeatS: ref.RepeatS, Changes: make([]WeatherChange, len(ref.Changes))}
		for j, c := range ref.Changes {
			w.Changes[j] = WeatherChange{AtS: c.AtS, Spec: c.Spec, Counts: map[string]int{}}
		}
	}
	for i, r := range recs {
		in := r.Weather
		if d := weatherDiff(ref, in, r.Partial); d != "" {
			return fmt.Errorf("%w: record %d ran another weather timeline than the others: %s", ErrMerge, i+1, d)
		}
		if w == nil {
			continue
		}
		for j, c := range in.Changes {
			m := &w.Changes[j]
			for k, n := range c.Counts {
				m.Counts[k] += n
			}
			m.Origins = append(m.Origins, c.Origins...)
			m.AppliedS = max(m.AppliedS, c.AppliedS) // in force on every shard by the last answer
			if c.Error != "" && !strings.Contains(m.Error, c.Error) {
				m.Error = strings.TrimPrefix(m.Error+"; "+c.Error, "; ")
			}
		}
	}
	if w != nil {
		for j := range w.Changes {
			c := &w.Changes[j]
			slices.SortFunc(c.Origins, func(a, b WeatherOrigin) int { return cmp.Compare(a.Host, b.Host) })
			if len(c.Counts) == 0 {
				c.Counts = nil
			}
		}
	}
	out.Weather = w
	return nil
}

// longestWeather is the timeline with the most changes among recs' (the
// first of them on a tie); nil when none has one.
func longestWeather(recs []*Record) *Weather {
	var ref *Weather
	for _, r := range recs {
		if r.Weather != nil && (ref == nil || len(r.Weather.Changes) > len(ref.Changes)) {
			ref = r.Weather
		}
	}
	return ref
}

// weatherDiff says how b's timeline differs from a's ("" when it does
// not): whether there is one, its period, and each change's offset and
// spec. A partial b may have fewer changes, the first of a's.
func weatherDiff(a, b *Weather, partial bool) string {
	switch {
	case a == nil && b == nil:
		return ""
	case a == nil || b == nil:
		return "one has a weather timeline, the other none"
	case a.RepeatS != b.RepeatS:
		return fmt.Sprintf("repeat every %gs, not %gs", b.RepeatS, a.RepeatS)
	case len(b.Changes) > len(a.Changes), len(b.Changes) < len(a.Changes) && !partial:
		return fmt.Sprintf("%d changes, not %d (and it is not a partial run)", len(b.Changes), len(a.Changes))
	}
	for j, c := range b.Changes {
		if c.AtS != a.Changes[j].AtS || c.Spec != a.Changes[j].Spec {
			return fmt.Sprintf("change %d is %q at +%gs, not %q at +%gs", j+1, c.Spec, c.AtS, a.Changes[j].Spec, a.Changes[j].AtS)
		}
	}
	return ""
}

// WeatherCounts writes a change's counts as "down 1, clear 19", the
// conditions in name order with clear last.
func (c WeatherChange) WeatherCounts() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.Counts)) {
		if k != "clear" {
			parts = append(parts, fmt.Sprintf("%s %d", k, c.Counts[k]))
		}
	}
	if n, ok := c.Counts["clear"]; ok {
		parts = append(parts, fmt.Sprintf("clear %d", n))
	}
	return strings.Join(parts, ", ")
}
