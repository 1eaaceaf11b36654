package record

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ErrIncomparable is wrapped by Comparable's error: two records that are not
// the same unit of work (another offered rate, mix or arrival process), whose
// latencies would differ for reasons that are not the SUT's.
var ErrIncomparable = errors.New("flood: runs are not the same unit of work")

// ErrUnmeasured is wrapped by Compare's error for a record with nothing to
// judge: no measured window, no completed measured send, or a partial run
// stopped within its first measured second (a results file that could not
// be written, a crash at start). Its figures rest on a send or two, so no
// verdict can be given, whatever Force says.
var ErrUnmeasured = errors.New("nothing measured to compare")

// DefaultCompareMetrics is what `crowd compare` looks at when not told:
// latency p95 and p99 (from the intended send time), the error share, the
// send rate achieved and the 2xx rate.
func DefaultCompareMetrics() string { return "p95,p99,errors,rate,throughput" }

// CompareMetric is one figure Compare looks at, named in the vocabulary of
// the gates (see Gate): a duration ("p95", "p99.9", "max", "service.p99",
// "lateness.p99", "dispatch.p99"), a counter compared as a share of its
// denominator ("errors", "dropped", "status429", "timeout", "ok"), or a rate
// ("rate" = sent/s, "throughput" = 2xx/s).
type CompareMetric struct {
	g Gate
}

// Name is the metric's canonical name ("p95", "service.p99", "errors"):
// latency, the default family, goes unnamed.
func (m CompareMetric) Name() string {
	if m.g.kind == kindDuration && m.g.Family == "latency" {
		return m.g.Metric
	}
	return m.g.metricString()
}

// HigherIsBetter reports the metric's direction: rates and success shares
// (ok, sent, completed, status2xx, status202) are better higher; latencies
// and every other share are better lower.
func (m CompareMetric) HigherIsBetter() bool {
	switch m.g.kind {
	case kindRate:
		return true
	case kindCount:
		switch m.g.Metric {
		case "ok", "status2xx", "status202", "sent", "completed":
			return true
		}
	}
	return false
}

// isShare: the metric is a share, whose change is shown in percentage points.
func (m CompareMetric) isShare() bool { return m.g.kind == kindCount }

// RunSectionPart reports whether name is a part of crowd run's section of
// a record (SCHEMA.md, "A load run"), which a metric may be taken to name
// (visibility.p95) though no flood figure is one.
func RunSectionPart(name string) bool {
	switch strings.ToLower(name) {
	case "visibility", "home", "delivery", "drain", "sweep", "setup":
		return true
	}
	return false
}

// ParseCompareMetrics reads a comma-separated list of metric names (see
// CompareMetric); a name may appear once. A type prefix ("Create.p99") is
// refused: the comparison covers every type anyway. So is "offered", which
// comparable runs share. Errors are *UsageError.
func ParseCompareMetrics(s string) ([]CompareMetric, error) {
	var out []CompareMetric
	seen := map[string]bool{}
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		g := Gate{Expr: f}
		if err := g.parseMetric(f); err != nil {
			return nil, err
		}
		if g.Type != "" {
			if RunSectionPart(g.Type) {
				return nil, usage(f, "--metric names the flood's figures; %s is a part of crowd run's run section, which compare judges after the flood's verdict, each of its figures, whatever --metric says (crowd run --expect gates a run's own, e.g. 'visibility.p95<5s')", g.Type)
			}
			return nil, usage(f, "compare covers every activity type: drop %q", g.Type+".")
		}
		if g.Metric == "never_seen" || g.Metric == "unreached" {
			// Counters of crowd run's run section, not of the flood's types.
			return nil, usage(f, "%s is crowd run's, of its run section, which compare judges after the flood's verdict whatever --metric says (crowd run --expect gates a run's own, e.g. 'visibility.never_seen==0')", g.Metric)
		}
		if g.Metric == "ambient_weather" {
			return nil, usage(f, "compare refuses runs that met different weather; ambient_weather gates one run's (--expect 'ambient_weather==0')")
		}
		if g.kind == kindRate && g.Metric == "offered" {
			return nil, usage(f, "comparable runs offer the same rate: compare rate or throughput")
		}
		m := CompareMetric{g: g}
		if seen[m.Name()] {
			return nil, usage(s, "%s appears twice", m.Name())
		}
		seen[m.Name()] = true
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, usage(s, "no metric: want e.g. p95,p99,errors,rate")
	}
	return out, nil
}

// ParseThreshold reads a --max-regression or a --share-floor: a
// percentage with its sign ("15%", "2.5%"), returned as a fraction (0.15).
// It must be 0 or more and finite. A bare number other than 0 is refused:
// 0.15 reads as a fraction (15 %) as readily as a percentage (0.15 %).
// Errors are *UsageError.
func ParseThreshold(s string) (float64, error) {
	t := strings.TrimSpace(s)
	num, pct := strings.CutSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return 0, usage(s, "want a percentage of 0 or more, e.g. 15%%")
	case !pct && v != 0 && v <= 1:
		return 0, usage(s, "give a percentage: %s%% (%s as a fraction) or %s%%", FormatNumber(math.Round(v*100*1e9)/1e9), num, num)
	case !pct && v != 0:
		return 0, usage(s, "give a percentage, e.g. %s%%", num)
	}
	return v / 100, nil
}

// OfferedRate is the rate the run's generators were asked for together.
func (r *Record) OfferedRate() float64 { return r.Settings.Rate * float64(r.Generators()) }

// sameMix compares two --mix values by the proportion of every kind they
// weigh (create=2,like=1 is create=4,like=2; create=1 is not
// create=1,delete=3); values that do not parse compare as strings.
func sameMix(a, b string) bool {
	ma, errA := ParseMix(a)
	mb, errB := ParseMix(b)
	if errA != nil || errB != nil {
		return strings.TrimSpace(a) == strings.TrimSpace(b)
	}
	sa, sb := ma.Total(), mb.Total()
	wa, wb := ma.Weights(), mb.Weights()
	for i := range wa {
		if math.Abs(wa[i].Weight/sa-wb[i].Weight/sb) >= 1e-9 {
			return false
		}
	}
	return true
}

// Comparable reports whether base and head measured the same unit of work:
// the same total offered rate (rate × generators), the same activity mix
// (by proportion) as asked and as sent (their Deviations: Follows sent as
// Creates, personas without posts), the same arrival process and the same
// weather on the crowd (Record.WeatherMet: its own timeline and what it
// met but did not set). A latency measured at another rate, on another
// mix or while other origins were down differs for reasons that are not
// the SUT's, so such a pair is refused, wrapping ErrIncomparable and
// naming each difference. Everything else (duration, signing, target, label) may
// differ: Compare notes it.
func Comparable(base, head *Record) error {
	var d []string
	if ob, oh := base.OfferedRate(), head.OfferedRate(); ob != oh {
		d = append(d, fmt.Sprintf("offered rate %s/s ≠ %s/s", FormatNumber(ob), FormatNumber(oh)))
	}
	if !sameMix(base.Settings.Mix, head.Settings.Mix) {
		d = append(d, fmt.Sprintf("mix %q ≠ %q", base.Settings.Mix, head.Settings.Mix))
	}
	for _, e := range base.Deviations.diff(head.Deviations, allSent(base), allSent(head)) {
		d = append(d, "effective mix: "+e)
	}
	if base.Settings.Arrivals != head.Settings.Arrivals {
		d = append(d, fmt.Sprintf("arrivals %s ≠ %s", base.Settings.Arrivals, head.Settings.Arrivals))
	}
	if wb, wh := base.WeatherMet(), head.WeatherMet(); wb != wh {
		// The crowd's origins answered the SUT otherwise (its deliveries,
		// its fetches of keys and notes): not the same work.
		d = append(d, fmt.Sprintf("weather %s ≠ %s", wb, wh))
	}
	if len(d) > 0 {
		return fmt.Errorf("%w: %s", ErrIncomparable, strings.Join(d, ", "))
	}
	return nil
}

// allSent is every send of r, warm-up included: what its deviations count.
func allSent(r *Record) int64 { return r.Overall.Counts.Sent + r.Warmup.Sent }

// CompareOptions say what Compare looks at and what counts as a regression.
type CompareOptions struct {
	// Metrics to compare, overall and for every type both records have
	// (nil = DefaultCompareMetrics).
	Metrics []CompareMetric
	// MaxRegression is the relative change (0.15 = 15 %) beyond which a
	// metric moving the wrong way is a regression, and one moving the right
	// way an improvement.
	MaxRegression float64
	// ShareFloor is the smallest absolute change of a share (0.001 = 0.1
	// percentage point) that can be a regression or an improvement: an error
	// share going from 0 to 0.01 % is infinitely larger, yet one send in ten
	// thousand is noise, not a verdict.
	ShareFloor float64
	// LatencyFloor is the smallest change of a duration (µs) that can be a
	// regression or an improvement: below about a millisecond, two runs on
	// one machine differ by its scheduling alone. 0 = none.
	LatencyFloor float64
	// Force compares records that Comparable refuses.
	Force bool
}

// Noise rule: a figure moved only when its change also exceeds what
// sampling alone makes two runs of the same SUT differ by, at this
// confidence (z = 2.576, two-sided 99 %): for a quantile, the runs'
// order-statistic intervals (from each histogram) do not overlap; for a
// share, a two-proportion test; for a rate, Poisson counts. Sends are not
// independent (a stall delays every send due during it), so the change must
// also exceed the runs' second-to-second spread: batch means over the
// timeline's measured seconds, with Student's t for their number (for runs
// of minBatchSeconds whole seconds or more).
const (
	noiseZ          = 2.576
	noiseConfidence = "99%"
	// fewBeyond is how many sends must lie beyond a quantile for it to be
	// judged at all: a p99 of 300 sends is their third-worst.
	fewBeyond = 10
)

// DefaultLatencyFloor is crowd compare's --latency-floor in µs: 1 ms, the
// order of the timer and scheduling noise of a shared machine.
const DefaultLatencyFloor = 1000.0

// Verdict is how one figure moved between base and head.
type Verdict string

// The verdicts of a CompareRow.
const (
	VerdictSame      Verdict = ""          // within the threshold
	VerdictBetter    Verdict = "better"    // moved the right way beyond the threshold
	VerdictRegressed Verdict = "REGRESSED" // moved the wrong way beyond the threshold
	VerdictNoData    Verdict = "no data"   // one side has no figure (empty histogram, missing type)
)

// CompareRow is one figure of one type in both records.
type CompareRow struct {
	Type    string        // activity type; "" = all types
	Metric  CompareMetric // what was compared
	Base    float64       // µs for a duration, a fraction for a share, per second for a rate
	Head    float64       // as Base
	Known   bool          // both records have the figure
	Change  float64       // (Head - Base) / Base; +Inf when Base is 0 and Head is not
	Verdict Verdict
	// Few is set for a quantile that fewer than 10 sends lie beyond in
	// either record (a p99 of 300 sends is their third-worst), and for a
	// max (one send): it is shown, never judged (Verdict stays VerdictSame).
	Few bool
	// Noise is set when the figure moved beyond MaxRegression but not
	// beyond the floor or the sampling noise of the two runs (see noiseZ):
	// not judged either.
	Noise bool
}

// Comparison is the result of Compare.
type Comparison struct {
	Base, Head *Record
	// BaseName and HeadName name the records in WriteTable (file names);
	// empty means the records' labels.
	BaseName, HeadName string
	Options            CompareOptions
	Rows               []CompareRow
	// Notes are facts that qualify the comparison: settings that differ
	// without making the runs incomparable, a generator-bound or partial
	// run, types present in one record only, a forced comparison.
	Notes []string
}

// Compare compares head with base, metric by metric, overall and for each
// activity type present in both. It refuses (Comparable's error) records
// that are not the same unit of work unless o.Force, and (ErrUnmeasured,
// Force or not) a record that measured nothing.
func Compare(base, head *Record, o CompareOptions) (*Comparison, error) {
	for _, side := range []struct {
		name string
		r    *Record
	}{{"base", base}, {"head", head}} {
		if err := measuredSomething(side.r); err != nil {
			return nil, fmt.Errorf("%s: %w", side.name, err)
		}
	}
	if o.Metrics == nil {
		ms, err := ParseCompareMetrics(DefaultCompareMetrics())
		if err != nil {
			return nil, err
		}
		o.Metrics = ms
	}
	c := &Comparison{Base: base, Head: head, Options: o}
	if err := Comparable(base, head); err != nil {
		if !o.Force {
			return nil, err
		}
		c.Notes = append(c.Notes, "forced: "+strings.TrimPrefix(err.Error(), ErrIncomparable.Error()+": ")+
			"; its figures differ for reasons that are not the SUT's alone")
	}
	bs, hs := base.Settings, head.Settings
	for _, f := range []struct {
		name string
		a, b any
	}{
		{"signing", bs.Signing, hs.Signing}, {"target", bs.Target, hs.Target},
		{"max_inflight", bs.MaxInflight * base.Generators(), hs.MaxInflight * head.Generators()},
		{"timeout", bs.Timeout, hs.Timeout}, {"generators", base.Generators(), head.Generators()},
	} {
		if f.a != f.b {
			c.Notes = append(c.Notes, fmt.Sprintf("%s differs: %v in base, %v in head", f.name, f.a, f.b))
		}
	}
	for _, pb := range base.Parts {
		for _, ph := range head.Parts {
			if pb.ID == ph.ID {
				c.Notes = append(c.Notes, "base and head contain the same run ("+pb.ID+"): is this one record twice?")
			}
		}
	}
	if base.Measured != head.Measured {
		c.Notes = append(c.Notes, fmt.Sprintf("measured window differs: %.1fs in base, %.1fs in head (high percentiles of a shorter run rest on fewer sends)",
			base.Measured, head.Measured))
	}
	for _, side := range []struct {
		name string
		r    *Record
	}{{"base", base}, {"head", head}} {
		if side.r.Bottleneck.Generator {
			c.Notes = append(c.Notes, side.name+": the generator, not the SUT, was the bottleneck: its figures include the crowd's own limits")
		}
		if side.r.Partial {
			c.Notes = append(c.Notes, side.name+": partial run ("+string(side.r.PartialReason)+")")
		}
	}
	if b, h := base.Overall.WhyUnanswered().String(), head.Overall.WhyUnanswered().String(); b != h {
		// Why sends went unanswered is not judged (the error share is),
		// but a new reason is often the news: a certificate, a port.
		c.Notes = append(c.Notes, fmt.Sprintf("no answer: base %s; head %s", cmp.Or(b, "none named"), cmp.Or(h, "none named")))
	}
	if ab, ah := answeredShare(base, ""), answeredShare(head, ""); ah < ab-o.ShareFloor {
		c.Notes = append(c.Notes, fmt.Sprintf("head answered %s of its sends, base %s: the head's latencies cover fewer answers and are never scored better",
			FormatShare(ah), FormatShare(ab)))
	}
	types := []string{""}
	for _, name := range base.TypeNames() {
		if _, ok := head.Types[name]; ok {
			types = append(types, name)
		} else {
			c.Notes = append(c.Notes, "type "+name+" is in base only")
		}
	}
	for _, name := range head.TypeNames() {
		if _, ok := base.Types[name]; !ok {
			c.Notes = append(c.Notes, "type "+name+" is in head only")
		}
	}
	for _, typ := range types {
		for _, m := range o.Metrics {
			if typ != "" && m.g.Family == "dispatch" {
				continue // the generator's own delay is measured over all types
			}
			c.Rows = append(c.Rows, compareRow(base, head, typ, m, o))
		}
	}
	return c, nil
}

// measuredSomething refuses, wrapping ErrUnmeasured, a record whose
// figures rest on nothing: its rates would be 0/0 or a send or two over a
// few milliseconds, and a comparison of them would pass for "no
// regression". A complete run asked to be that short (--max-sends) is
// what it was asked to be, and is compared.
func measuredSomething(r *Record) error {
	why := ""
	switch {
	case r.Measured <= 0:
		why = "it has no measured window (0s measured)"
	case r.Overall.Counts.Completed == 0:
		why = fmt.Sprintf("no measured send of it completed (%.2fs measured)", r.Measured)
	case r.Partial && r.Measured < 1:
		why = fmt.Sprintf("it stopped %.2fs into its measured window, %d %s completed", r.Measured,
			r.Overall.Counts.Completed, Plural(int(r.Overall.Counts.Completed), "send", "sends"))
	default:
		return nil
	}
	if r.Partial {
		why += "; a partial run (" + string(r.PartialReason) + ")"
	}
	return fmt.Errorf("%w: %s", ErrUnmeasured, why)
}

// compareRow compares one metric of one type.
func compareRow(base, head *Record, typ string, m CompareMetric, o CompareOptions) CompareRow {
	row := CompareRow{Type: typ, Metric: m}
	b, okB := metricValue(base, typ, m)
	h, okH := metricValue(head, typ, m)
	row.Base, row.Head = b, h
	if !okB || !okH {
		row.Verdict = VerdictNoData
		return row
	}
	row.Known = true
	var worse, better bool
	row.Change, worse, better = movement(b, h, m.HigherIsBetter(), m.isShare(), o)
	// Latency over fewer answers is not speed: a head that answered a
	// smaller share of its sends (it crashed, refused, timed out) is never
	// scored better on a duration.
	if better && m.g.kind == kindDuration && answeredShare(head, typ) < answeredShare(base, typ)-o.ShareFloor {
		better = false
	}
	if m.g.kind == kindDuration {
		if row.Few = fewSends(base, typ, m.g) || fewSends(head, typ, m.g); row.Few {
			return row
		}
		if math.Abs(h-b) < o.LatencyFloor {
			row.Noise = worse || better
			return row
		}
	}
	if (worse || better) && (withinNoise(base, head, typ, m) || withinBatchNoise(base, head, m, b, h)) {
		row.Noise = true
		return row
	}
	switch {
	case worse:
		row.Verdict = VerdictRegressed
	case better:
		row.Verdict = VerdictBetter
	}
	return row
}

// movement is the relative change from b to h (+Inf from 0), and whether
// it is beyond o.MaxRegression the wrong way (worse) or the right way
// (better), for a figure better higher or lower; a share's change must
// also be o.ShareFloor or more.
func movement(b, h float64, higherIsBetter, share bool, o CompareOptions) (change float64, worse, better bool) {
	switch {
	case b == h:
	case b == 0:
		change = math.Inf(1)
	default:
		change = (h - b) / b
	}
	worse, better = change > o.MaxRegression, change < -o.MaxRegression
	if higherIsBetter {
		worse, better = better, worse
	}
	if share && math.Abs(h-b) < o.ShareFloor {
		worse, better = false, false
	}
	return change, worse, better
}

// metricValue is m of type typ ("" = all) in r.
func metricValue(r *Record, typ string, m CompareMetric) (float64, bool) {
	g := m.g
	g.Type = typ
	switch g.kind {
	case kindDuration:
		return g.durationActual(r)
	case kindCount:
		n, of, ok := g.counter(r)
		if !ok || of == 0 {
			return 0, false
		}
		return float64(n) / float64(of), true
	case kindRate:
		if typ == "" {
			return rateOf(r, g.Metric)
		}
		t, ok := r.Type(typ)
		if !ok || r.Measured <= 0 {
			return 0, false
		}
		switch g.Metric {
		case "rate":
			return float64(t.Counts.Sent) / r.Measured, true
		case "throughput":
			return float64(t.Tally.OK()) / r.Measured, true
		}
	}
	return 0, false
}

// Regressions returns the rows that regressed.
func (c *Comparison) Regressions() []CompareRow {
	var out []CompareRow
	for _, r := range c.Rows {
		if r.Verdict == VerdictRegressed {
			out = append(out, r)
		}
	}
	return out
}

// Regressed reports whether any compared figure regressed beyond the
// threshold.
func (c *Comparison) Regressed() bool { return len(c.Regressions()) > 0 }

// formatValue renders a row's value in the metric's unit.
func (m CompareMetric) formatValue(v float64) string {
	switch m.g.kind {
	case kindDuration:
		return FormatMicros(int64(math.Round(v)))
	case kindCount:
		return FormatShare(v)
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "/s"
}

// formatChange renders a row's change: relative for durations and rates,
// relative and in percentage points for shares.
func (r CompareRow) formatChange() string {
	if !r.Known {
		return "-"
	}
	rel := FormatRelative(r.Change)
	if r.Metric.isShare() {
		return FormatPoints(r.Base, r.Head) + " (" + rel + ")"
	}
	return rel
}

// describe names a record for the header: name, label, rate, window.
func describe(name string, r *Record) string {
	s := r.Settings
	if name == "" {
		name = s.Label
	}
	gens := ""
	if r.Generators() > 1 {
		gens = fmt.Sprintf(" (%d generators)", r.Generators())
	}
	return fmt.Sprintf("%s: %s/s %s%s, mix %s, %.1fs measured from %s UTC", name, FormatNumber(r.OfferedRate()),
		s.Arrivals, gens, s.Mix, r.Measured, r.Start.UTC().Format("2006-01-02 15:04:05"))
}

// WriteTable writes the comparison: what was compared, one line per type
// and metric (base, head, change, verdict), the notes, and the verdict.
func (c *Comparison) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "base %s\nhead %s\n", describe(c.BaseName, c.Base), describe(c.HeadName, c.Head))
	rule := c.ruleLines()
	b.WriteString(rule[0] + "\n")
	for _, l := range rule[1:] {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("\n")
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "type\tmetric\tbase\thead\tchange\t")
	for _, r := range c.Rows {
		base, head := r.values()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.typeName(), r.Metric.Name(), base, head, r.formatChange(), r.verdictText())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(table.String()) {
		b.WriteString(strings.TrimRight(line, " \n") + "\n") // an empty verdict leaves padding
	}
	if notes := c.allNotes(); len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "note: %s\n", n)
		}
	}
	b.WriteString("\n" + c.verdictLine() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ruleLines say what a regression is, as the table heads itself: the
// threshold and floors, then the noise tests, then what is never judged.
func (c *Comparison) ruleLines() []string {
	latFloor := ""
	if c.Options.LatencyFloor > 0 {
		latFloor = ", a latency also by " + FormatMicros(int64(math.Round(c.Options.LatencyFloor))) + " or more"
	}
	return []string{
		fmt.Sprintf("regression: latency or an error share up, or a rate down, by more than %s (a share also by %s percentage points or more%s)",
			FormatPercent(c.Options.MaxRegression), strings.TrimSuffix(FormatPercent(c.Options.ShareFloor), "%"), latFloor),
		fmt.Sprintf("and beyond the two runs' sampling noise at %s confidence (a quantile: their order-statistic intervals apart; a share: a two-proportion test; a rate: Poisson counts)", noiseConfidence),
		fmt.Sprintf("and beyond their second-to-second spread (batch means over the measured seconds, Student's t; runs of %d whole seconds or more);", minBatchSeconds),
		fmt.Sprintf("a quantile with fewer than %d sends beyond it, or a max, is shown but never judged", fewBeyond),
	}
}

// typeName is the row's type as the table names it: "all" for all.
func (r CompareRow) typeName() string { return cmp.Or(r.Type, "all") }

// values are the row's base and head in the metric's unit, "-" for none.
func (r CompareRow) values() (base, head string) {
	if !r.Known {
		return "-", "-"
	}
	return r.Metric.formatValue(r.Base), r.Metric.formatValue(r.Head)
}

// verdictText is the row's verdict as the table writes it: REGRESSED,
// better, "(few sends)", "(within noise)", "no data" or "".
func (r CompareRow) verdictText() string {
	switch {
	case r.Noise:
		return "(within noise)"
	case r.Few:
		return strings.TrimSpace(string(r.Verdict) + " (few sends)")
	}
	return string(r.Verdict)
}

// allNotes are the comparison's notes, then what the marks in the table
// mean when some row has one.
func (c *Comparison) allNotes() []string {
	few, noise := c.marked()
	notes := slices.Clone(c.Notes)
	if few > 0 {
		notes = append(notes, fmt.Sprintf(
			"%d %s marked (few sends): fewer than %d sends lie beyond that quantile (or it is a max), so it is not judged; a longer run or a higher rate makes it a measurement",
			few, Plural(few, "figure", "figures"), fewBeyond))
	}
	if noise > 0 {
		notes = append(notes, fmt.Sprintf(
			"%d %s marked (within noise): moved by more than %s, but not beyond the floor or the runs' sampling noise",
			noise, Plural(noise, "figure", "figures"), FormatPercent(c.Options.MaxRegression)))
	}
	return notes
}

// marked counts the rows marked (few sends) and (within noise).
func (c *Comparison) marked() (few, noise int) {
	for _, r := range c.Rows {
		if r.Few {
			few++
		}
		if r.Noise {
			noise++
		}
	}
	return few, noise
}

// verdictLine is the comparison's last line: what regressed, or that
// nothing did.
func (c *Comparison) verdictLine() string {
	th := FormatPercent(c.Options.MaxRegression)
	if regs := c.Regressions(); len(regs) > 0 {
		var names []string
		for _, r := range regs {
			names = append(names, r.typeName()+" "+r.Metric.Name()+" "+r.formatChange())
		}
		return fmt.Sprintf("REGRESSED beyond %s: %d of %d figures: %s", th, len(regs), len(c.Rows), strings.Join(names, ", "))
	}
	few, _ := c.marked()
	return fmt.Sprintf("no regression beyond %s and the noise (%d figures compared, %d not judged: few sends)", th, len(c.Rows), few)
}
