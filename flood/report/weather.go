package report

import (
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// originsShown bounds the origins a change lists in the table and the
// Markdown; the record keeps them all.
const originsShown = 5

// weatherLines is the record's weather timeline as a short block: a
// heading, then a line per change (offset, spec as written, origins per
// condition, the origins taken); nothing without a timeline.
func weatherLines(w *record.Weather) []string {
	if w == nil {
		return nil
	}
	head := fmt.Sprintf("weather timeline: %d change(s)", len(w.Changes))
	if w.RepeatS > 0 {
		head += fmt.Sprintf(", starting over every %v", time.Duration(w.RepeatS*float64(time.Second)))
	}
	if n := w.Failed(); n > 0 {
		head += fmt.Sprintf("; %d REFUSED by the crowd", n)
	}
	lines := []string{head}
	for _, c := range w.Changes {
		at := "+" + time.Duration(c.AtS*float64(time.Second)).String()
		if c.Error != "" {
			lines = append(lines, fmt.Sprintf("  %-8s %s: REFUSED: %s", at, c.Spec, c.Error))
			continue
		}
		state := record.WeatherState{Counts: c.Counts, Origins: c.Origins}
		lines = append(lines, fmt.Sprintf("  %-8s %s: %s", at, c.Spec, state.Describe(originsShown)))
	}
	return lines
}

// ambientLines is the weather the run met and did not set, as a short
// block: what was in force at the start and since when, and what another
// hand put in force during the flood; nothing when it met none.
func ambientLines(a *record.AmbientWeather) []string {
	if a == nil || (a.Start == nil && a.Changed == nil && a.Unseen == 0 && a.Earlier == 0 && len(a.Unread) == 0) {
		return nil
	}
	lines := []string{"weather this run did not set"}
	if s := a.Start; s != nil {
		lines = append(lines, fmt.Sprintf("  at the start%s: %s; in force since %s before it (crowd weather set, or crowd serve --weather)",
			onShards(s, " (the others' clear)"), s.Describe(originsShown), roughly(time.Duration(-s.SinceS*float64(time.Second)))))
	}
	if c := a.Changed; c != nil {
		when := "as it started"
		if c.SinceS >= 0 {
			when = "at +" + time.Duration(c.SinceS*float64(time.Second)).Round(time.Millisecond).String()
		}
		to := "to clear, every origin"
		if c.Spec != "" {
			to = "to " + c.Spec + ": " + c.Describe(originsShown)
		}
		lines = append(lines, fmt.Sprintf("  CHANGED by another hand during the flood%s, %s, %s", onShards(c, ""), when, to))
	}
	if n := a.Earlier; n > 0 {
		lines = append(lines, fmt.Sprintf("  and %d earlier %s by another hand, seen during the flood (the last is above)", n, record.Plural(n, "change", "changes")))
	}
	if n := a.Unseen; n > 0 {
		lines = append(lines, fmt.Sprintf("  CHANGED by another hand %d %s during the flood between the flood's readings, as the crowd counts them: what it was in between is not known",
			n, record.Plural(n, "time", "times")))
	}
	if len(a.Unread) > 0 {
		lines = append(lines, fmt.Sprintf("  not known on shard %s: its crowd did not say its weather", strings.Join(a.Unread, ", ")))
	}
	return lines
}

// onShards names the shards of a merged run that met s, then says what
// the others met; "" when every shard met it.
func onShards(s *record.WeatherState, others string) string {
	if len(s.Shards) == 0 {
		return ""
	}
	return " on shard " + strings.Join(s.Shards, ", ") + others
}

// roughly rounds d as a person says how long ago: to a tenth of a second
// under a minute, to the second above.
func roughly(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// weatherSections are the record's weather blocks in order: what the run
// found, its own timeline, the deliveries under it.
func weatherSections(r *record.Record) [][]string {
	return [][]string{ambientLines(r.Ambient), weatherLines(r.Weather), r.Deliveries.Lines()}
}

// writeWeather writes the weather blocks in the table.
func writeWeather(b *strings.Builder, r *record.Record) {
	for _, lines := range weatherSections(r) {
		for _, l := range lines {
			fmt.Fprintln(b, l)
		}
	}
}

// weatherBlocks are writeWeather's blocks for the page: each heading, then
// its lines; none without a timeline or deliveries.
func weatherBlocks(r *record.Record) []htmlBlock {
	var out []htmlBlock
	for _, lines := range weatherSections(r) {
		if len(lines) == 0 {
			continue
		}
		b := htmlBlock{Title: strings.ToUpper(lines[0][:1]) + lines[0][1:]}
		for _, l := range lines[1:] {
			b.Lines = append(b.Lines, strings.TrimSpace(l))
		}
		out = append(out, b)
	}
	return out
}

// writeWeatherMarkdown is writeWeather for a pull request: the heading in
// bold, a list item per change.
func writeWeatherMarkdown(b *strings.Builder, r *record.Record) {
	for _, lines := range weatherSections(r) {
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(b, "**%s**\n\n", record.EscapeMarkdown(strings.ToUpper(lines[0][:1])+lines[0][1:]))
		for _, l := range lines[1:] {
			fmt.Fprintf(b, "- %s\n", record.EscapeMarkdown(strings.TrimSpace(l)))
		}
		b.WriteString("\n")
	}
}

// classColor is the attempts plot's colour for a weather class; a class
// not listed is grey.
func classColor(class string) string {
	switch class {
	case "clear":
		return "#2ca02c"
	case "down":
		return "#d62728"
	case "blackhole":
		return "#000000"
	case "slow":
		return "#ff7f0e"
	case "flaky":
		return "#9467bd"
	case "limited":
		return "#e377c2"
	case "gone":
		return "#8c564b"
	case "nxdomain":
		return "#17becf"
	}
	return "#7f7f7f"
}

// attemptsPlot draws the delivery attempts the crowd received per second,
// a line per weather class.
func attemptsPlot(d *record.Deliveries) template.HTML {
	last := 1
	classes := map[string]bool{}
	for _, t := range d.Attempts {
		last = max(last, t.T)
		for k := range t.ByClass {
			classes[k] = true
		}
	}
	p := &svgPlot{id: "plot-attempts", title: "Delivery attempts by weather", x: linearAxis(float64(last), secondsLabel),
		xName: "time since start", yName: "attempts per second"}
	hi := 0.0
	for _, class := range slices.Sorted(maps.Keys(classes)) {
		s := series{name: class, color: classColor(class)}
		for _, t := range d.Attempts {
			n := float64(t.ByClass[class])
			s.pts = append(s.pts, point{float64(t.T) - 0.5, n})
			hi = max(hi, n)
		}
		p.lines = append(p.lines, s)
	}
	p.y = linearAxis(hi, numLabel)
	return p.render()
}
