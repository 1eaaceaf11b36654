package report

import (
	"fmt"
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
		l := fmt.Sprintf("  %-8s %s: %s", at, c.Spec, c.WeatherCounts())
		if len(c.Origins) > 0 {
			var hosts []string
			for _, o := range c.Origins[:min(len(c.Origins), originsShown)] {
				hosts = append(hosts, o.Host+" "+o.Condition)
			}
			l += " (" + strings.Join(hosts, ", ")
			if more := len(c.Origins) - originsShown; more > 0 {
				l += fmt.Sprintf(", and %d more", more)
			}
			l += ")"
		}
		lines = append(lines, l)
	}
	return lines
}

// writeWeather writes the weather block in the table.
func writeWeather(b *strings.Builder, r *record.Record) {
	for _, l := range weatherLines(r.Weather) {
		fmt.Fprintln(b, l)
	}
}

// writeWeatherMarkdown is writeWeather for a pull request: the heading in
// bold, a list item per change.
func writeWeatherMarkdown(b *strings.Builder, r *record.Record) {
	lines := weatherLines(r.Weather)
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "**%s**\n\n", record.EscapeMarkdown(strings.ToUpper(lines[0][:1])+lines[0][1:]))
	for _, l := range lines[1:] {
		fmt.Fprintf(b, "- %s\n", record.EscapeMarkdown(strings.TrimSpace(l)))
	}
	b.WriteString("\n")
}
