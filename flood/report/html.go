package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// This file renders a record as documents for people: Markdown (for a pull
// request or runs.md) and a self-contained HTML page with plots. The page
// has no script and no external asset: the plots are SVG drawn here, so it
// reads the same from a CI artifact, a mail attachment or a file:// URL.

// WriteMarkdown writes the record as Markdown: the runs.md header and row
// (linking file), the per-type table, the status tally and the bottleneck
// verdict.
func WriteMarkdown(w io.Writer, r *record.Record, file string) error {
	return WriteMarkdownWith(w, r, file, nil)
}

// WriteMarkdownWith is WriteMarkdown with extra sections at the end, each
// its title in bold and its lines as a list.
func WriteMarkdownWith(w io.Writer, r *record.Record, file string, extra []Section) error {
	var b strings.Builder
	b.WriteString(record.MarkdownHeader())
	b.WriteString(r.MarkdownRow(file))
	// What was asked and how to replay it: the row has neither.
	var asked strings.Builder
	writeRunLine(&asked, r)
	fmt.Fprintf(&b, "\n%s", record.EscapeMarkdown(asked.String()))
	if l := seedLine(r); l != "" {
		fmt.Fprintf(&b, "\n%s\n", record.EscapeMarkdown(l))
	}
	aborted := anyAborted(r)
	if aborted {
		b.WriteString("\n| type | sent | p50 | p90 | p95 | p99 | p99.9 | max | service p99 | late p99 | 2xx | errors | no answer | aborted | dropped |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("\n| type | sent | p50 | p90 | p95 | p99 | p99.9 | max | service p99 | late p99 | 2xx | errors | no answer | dropped |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	}
	for _, t := range typeRows(r) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |",
			t.Name, t.Sent, t.P50, t.P90, t.P95, t.P99, t.P999, t.Max, t.Service99, t.Late99, t.OK, t.Errors, t.NoAnswer)
		if aborted {
			fmt.Fprintf(&b, " %s |", t.Aborted)
		}
		fmt.Fprintf(&b, " %s |\n", t.Dropped)
	}
	if note := forgedApart(r); note != "" {
		fmt.Fprintf(&b, "\n%s\n", record.EscapeMarkdown(note))
	}
	b.WriteString("\nStatus: ")
	var parts []string
	for _, s := range statusRows(r) {
		parts = append(parts, fmt.Sprintf("%s %d (%s)", s.Class, s.Count, s.Share))
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	b.WriteString(strings.Join(parts, ", "))
	fmt.Fprintf(&b, "; Retry-After seen %d.\n\n", r.Overall.Tally.RetryAfter)
	if why := r.Overall.WhyUnanswered().String(); why != "" {
		fmt.Fprintf(&b, "No answer: %s.\n\n", record.EscapeMarkdown(why))
	}
	if s := r.Overall.RateLimits.Summary(); s != "" {
		fmt.Fprintf(&b, "Rate limits advertised: %s.\n\n", record.EscapeMarkdown(s))
	}
	writeFetchbackMarkdown(&b, r)
	for _, l := range r.Deviations.Lines() {
		fmt.Fprintf(&b, "**Changed from what was asked**: %s.\n\n", record.EscapeMarkdown(l))
	}
	writeSecurityMarkdown(&b, r)
	writeWeatherMarkdown(&b, r)
	if r.Signatures != nil {
		// "signature both: …", capitalised: the word said once.
		s := r.Signatures.Summary()
		fmt.Fprintf(&b, "%s.\n\n", record.EscapeMarkdown(strings.ToUpper(s[:1])+s[1:]))
	}
	switch {
	case r.Bottleneck.Generator:
		b.WriteString("**Bottleneck: the generator, not the SUT**: these figures include the crowd's own limits.\n")
		for _, s := range r.Bottleneck.Reasons {
			fmt.Fprintf(&b, "- %s\n", record.EscapeMarkdown(s))
		}
	case noAnswer(r):
		b.WriteString(noAnswerSaid(r) + ".\n")
	default:
		b.WriteString("The generator kept up: the figures are the SUT's.\n")
	}
	for _, s := range r.Bottleneck.Notes {
		fmt.Fprintf(&b, "- note: %s\n", record.EscapeMarkdown(s))
	}
	if rule := r.Bottleneck.Rule; rule != "" {
		fmt.Fprintf(&b, "- rule: %s\n", record.EscapeMarkdown(rule))
	}
	for _, sec := range extra {
		fmt.Fprintf(&b, "\n**%s**\n\n", record.EscapeMarkdown(sec.Title))
		for _, l := range sec.Lines {
			fmt.Fprintf(&b, "- %s\n", record.EscapeMarkdown(l))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// typeRow is one row of the per-type table, formatted. Aborted counts the
// sends in flight when the run was interrupted, which the tables show as
// a column of their own only then.
type typeRow struct {
	Name, Sent, P50, P90, P95, P99, P999, Max, Service99, Late99, OK, Errors, NoAnswer, Aborted, Dropped string
}

// anyAborted reports whether r aborted a send, overall or of a type: its
// tables then have an aborted column.
func anyAborted(r *record.Record) bool {
	if r.Overall.Counts.Aborted > 0 {
		return true
	}
	for _, t := range r.Types {
		if t.Counts.Aborted > 0 {
			return true
		}
	}
	return false
}

// typeRows are the per-type rows, types sorted, then "all".
func typeRows(r *record.Record) []typeRow {
	row := func(name string, t *record.TypeRecord) typeRow {
		l := t.Latency
		return typeRow{
			Name: name, Sent: strconv.FormatInt(t.Counts.Sent, 10),
			P50: l.Format(l.P50), P90: l.Format(l.P90), P95: l.Format(l.P95), P99: l.Format(l.P99), P999: l.Format(l.P999), Max: l.Format(l.Max),
			Service99: t.Service.Format(t.Service.P99), Late99: t.Lateness.Format(t.Lateness.P99),
			OK:       strconv.FormatInt(t.Tally.OK(), 10),
			Errors:   fmt.Sprintf("%d (%s)", t.Tally.Errors(), record.Percent(t.Tally.Errors(), t.Counts.Completed)),
			NoAnswer: strconv.FormatInt(t.Tally.Unanswered(), 10),
			Aborted:  strconv.FormatInt(t.Counts.Aborted, 10),
			Dropped:  fmt.Sprintf("%d (%s)", t.Counts.Dropped, record.Percent(t.Counts.Dropped, t.Counts.Offered)),
		}
	}
	var rows []typeRow
	for _, name := range r.TypeNames() {
		rows = append(rows, row(name, r.Types[name]))
	}
	return append(rows, row("all", &r.Overall))
}

// statusRow is one status class of the overall tally that occurred.
type statusRow struct {
	Class string
	Count int64
	Share string
}

func statusRows(r *record.Record) []statusRow {
	t := r.Overall.Tally
	var rows []statusRow
	for cl := record.Class(0); cl < record.NumClasses; cl++ {
		if n := t.Classes[cl]; n > 0 {
			rows = append(rows, statusRow{Class: cl.String(), Count: n, Share: record.Percent(n, t.Total())})
		}
	}
	return rows
}

// keyValue is one line of a summary or settings table.
type keyValue struct{ Key, Value string }

// htmlPlot is one figure of the page.
type htmlPlot struct {
	ID, Title string
	Caption   string
	SVG       template.HTML
}

// htmlPage is what the template renders.
type htmlPage struct {
	Title      string
	Subtitle   string
	Partial    string
	Changed    []string // Deviations.Lines
	Headline   []keyValue
	Bottleneck record.Diagnosis
	// NoAnswer is said in the verdict's place when no send was answered.
	NoAnswer string
	Plots    []htmlPlot
	Types    []typeRow
	Aborted  bool // an interrupted run's sends in flight: the types table's column
	// ForgedApart is the types table's note on a run with forged
	// requests (forgedApart); "" without.
	ForgedApart string
	Status      []statusRow
	RetryAfter  int64
	// Unanswered is why sends got no answer (record.Unanswered's words);
	// "" when every send was answered.
	Unanswered string
	Settings   []keyValue
	Parts      []keyValue
	Schema     string
	Fetchback  *fetchView  // nil: the record has no fetch-back section
	Security   []string    // the security section's lines (security.go); none without it
	Blocks     []htmlBlock // the weather timeline and the deliveries under it (weather.go), then the extra sections (WriteHTMLWith)
}

// htmlBlock is a block of lines under a heading.
type htmlBlock struct {
	Title string
	Lines []string
}

// WriteHTML writes the record as one self-contained HTML page (no script,
// no external asset): a summary, the bottleneck verdict, four SVG plots
// (latency over time, offered and achieved rates over time, the percentile
// distribution of latency, service time and lateness from the run's HDR
// histograms, status classes over time), the per-type table, the status
// tally and the settings. The output depends on the record only, so it can
// be compared byte for byte.
func WriteHTML(w io.Writer, r *record.Record) error { return WriteHTMLWith(w, r, nil) }

// WriteHTMLWith is WriteHTML with extra sections after the per-type table
// (and the weather's), each a heading and its lines as a list.
func WriteHTMLWith(w io.Writer, r *record.Record, extra []Section) error {
	page, err := htmlPageOf(r)
	if err != nil {
		return err
	}
	for _, sec := range extra {
		page.Blocks = append(page.Blocks, htmlBlock(sec))
	}
	tmpl, err := template.New("report").Parse(reportTemplate)
	if err != nil {
		return err
	}
	if _, err = tmpl.New("fetchback").Parse(fetchbackTemplate); err != nil {
		return err
	}
	return tmpl.Execute(w, page)
}

// htmlPageOf is everything the page shows, computed from r.
func htmlPageOf(r *record.Record) (*htmlPage, error) {
	label := r.Settings.Label
	if label == "" {
		label = "flood"
	}
	p := &htmlPage{
		Title: "crowd flood: " + label,
		// The run's span holds its warm-up and the wait for the last
		// answers; the measured window is within it, so each is said apart.
		Subtitle: fmt.Sprintf("%s/s %s, measured over %s; ran %s to %s UTC", record.FormatNumber(r.OfferedRate()), r.Settings.Arrivals,
			fmtSeconds(time.Duration(r.Measured*float64(time.Second))),
			r.Start.UTC().Format("2006-01-02 15:04:05"), r.End.UTC().Format("15:04:05")),
		Changed:    r.Deviations.Lines(),
		Headline:   headline(r),
		Bottleneck: r.Bottleneck,
		NoAnswer:   noAnswerSaid(r),
		Types:      typeRows(r),
		Aborted:    anyAborted(r), ForgedApart: forgedApart(r),
		Status:     statusRows(r),
		Blocks:     weatherBlocks(r),
		RetryAfter: r.Overall.Tally.RetryAfter,
		Unanswered: r.Overall.WhyUnanswered().String(),
		Settings:   settingRows(r),
		Parts:      partRows(r),
		Schema:     fmt.Sprintf("%s v%d", r.Schema, r.Version),
		Fetchback:  fetchViewOf(r),
	}
	if r.Generators() > 1 {
		p.Subtitle += fmt.Sprintf(", %d generators merged", r.Generators())
	}
	if r.Settings.Scenario != "" {
		p.Subtitle += ", scenario " + r.Settings.Scenario
	}
	p.Security = r.Security.SecurityLines(findingsShown)
	if r.Partial {
		p.Partial = "Partial run: " + string(r.PartialReason) + ". The figures cover the part that ran."
	}
	var err error
	if p.Plots, err = htmlPlots(r); err != nil {
		return nil, err
	}
	p.Plots = append(p.Plots, deliveriesPlot(r)...)
	return p, nil
}

// headline is the summary cards: rates, losses, latency percentiles.
func headline(r *record.Record) []keyValue {
	c, o := r.Overall.Counts, r.Overall
	return []keyValue{
		{"offered", fmt.Sprintf("%.1f/s", r.Rates.Offered)},
		{"sent", fmt.Sprintf("%.1f/s", r.Rates.Sent)},
		{"2xx", fmt.Sprintf("%.1f/s", r.Rates.Throughput)},
		{"dropped", fmt.Sprintf("%d (%s)", c.Dropped, record.Percent(c.Dropped, c.Offered))},
		{"errors", fmt.Sprintf("%d (%s)", o.Tally.Errors(), record.Percent(o.Tally.Errors(), c.Completed))},
		{"p50", o.Latency.Format(o.Latency.P50)},
		{"p95", o.Latency.Format(o.Latency.P95)},
		{"p99", o.Latency.Format(o.Latency.P99)},
		{"p99.9", o.Latency.Format(o.Latency.P999)},
		{"max", o.Latency.Format(o.Latency.Max)},
		{"service p99", o.Service.Format(o.Service.P99)},
		{"late p99", o.Lateness.Format(o.Lateness.P99)},
	}
}

// settingRows is the settings table: what was asked, and the counts that
// show what the generator did with it.
func settingRows(r *record.Record) []keyValue {
	s, c := r.Settings, r.Overall.Counts
	rows := []keyValue{
		{"label", s.Label}, {"rate", record.FormatNumber(s.Rate) + "/s per generator"}, {"arrivals", s.Arrivals},
		{"duration", s.Duration.String()}, {"warm-up", s.Warmup.String()},
		{"max sends", strconv.FormatInt(s.MaxSends, 10)}, {"max in flight", strconv.Itoa(s.MaxInflight) + " per generator"},
		{"timeout", s.Timeout.String()}, {"mix", s.Mix}, {"signing", s.Signing}, {"target", s.Target},
		{"warm-up sends", fmt.Sprintf("%d offered, %d sent", r.Warmup.Offered, r.Warmup.Sent)},
		{"counts", fmt.Sprintf("offered %d, sent %d, dropped %d, starved %d, completed %d, aborted %d",
			c.Offered, c.Sent, c.Dropped, c.Starved, c.Completed, c.Aborted)},
		{"dispatch p99", record.FormatMicros(r.Dispatch.P99) + " (the generator's own delay)"},
	}
	if r.Signatures != nil {
		rows = append(rows, keyValue{"signatures", r.Signatures.Summary()})
	}
	return rows
}

// partRows is the generators table: a row per run merged into r.
func partRows(r *record.Record) []keyValue {
	var rows []keyValue
	for _, part := range r.Parts {
		shard := part.Shard
		if shard == "" {
			shard = "unsharded"
		}
		v := shard + ", started " + part.Start.UTC().Format("2006-01-02 15:04:05.000") + " UTC"
		if part.Seed != 0 {
			v += ", seed " + strconv.FormatUint(part.Seed, 10)
		}
		rows = append(rows, keyValue{part.ID, v})
	}
	return rows
}

// htmlPlots is the page's figures, each with the caption that says how to
// read it.
func htmlPlots(r *record.Record) ([]htmlPlot, error) {
	dist, err := percentilePlot(r)
	if err != nil {
		return nil, err
	}
	merged := ""
	if r.Generators() > 1 {
		merged = " The timeline of merged records holds, each second, the highest percentile of any generator: an upper bound."
	}
	return []htmlPlot{{
		ID: "plot-latency-time", Title: "Latency over time",
		Caption: "Per second of completion: latency from the intended send time (p50, p99, max) and lateness p99 " +
			"(how late sends left). Shaded: the warm-up, not measured." + merged,
		SVG: latencyTimePlot(r),
	}, {
		ID: "plot-rate-time", Title: "Offered and achieved rate",
		Caption: "Per second: sends due (offered, by intended time), sends made, and 2xx answers (by completion). " +
			"A gap between offered and sent is drops; between sent and 2xx, errors or a queue.",
		SVG: rateTimePlot(r),
	}, {
		ID: "plot-percentiles", Title: "Percentile distribution",
		Caption: "From the run's HDR histograms (measured window, all types): latency from the intended send time, " +
			"service time from the actual send, and lateness in between. The distance between latency and service " +
			"is time spent waiting before the send.",
		SVG: dist,
	}, {
		ID: "plot-status-time", Title: "Status over time",
		Caption: "Per second, stacked: 2xx answers, 429s, other errors (4xx, 5xx, timeouts, connection errors) " +
			"by completion, and sends dropped for lack of a free slot by intended time.",
		SVG: statusTimePlot(r),
	}}, nil
}

// deliveriesPlot is the plot of the SUT's delivery attempts under the
// weather, when the record has them.
func deliveriesPlot(r *record.Record) []htmlPlot {
	if r.Deliveries == nil || len(r.Deliveries.Attempts) == 0 {
		return nil
	}
	return []htmlPlot{{ID: "plot-attempts", Title: "Delivery attempts by weather",
		Caption: "Per second: the SUT's delivery attempts the crowd received, by the weather of the origin they met " +
			"(a refused connection or lookup counts once per attempt). " + r.Deliveries.Summary() + ".",
		SVG: attemptsPlot(r.Deliveries)}}
}

// --- plots -----------------------------------------------------------------

// timeAxis is the x axis of the timeline plots: from 0 to the end of the
// run exactly (a rounded-up end would draw a 60 s run on 80 s), ticked at
// round steps within it.
func timeAxis(r *record.Record) axis {
	end := 1.0
	if n := len(r.Timeline); n > 0 {
		last := r.Timeline[n-1]
		end = math.Max(1, float64(last.T-1)+last.Span)
	}
	a := linearAxis(end, secondsLabel)
	a.hi = end
	for len(a.ticks) > 0 && a.ticks[len(a.ticks)-1].v > end*(1+1e-9) {
		a.ticks = a.ticks[:len(a.ticks)-1]
	}
	return a
}

// plotTicks is the timeline as the plots draw it: a last tick shorter than
// a second (the drain after the schedule, when only answers come in) is
// folded into the one before it, so its rates divide by the real width of
// both together instead of showing 41 answers in 0.1 s as a 410/s spike.
func plotTicks(r *record.Record) []record.Tick {
	tl := r.Timeline
	n := len(tl)
	if n < 2 || tl[n-1].Span >= 1 {
		return tl
	}
	out := slices.Clone(tl[:n-1])
	m, d := &out[n-2], tl[n-1]
	m.Span += d.Span
	m.Warmup = m.Warmup && d.Warmup
	m.Inflight = d.Inflight
	m.Absorb(d)
	return out
}

// warmupBands shades the ticks wholly inside the warm-up.
func warmupBands(r *record.Record) [][2]float64 {
	var bands [][2]float64
	for _, t := range plotTicks(r) {
		if !t.Warmup {
			continue
		}
		x0, x1 := float64(t.T-1), float64(t.T-1)+t.Span
		if n := len(bands); n > 0 && bands[n-1][1] == x0 {
			bands[n-1][1] = x1
		} else {
			bands = append(bands, [2]float64{x0, x1})
		}
	}
	return bands
}

// tickMid is the middle of a tick's interval, where its figures are drawn.
func tickMid(t record.Tick) float64 { return float64(t.T-1) + t.Span/2 }

// perSecond divides a tick's count by its span (the last tick may be short).
func perSecond(n int64, t record.Tick) float64 {
	if t.Span <= 0 {
		return float64(n)
	}
	return float64(n) / t.Span
}

// tickLine is one per-second figure of a timeline plot: its name, its
// colour and how it is read from a tick.
type tickLine struct {
	name, color string
	dash        bool
	v           func(record.Tick) int64
}

// over is the line drawn over ticks at each tick's middle, y(count, tick)
// its height (NaN where there is no figure).
func (l tickLine) over(ticks []record.Tick, y func(int64, record.Tick) float64) series {
	s := series{name: l.name, color: l.color, dash: l.dash}
	for _, t := range ticks {
		s.pts = append(s.pts, point{tickMid(t), y(l.v(t), t)})
	}
	return s
}

// yRange is the lowest and highest y of the lines, NaN aside; +Inf and 0
// when there is none.
func yRange(lines []series) (lo, hi float64) {
	lo, hi = math.Inf(1), 0.0
	for _, s := range lines {
		for _, pt := range s.pts {
			if !math.IsNaN(pt.y) {
				lo, hi = math.Min(lo, pt.y), math.Max(hi, pt.y)
			}
		}
	}
	return lo, hi
}

func latencyTimePlot(r *record.Record) template.HTML {
	p := &svgPlot{id: "plot-latency-time", title: "Latency over time", x: timeAxis(r), xName: "time since start",
		yName: "latency", bands: warmupBands(r)}
	ticks := plotTicks(r)
	latency := func(n int64, t record.Tick) float64 {
		if t.Completed == 0 || n <= 0 {
			return math.NaN() // nothing completed: no figure, not zero
		}
		return float64(n)
	}
	for _, l := range []tickLine{
		{"p50", "#1f77b4", false, func(t record.Tick) int64 { return t.LatencyP50 }},
		{"p99", "#d62728", false, func(t record.Tick) int64 { return t.LatencyP99 }},
		{"max", "#7f7f7f", true, func(t record.Tick) int64 { return t.LatencyMax }},
		{"lateness p99", "#ff7f0e", true, func(t record.Tick) int64 { return t.LatenessP99 }},
	} {
		p.lines = append(p.lines, l.over(ticks, latency))
	}
	p.y = durationAxis(yRange(p.lines))
	return p.render()
}

func rateTimePlot(r *record.Record) template.HTML {
	p := &svgPlot{id: "plot-rate-time", title: "Offered and achieved rate", x: timeAxis(r), xName: "time since start",
		yName: "per second", bands: warmupBands(r)}
	ticks := plotTicks(r)
	for _, l := range []tickLine{
		{"offered", "#7f7f7f", true, func(t record.Tick) int64 { return t.Offered }},
		{"sent", "#1f77b4", false, func(t record.Tick) int64 { return t.Sent }},
		{"2xx", "#2ca02c", false, func(t record.Tick) int64 { return t.OK }},
	} {
		p.lines = append(p.lines, l.over(ticks, perSecond))
	}
	_, hi := yRange(p.lines)
	p.y = linearAxis(hi, numLabel)
	return p.render()
}

func statusTimePlot(r *record.Record) template.HTML {
	p := &svgPlot{id: "plot-status-time", title: "Status over time", x: timeAxis(r), xName: "time since start",
		yName: "per second", bands: warmupBands(r)}
	ticks := plotTicks(r)
	hi := 0.0
	for _, t := range ticks {
		p.barHalf = append(p.barHalf, t.Span/2*0.9)
		hi = math.Max(hi, perSecond(t.OK+t.Errors+t.Dropped, t))
	}
	for _, bar := range []tickLine{
		{"2xx", "#2ca02c", false, func(t record.Tick) int64 { return t.OK }},
		{"429", "#ff7f0e", false, func(t record.Tick) int64 { return t.Status429 }},
		{"other errors", "#d62728", false, func(t record.Tick) int64 { return t.Errors - t.Status429 }},
		{"dropped", "#9467bd", false, func(t record.Tick) int64 { return t.Dropped }},
	} {
		s := bar.over(ticks, perSecond)
		// A class that never occurred gets no legend entry.
		if slices.ContainsFunc(s.pts, func(pt point) bool { return pt.y > 0 }) {
			p.bars = append(p.bars, s)
		}
	}
	p.y = linearAxis(hi, numLabel)
	return p.render()
}

// percentilePoints is how many points a percentile curve has.
const percentilePoints = 160

// percentilePlot draws latency, service time and lateness against the
// percentile on a log axis of 1/(1-q): p50, p90, p99, p99.9, p99.99 are
// evenly spaced.
func percentilePlot(r *record.Record) (template.HTML, error) {
	nines := func(q float64) float64 { return -math.Log10(1 - q/100) } // p50 → 0.301, p99.99 → 4
	p := &svgPlot{id: "plot-percentiles", title: "Percentile distribution", xName: "percentile", yName: "time",
		x: axis{lo: nines(50), hi: nines(99.99)}}
	for _, q := range []float64{50, 90, 99, 99.9, 99.99} {
		p.x.ticks = append(p.x.ticks, axisTick{nines(q), "p" + strconv.FormatFloat(q, 'f', -1, 64)})
	}
	lo, hi := math.Inf(1), 0.0
	// Service first, wide: latency (service plus lateness) often lies on
	// it, and must not hide it.
	for _, h := range []struct {
		name, color string
		wide        bool
		hist        record.HistRecord
	}{
		{"service", "#1f77b4", true, r.Overall.Service},
		{"latency", "#d62728", false, r.Overall.Latency},
		{"lateness", "#ff7f0e", false, r.Overall.Lateness},
	} {
		d, err := h.hist.Decode()
		if err != nil {
			return "", fmt.Errorf("%s histogram: %w", h.name, err)
		}
		s := series{name: h.name, color: h.color, wide: h.wide}
		if d.TotalCount() > 0 {
			for i := range percentilePoints + 1 {
				x := p.x.lo + (p.x.hi-p.x.lo)*float64(i)/percentilePoints
				q := 100 * (1 - math.Pow(10, -x))
				v := math.Max(1, float64(d.ValueAtQuantile(q))) // 0 µs drawn at the axis floor
				lo, hi = math.Min(lo, v), math.Max(hi, v)
				s.pts = append(s.pts, point{x, v})
			}
		}
		p.lines = append(p.lines, s)
	}
	p.y = durationAxis(lo, hi)
	return p.render(), nil
}

// reportTemplate is the page. Everything it shows is computed in Go; the
// template only lays it out.
const reportTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1000px; padding: 0 16px; color: #222; background: #fff; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.sub { color: #555; margin-top: 0; }
.partial { background: #fff3cd; border: 1px solid #e0c36a; padding: 8px 12px; }
.cards { display: flex; flex-wrap: wrap; gap: 8px; padding: 0; list-style: none; }
.cards li { border: 1px solid #ddd; border-radius: 4px; padding: 6px 10px; min-width: 90px; }
.cards .k { display: block; font-size: 0.8em; color: #666; }
.cards .v { font-size: 1.15em; font-variant-numeric: tabular-nums; }
.verdict { padding: 8px 12px; border-radius: 4px; }
.verdict.sut { background: #e8f5e9; border: 1px solid #9ccc9c; }
.verdict.generator { background: #fdecea; border: 1px solid #e3a09a; }
figure { margin: 1.2em 0; }
figcaption { color: #555; font-size: 0.9em; max-width: 960px; }
svg.plot { max-width: 100%; height: auto; border: 1px solid #eee; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.all td { font-weight: 600; }
table.kv td { text-align: left; }
footer { margin-top: 2em; color: #888; font-size: 0.85em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="sub">{{.Subtitle}}</p>
{{if .Partial}}<p class="partial">{{.Partial}}</p>{{end}}{{if .Changed}}<div class="partial" id="changed"><strong>Changed from what was asked</strong>:<ul>{{range .Changed}}<li>{{.}}</li>{{end}}</ul></div>{{end}}{{if .Security}}<div class="partial" id="security"><strong>Verification</strong>:<ul>{{range .Security}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
<ul class="cards" id="summary">
{{range .Headline}}<li><span class="k">{{.Key}}</span><span class="v">{{.Value}}</span></li>
{{end}}</ul>

<h2>Bottleneck</h2>
{{if .Bottleneck.Generator}}<div class="verdict generator" id="verdict"><strong>The generator, not the SUT, was the bottleneck</strong>: these figures include the crowd's own limits.
<ul>{{range .Bottleneck.Reasons}}<li>{{.}}</li>{{end}}</ul></div>
{{else if .NoAnswer}}<div class="verdict" id="verdict"><strong>{{.NoAnswer}}</strong>.</div>
{{else}}<div class="verdict sut" id="verdict"><strong>The generator kept up</strong>: the figures are the SUT's.</div>
{{end}}{{if .Bottleneck.Notes}}<ul class="notes">{{range .Bottleneck.Notes}}<li>{{.}}</li>{{end}}</ul>
{{end}}
{{range .Plots}}
<h2>{{.Title}}</h2>
<figure id="fig-{{.ID}}">
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}
<h2>Per activity type</h2>
<table id="types">
<thead><tr><th>type</th><th>sent</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th><th>service p99</th><th>late p99</th><th>2xx</th><th>errors</th><th>no answer</th>{{if .Aborted}}<th>aborted</th>{{end}}<th>dropped</th></tr></thead>
<tbody>
{{range .Types}}<tr{{if eq .Name "all"}} class="all"{{end}}><td>{{.Name}}</td><td>{{.Sent}}</td><td>{{.P50}}</td><td>{{.P90}}</td><td>{{.P95}}</td><td>{{.P99}}</td><td>{{.P999}}</td><td>{{.Max}}</td><td>{{.Service99}}</td><td>{{.Late99}}</td><td>{{.OK}}</td><td>{{.Errors}}</td><td>{{.NoAnswer}}</td>{{if $.Aborted}}<td>{{.Aborted}}</td>{{end}}<td>{{.Dropped}}</td></tr>
{{end}}</tbody>
</table>
<p>Latency is measured from the intended send time (coordinated-omission corrected); service time from the actual send; lateness is the difference.{{if .Aborted}} Aborted sends were in flight when the run was interrupted: neither answered nor timed out, they are in no figure.{{end}}{{if .ForgedApart}} {{.ForgedApart}}.{{end}}</p>{{range .Blocks}}
<h2>{{.Title}}</h2>
<ul class="weather">{{range .Lines}}<li>{{.}}</li>
{{end}}</ul>{{end}}

<h2>Status</h2>
<table id="status">
<thead><tr><th>class</th><th>count</th><th>share</th></tr></thead>
<tbody>
{{range .Status}}<tr><td>{{.Class}}</td><td>{{.Count}}</td><td>{{.Share}}</td></tr>
{{else}}<tr><td colspan="3">no completed sends</td></tr>
{{end}}</tbody>
</table>
<p>Retry-After seen: {{.RetryAfter}}</p>{{if .Unanswered}}
<p id="unanswered">No answer: {{.Unanswered}}</p>{{end}}{{template "fetchback" .}}

<h2>Settings</h2>
<table class="kv" id="settings">
{{range .Settings}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>
{{end}}</table>
<h2>Generators</h2>
<table class="kv" id="parts">
{{range .Parts}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>
{{end}}</table>
<footer>{{.Schema}}, rendered by crowd report.</footer>
</body>
</html>
`
