package record

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crowdfed/crowd/internal/hostorder"
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

// InForceS is when the crowd had the change in force, in seconds from the
// flood's start: AppliedS, or AtS (when it was due) in a record made
// before AppliedS was kept.
func (c WeatherChange) InForceS() float64 {
	if c.AppliedS > 0 {
		return c.AppliedS
	}
	return c.AtS
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
			slices.SortFunc(c.Origins, func(a, b WeatherOrigin) int { return hostorder.Compare(a.Host, b.Host) })
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

// AmbientWeather is the weather a run met on the crowd that it did not put
// in force itself. The crowd's own account of its weather is read right
// before the flood, before each change of the run's timeline, and right
// after the flood, so a change made and undone by another hand between
// two readings is not seen. A record has it whenever the crowd said its
// weather, empty when the run met none it did not set; without it, the
// crowd did not say.
type AmbientWeather struct {
	// Start is the weather in force when the flood started (crowd weather
	// set, crowd serve --weather, a run before this one); nil when every
	// origin was clear.
	Start *WeatherState `json:"start,omitempty"`
	// Changed is the last weather another hand put in force during the
	// flood (crowd weather set, another run's timeline), found at a reading
	// where the weather in force was not what the start or this run's own
	// timeline left; nil when none was.
	Changed *WeatherState `json:"changed,omitempty"`
	// Others counts another hand's changes during the flood as the crowd
	// counted them: those made and undone between two readings too,
	// which Changed cannot show. 0 from a crowd that does not count (an
	// older crowd serve), even with Changed set.
	Others int `json:"others,omitempty"`
	// Unseen is how many of Others no reading saw: made and undone
	// between two readings, or replaced before the next. Which origins
	// they put in weather is not known.
	Unseen int `json:"unseen,omitempty"`
	// Earlier is how many of Others a reading saw before the last one,
	// Changed: their weather is not kept.
	Earlier int `json:"earlier,omitempty"`
	// Unread, in a merged record, are the shards (i/n) whose crowd did not
	// say its weather: what they met is not known. Omitted when every
	// shard's did.
	Unread []string `json:"unread,omitempty"`
}

// WeatherState is the weather in force on the crowd at one moment.
type WeatherState struct {
	// SinceS is when the crowd put it in force, in seconds from the
	// flood's start: negative when before it.
	SinceS float64 `json:"since_s"`
	// Spec is the spec in force as the crowd writes it: @followers
	// resolved to origins ("down=flood3.test"), a share as written
	// ("slow=5%:30s:0.5"); "" is clear.
	Spec string `json:"spec"`
	// Counts is how many origins are in each condition, clear included.
	Counts map[string]int `json:"counts,omitempty"`
	// Origins are the origins in a condition other than clear, by host.
	Origins []WeatherOrigin `json:"origins,omitempty"`
	// Shards, in a merged record, are the shards (i/n) whose crowd was
	// in this weather, when the others' were not: the counts and origins
	// are theirs alone. Omitted when every shard's was.
	Shards []string `json:"shards,omitempty"`
}

// Describe writes the state as a report line shows it: the counts, then
// up to shown origins with their conditions ("down 1, clear 19
// (flood3.test down)"), or "clear" when no origin has weather.
func (s *WeatherState) Describe(shown int) string {
	c := WeatherChange{Counts: s.Counts}
	out := c.WeatherCounts()
	if len(s.Origins) == 0 || shown <= 0 {
		return cmp.Or(out, "clear")
	}
	var hosts []string
	for _, o := range s.Origins[:min(len(s.Origins), shown)] {
		hosts = append(hosts, o.Host+" "+o.Condition)
	}
	out += " (" + strings.Join(hosts, ", ")
	if more := len(s.Origins) - shown; more > 0 {
		out += fmt.Sprintf(", and %d more", more)
	}
	return out + ")"
}

// mergeAmbient joins the shards' ambient weather: each shard's crowd
// serves its own origins, so each moment's origins are joined and counts
// added; the start is put in force at the earliest shard's, a change
// lasts from the latest. A moment only some shards met names them; the
// shards whose crowd did not say are Unread. Nil when no shard's crowd
// said.
func mergeAmbient(recs []*Record) *AmbientWeather {
	var out AmbientWeather
	var started, changed []string
	for i, r := range recs {
		if r.Ambient == nil {
			out.Unread = append(out.Unread, cmp.Or(r.Settings.Shard, fmt.Sprintf("record %d", i+1)))
			continue
		}
		if r.Ambient.Start != nil {
			started = append(started, r.Settings.Shard)
		}
		if r.Ambient.Changed != nil {
			changed = append(changed, r.Settings.Shard)
		}
		out.Start = joinWeatherState(out.Start, r.Ambient.Start, true)
		out.Changed = joinWeatherState(out.Changed, r.Ambient.Changed, false)
		out.Others += r.Ambient.Others // each shard's crowd counts its own
		out.Unseen += r.Ambient.Unseen
		out.Earlier += r.Ambient.Earlier
	}
	if len(out.Unread) == len(recs) {
		return nil // no shard's crowd said
	}
	out.Start.onShards(started, len(recs))
	out.Changed.onShards(changed, len(recs))
	return &out
}

// onShards names the shards that met s, when not all of the n did.
func (s *WeatherState) onShards(shards []string, n int) {
	if s == nil {
		return
	}
	s.Shards = nil
	if len(shards) < n {
		s.Shards = shards
	}
}

// joinWeatherState adds b's origins and counts to a's (either may be
// nil), the spec's rules joined as one spec writes them, since the
// earlier of the two (or the later).
func joinWeatherState(a, b *WeatherState, earlier bool) *WeatherState {
	switch {
	case b == nil:
		return a
	case a == nil:
		c := *b
		c.Counts = maps.Clone(b.Counts)
		c.Origins = slices.Clone(b.Origins)
		return &c
	}
	if earlier == (b.SinceS < a.SinceS) {
		a.SinceS = b.SinceS
	}
	for rule := range strings.SplitSeq(b.Spec, ",") {
		// Shards in the same weather share its rules: each is written once.
		if rule != "" && !slices.Contains(strings.Split(a.Spec, ","), rule) {
			a.Spec = strings.TrimPrefix(a.Spec+","+rule, ",")
		}
	}
	if a.Counts == nil && len(b.Counts) > 0 {
		a.Counts = map[string]int{}
	}
	for k, n := range b.Counts {
		a.Counts[k] += n
	}
	a.Origins = append(a.Origins, b.Origins...)
	slices.SortFunc(a.Origins, func(x, y WeatherOrigin) int { return hostorder.Compare(x.Host, y.Host) })
	return a
}

// named is the state as its spec names it, on the shards that met it:
// two states named alike are the same weather.
func (s *WeatherState) named() string {
	out := cmp.Or(s.Spec, "clear")
	if len(s.Shards) > 0 {
		out += " (on shard " + strings.Join(s.Shards, ", ") + ")"
	}
	return out
}

// WeatherMet says in a few words what weather the run met, its own
// timeline and what it found ("clear" when it met none): two runs that
// differ here were measured under different weather.
func (r *Record) WeatherMet() string {
	var parts []string
	if a := r.Ambient; a != nil && a.Start != nil {
		parts = append(parts, "at the start "+a.Start.named())
	}
	if w := r.Weather; w != nil {
		parts = append(parts, "timeline "+w.asGiven())
	}
	if a := r.Ambient; a != nil {
		switch {
		case a.Changed != nil && a.Others > 1:
			parts = append(parts, fmt.Sprintf("changed by another hand %d times, last to %s", a.Others, a.Changed.named()))
		case a.Changed != nil:
			parts = append(parts, "changed by another hand to "+a.Changed.named())
		case a.Others > 0:
			parts = append(parts, fmt.Sprintf("changed by another hand %d %s between readings", a.Others, Plural(a.Others, "time", "times")))
		}
	}
	if len(parts) == 0 {
		return "clear"
	}
	return strings.Join(parts, "; ")
}

// asGiven writes the timeline as --weather-at gave it, one turn of it: each
// change with its offset ("+1s down=@followers then +3s clear"), and the
// period of a repeating one. Two runs of one timeline write it alike,
// however many turns their lengths made, and whichever changes the crowd
// refused or the flood's end left unconfirmed.
func (w *Weather) asGiven() string {
	var turn []string
	for _, c := range w.Changes {
		if w.RepeatS > 0 && c.AtS >= w.RepeatS {
			break // the next turns repeat this one
		}
		turn = append(turn, "+"+formatSeconds(c.AtS)+" "+c.Spec)
	}
	out := cmp.Or(strings.Join(turn, " then "), "(no change applied)")
	if w.RepeatS > 0 {
		out += " (every " + formatSeconds(w.RepeatS) + ")"
	}
	return out
}

// AmbientOrigins counts the origins that met weather the run did not set
// (the gate counter ambient_weather): those not clear at the flood's
// start, and those another hand's change left in a condition other than
// the run's own timeline had given them then (a change to clear counts
// the origins the timeline had in weather). False when the crowd did not
// say its weather (no section, or a merged shard's crowd that did not),
// or another hand made changes whose weather the record does not hold
// (Unseen, Earlier): a gate on it then has no data.
func (r *Record) AmbientOrigins() (int64, bool) {
	a := r.Ambient
	if a == nil || len(a.Unread) > 0 || a.Unseen > 0 || a.Earlier > 0 {
		return 0, false
	}
	met := map[string]bool{}
	if a.Start != nil {
		for _, o := range a.Start.Origins {
			met[strings.ToLower(o.Host)] = true
		}
	}
	if c := a.Changed; c != nil {
		own := map[string]string{}
		for _, o := range r.Weather.inForceAt(c.SinceS) {
			own[strings.ToLower(o.Host)] = o.Condition
		}
		theirs := map[string]string{}
		for _, o := range c.Origins {
			theirs[strings.ToLower(o.Host)] = o.Condition
		}
		for _, m := range []map[string]string{own, theirs} {
			for h := range m {
				if own[h] != theirs[h] {
					met[h] = true
				}
			}
		}
	}
	return int64(len(met)), true
}

// inForceAt is the origins in weather by the timeline's last change the
// crowd had applied at atS seconds from the flood's start; none before
// its first, or without a timeline.
func (w *Weather) inForceAt(atS float64) []WeatherOrigin {
	if w == nil {
		return nil
	}
	var out []WeatherOrigin
	for _, c := range w.Changes {
		if c.Error != "" {
			continue
		}
		if c.InForceS() > atS {
			break
		}
		out = c.Origins
	}
	return out
}
