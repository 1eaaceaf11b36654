package record

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MarkdownHeader returns the header (two lines) of the runs.md table whose
// rows MarkdownRow writes.
func MarkdownHeader() string {
	return "| start (UTC) | label | shards | arrivals | rate/s | seconds | offered/s | sent/s | dropped | p50 | p95 | p99 | p99.9 | max | late p99 | 2xx | 429 | errors | bottleneck | record |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
}

// MarkdownRow returns the record's row of the runs.md table, linking file.
func (r *Record) MarkdownRow(file string) string {
	o := r.Overall
	c := o.Counts
	bound := "SUT"
	switch {
	case r.Bottleneck.Generator:
		bound = "**generator**"
	case o.Latency.Count == 0 && c.Sent > 0:
		bound = "- (no answer)"
	}
	if r.Partial {
		bound += " (partial: " + EscapeMarkdown(string(r.PartialReason)) + ")"
	}
	if !r.Deviations.Empty() {
		bound += " (changed: " + EscapeMarkdown(r.Deviations.short()) + ")"
	}
	if met := r.WeatherMet(); met != "clear" {
		// Figures measured under bad weather are not a clear run's.
		bound += " (weather: " + EscapeMarkdown(met) + ")"
	}
	label := r.Settings.Label
	if label == "" {
		label = "-"
	}
	return fmt.Sprintf("| %s | %s | %d | %s | %g | %.1f | %.1f | %.1f | %d (%s) | %s | %s | %s | %s | %s | %s | %d | %d | %d (%s) | %s | [%s](%s) |\n",
		r.Start.UTC().Format("2006-01-02 15:04:05"), EscapeMarkdown(label), r.Generators(), r.Settings.Arrivals,
		r.Settings.Rate*float64(r.Generators()), r.Measured, r.Rates.Offered, r.Rates.Sent,
		c.Dropped, Percent(c.Dropped, c.Offered),
		o.Latency.Format(o.Latency.P50), o.Latency.Format(o.Latency.P95), o.Latency.Format(o.Latency.P99), o.Latency.Format(o.Latency.P999), o.Latency.Format(o.Latency.Max),
		o.Lateness.Format(o.Lateness.P99), o.Tally.OK(), o.Tally.Classes[Class429], o.Tally.Errors(), Percent(o.Tally.Errors(), c.Completed),
		bound, file, file)
}

// EscapeMarkdown escapes a text for a Markdown table's cell: its | would end the cell.
func EscapeMarkdown(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// FormatMicros formats a microsecond value for humans: 850µs, 3.21ms, 1.25s.
func FormatMicros(us int64) string { return FormatDuration(time.Duration(us) * time.Microsecond) }

// FormatDuration formats d with three significant digits in µs, ms or s.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "µs"
	case d < time.Second:
		return Sig3(float64(d)/1e6) + "ms"
	default:
		return Sig3(d.Seconds()) + "s"
	}
}

func Sig3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// Percent formats n/of as a percentage ("0.2%"), "-" when of is 0.
func Percent(n, of int64) string {
	if of == 0 {
		return "-"
	}
	v := 100 * float64(n) / float64(of)
	switch {
	case v == 0:
		return "0%"
	case v < 0.1:
		return strconv.FormatFloat(v, 'f', 3, 64) + "%"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + "%"
}

// FormatShare formats a fraction as a percentage with two decimals, or
// three significant digits below 0.01 %: how compare's table shows a share.
func FormatShare(v float64) string {
	p := 100 * v
	if p != 0 && p < 0.01 {
		return strconv.FormatFloat(p, 'g', 3, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 2, 64) + "%"
}

// FormatRelative formats a relative change as compare's change column
// does: signed, one decimal (0.123 → "+12.3%"), "new" for +Inf (a change
// from zero, which no ratio describes).
func FormatRelative(change float64) string {
	if math.IsInf(change, 1) {
		return "new"
	}
	rel := strconv.FormatFloat(100*change, 'f', 1, 64) + "%"
	if change >= 0 {
		rel = "+" + rel
	}
	return rel
}

// FormatPoints formats the change of a share from base to head in
// percentage points, signed, as compare's change column does (0.005 to
// 0.05: "+4.50pp"): a share's relative change alone would make one error
// in a million, up from none, look like a collapse.
func FormatPoints(base, head float64) string {
	pp := strconv.FormatFloat(100*(head-base), 'f', 2, 64) + "pp"
	if head >= base {
		pp = "+" + pp
	}
	return pp
}

// Plural is one when n is 1, else many: "1 figure", "2 figures".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// FormatPercent formats a fraction as a percentage without trailing zeros
// (0.15 → "15%").
func FormatPercent(v float64) string { return strconv.FormatFloat(100*v, 'g', 4, 64) + "%" }

// FormatNumber formats a rate or count without trailing zeros.
func FormatNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
