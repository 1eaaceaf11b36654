package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// Live renders Progress once a second: on a terminal a single line redrawn in
// place with a progress bar and ETA, otherwise one plain key=value line per
// second (for logs and CI). Use its Update as record.RecorderOptions.Progress and call Done when
// the run returns. Writes go to W unbuffered; errors are ignored (a closed
// terminal must not stop a run).
type Live struct {
	W        io.Writer
	Terminal bool
	// BarWidth is the progress bar's width in cells (0 = 24).
	BarWidth int

	drawn bool
	buf   []byte
}

// NewLive returns a Live writing to w; isTerminal selects the redrawn line.
func NewLive(w io.Writer, isTerminal bool) *Live { return &Live{W: w, Terminal: isTerminal} }

// Update writes the line for p.
func (l *Live) Update(p record.Progress) {
	b := l.buf[:0]
	t := p.Tick
	rate := t.SentRate()
	if l.Terminal {
		b = append(b, "\r\x1b[K"...)
		b = l.bar(b, p)
		b = fmt.Appendf(b, " %3.0f/s sent %d drop %d | p50 %s p99 %s late99 %s | ok %d 429 %d err %d | inflight %d",
			rate, p.Sent, p.Dropped, record.FormatMicros(t.LatencyP50), record.FormatMicros(t.LatencyP99), record.FormatMicros(t.LatenessP99),
			p.OK, p.Status429, p.Errors, p.Inflight)
		if p.Warmup {
			b = append(b, " (warm-up)"...)
		}
		l.drawn = true
	} else {
		// The last report is the drain after the schedule: a fraction of a
		// second that, in whole seconds, would repeat the line before it.
		at := fmtSeconds(p.Elapsed)
		if p.Final {
			at = fmtElapsed(p.Elapsed.Seconds())
		}
		b = fmt.Appendf(b, "t=%s rate=%.0f/s offered=%d sent=%d dropped=%d starved=%d p50=%s p99=%s max=%s late_p99=%s ok=%d 429=%d errors=%d inflight=%d",
			at, rate, p.Offered, p.Sent, p.Dropped, p.Starved,
			record.FormatMicros(t.LatencyP50), record.FormatMicros(t.LatencyP99), record.FormatMicros(t.LatencyMax), record.FormatMicros(t.LatenessP99),
			p.OK, p.Status429, p.Errors, p.Inflight)
		if p.Warmup {
			b = append(b, " warmup=1"...)
		}
		if p.Final {
			b = append(b, " end=1"...)
		}
		b = append(b, '\n')
	}
	l.buf = b
	_, _ = l.W.Write(b)
}

// bar appends "[#####.....]  45%  27s/60s ETA 33s".
func (l *Live) bar(b []byte, p record.Progress) []byte {
	w := l.BarWidth
	if w <= 0 {
		w = 24
	}
	frac := 0.0
	if p.Total > 0 {
		frac = min(1, max(0, p.Elapsed.Seconds()/p.Total.Seconds()))
	}
	fill := int(frac * float64(w))
	b = append(b, '[')
	for i := range w {
		if i < fill {
			b = append(b, '#')
		} else {
			b = append(b, '.')
		}
	}
	b = append(b, ']')
	eta := max(0, p.Total-p.Elapsed)
	return fmt.Appendf(b, " %3.0f%% %s/%s ETA %s", frac*100, fmtSeconds(p.Elapsed), fmtSeconds(p.Total), fmtSeconds(eta))
}

// Done ends the redrawn line on a terminal with a newline.
func (l *Live) Done() {
	if l.Terminal && l.drawn {
		_, _ = io.WriteString(l.W, "\n")
		l.drawn = false
	}
}

// writeSeedsAndDeviations writes the seeds a run can be replayed with and
// what it changed from what it was asked, one line each.
func writeSeedsAndDeviations(b *strings.Builder, r *record.Record) {
	if l := seedLine(r); l != "" {
		fmt.Fprintln(b, l)
	}
	for _, l := range r.Deviations.Lines() {
		fmt.Fprintf(b, "CHANGED: %s\n", l)
	}
}

// WriteTable writes the final report of a record: a summary, one row per
// activity type and the total (latency percentiles from the intended time,
// service and lateness p99, counts), the status tally and the bottleneck
// verdict.
func WriteTable(w io.Writer, r *record.Record) error { return WriteTableWith(w, r, nil) }

// Section is a part of a report that another measurement of the run made
// (crowd run's audience: what the personas' homes showed), rendered after
// the flood's own parts in every format: its title, then its lines as
// they are written.
type Section struct {
	Title string
	Lines []string
}

// WriteTableWith is WriteTable with extra sections after the verdict, each
// its title and its lines.
func WriteTableWith(w io.Writer, r *record.Record, extra []Section) error {
	var b strings.Builder
	writeRunLine(&b, r)
	if r.Partial {
		fmt.Fprintf(&b, "PARTIAL: %s\n", r.PartialReason)
	}
	writeSeedsAndDeviations(&b, r)
	if r.Signatures != nil {
		fmt.Fprintf(&b, "%s\n", r.Signatures.Summary())
	}
	writeMeasured(&b, r)
	if err := writeTypeTable(&b, r); err != nil {
		return err
	}
	writeStatus(&b, r)
	if err := writeFetchbackTable(&b, r); err != nil {
		return err
	}
	writeSecurity(&b, r)
	writeWeather(&b, r)
	writeVerdict(&b, r)
	for _, sec := range extra {
		fmt.Fprintf(&b, "\n%s\n", sec.Title)
		for _, l := range sec.Lines {
			fmt.Fprintf(&b, "%s\n", l)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRunLine is the table's first line: what was asked of the run.
func writeRunLine(b *strings.Builder, r *record.Record) {
	s := r.Settings
	label := s.Label
	if label == "" {
		label = "flood"
	}
	fmt.Fprintf(b, "%s: %g/s %s", label, s.Rate*float64(r.Generators()), s.Arrivals)
	if s.Duration > 0 {
		fmt.Fprintf(b, " for %s", fmtSeconds(s.Duration))
	}
	if s.MaxSends > 0 {
		fmt.Fprintf(b, ", at most %d sends", s.MaxSends)
	}
	if s.Warmup > 0 {
		fmt.Fprintf(b, " (warm-up %s discarded)", fmtSeconds(s.Warmup))
	}
	if r.Generators() > 1 {
		fmt.Fprintf(b, ", %d generators", r.Generators())
	}
	if s.Signing != "" {
		fmt.Fprintf(b, ", signing %s", s.Signing)
	}
	if s.Mix != "" {
		fmt.Fprintf(b, ", mix %s", s.Mix)
	}
	if s.Scenario != "" {
		fmt.Fprintf(b, ", scenario %s", s.Scenario)
	}
	b.WriteString("\n")
}

// writeMeasured is the measured window's counts and rates, and which sends
// the latency figures cover (the unanswered kept apart).
func writeMeasured(b *strings.Builder, r *record.Record) {
	c := r.Overall.Counts
	fmt.Fprintf(b, "measured %s (first send due to the last answer or the schedule's end): offered %d (%.1f/s), sent %d (%.1f/s), dropped %d (%s), starved %d, completed %d, 2xx %.1f/s\n",
		fmtElapsed(r.Measured), c.Offered, r.Rates.Offered, c.Sent, r.Rates.Sent, c.Dropped, record.Percent(c.Dropped, c.Offered), c.Starved, c.Completed, r.Rates.Throughput)
	o := r.Overall
	answered := o.Latency.Count
	fmt.Fprintf(b, "latency and service: over the %d answered sends (any HTTP status)", answered)
	if f := o.Failed; f.Count > 0 {
		fmt.Fprintf(b, "; %d got no answer (%s), kept apart: p50 %s p95 %s max %s",
			f.Count, o.WhyUnanswered(), record.FormatMicros(f.P50), record.FormatMicros(f.P95), record.FormatMicros(f.Max))
	}
	b.WriteString("\n\n")
}

// writeTypeTable is the aligned per-type table, types sorted, then "all".
// An interrupted run's table has an "aborted" column too: the sends in
// flight when it was interrupted, which got neither an answer nor a
// timeout, so that each row's sent is answered + no answer + aborted.
func writeTypeTable(b *strings.Builder, r *record.Record) error {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	aborted := anyAborted(r)
	head := "type\tsent\tanswered\tp50\tp90\tp95\tp99\tp99.9\tmax\tservice p99\tlate p99\t2xx\terrors\tno answer\t"
	if aborted {
		head += "aborted\t"
	}
	fmt.Fprintln(tw, head+"dropped\t")
	row := func(name string, t *record.TypeRecord) {
		l := t.Latency
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t", name, t.Counts.Sent, l.Count,
			l.Format(l.P50), l.Format(l.P90), l.Format(l.P95), l.Format(l.P99), l.Format(l.P999), l.Format(l.Max),
			t.Service.Format(t.Service.P99), t.Lateness.Format(t.Lateness.P99), t.Tally.OK(), record.Percent(t.Tally.Errors(), t.Counts.Completed), t.Tally.Unanswered())
		if aborted {
			fmt.Fprintf(tw, "%d\t", t.Counts.Aborted)
		}
		fmt.Fprintf(tw, "%d\t\n", t.Counts.Dropped)
	}
	for _, name := range r.TypeNames() {
		row(name, r.Types[name])
	}
	row("all", &r.Overall)
	if err := tw.Flush(); err != nil {
		return err
	}
	if note := forgedApart(r); note != "" {
		fmt.Fprintln(b, "  "+note)
	}
	return nil
}

// forgedApart says, for a run with forged requests, that the "all" row's
// errors count the forged requests' refusals, the right answer to a
// forgery, and what the honest requests' errors are, as the gates count
// them; "" for a run without.
func forgedApart(r *record.Record) string {
	f, ok := r.Types[string(record.TypeForged)]
	if !ok {
		return ""
	}
	errs := r.Overall.Tally.Errors() - f.Tally.Errors()
	completed := r.Overall.Counts.Completed - f.Counts.Completed
	return fmt.Sprintf("errors in \"all\" count the %s row's refusals, the right answer to a forgery; the honest requests' alone: %s (%d of %d), as --expect counts them",
		record.TypeForged, record.Percent(errs, completed), errs, completed)
}

// writeStatus is the line of status classes that occurred, Retry-After and
// aborted sends, and the rate limits the answers advertised.
func writeStatus(b *strings.Builder, r *record.Record) {
	b.WriteString("\nstatus:")
	t := r.Overall.Tally
	for cl := record.Class(0); cl < record.NumClasses; cl++ {
		if n := t.Classes[cl]; n > 0 {
			fmt.Fprintf(b, " %s=%d", cl, n)
		}
	}
	if t.Total() == 0 {
		b.WriteString(" none")
	}
	fmt.Fprintf(b, "; Retry-After seen %d", t.RetryAfter)
	if n := r.Overall.Counts.Aborted; n > 0 {
		fmt.Fprintf(b, "; aborted %d", n)
	}
	b.WriteString("\n")
	if s := r.Overall.RateLimits.Summary(); s != "" {
		fmt.Fprintf(b, "rate limits advertised: %s\n", s)
	}
}

// writeVerdict is the bottleneck verdict, its reasons, notes and rule.
func writeVerdict(b *strings.Builder, r *record.Record) {
	d := r.Bottleneck
	switch {
	case d.Generator:
		b.WriteString("BOTTLENECK: the generator, not the SUT: these figures include the crowd's own limits:\n")
		for _, s := range d.Reasons {
			fmt.Fprintf(b, "  - %s\n", s)
		}
	case noAnswer(r):
		b.WriteString(noAnswerVerdict + "\n")
	default:
		b.WriteString("generator kept up: the figures are the SUT's\n")
	}
	for _, s := range d.Notes {
		fmt.Fprintf(b, "  note: %s\n", s)
	}
	if d.Rule != "" {
		fmt.Fprintf(b, "  rule: %s\n", d.Rule)
	}
}

// seedLine says the seeds that replay recs' draws, each once, in order:
// "seed 42 (--seed replays the draws)" when one generator drew them; for
// several (merged shards), which generator each seed replays, since a seed
// replays one generator's draws, not the fleet's. "" when no part kept one
// (records from before seeds were kept).
func seedLine(recs ...*record.Record) string {
	var seeds, labelled []string
	several := false
	for _, r := range recs {
		several = several || len(r.Parts) > 1
		for i, p := range r.Parts {
			if p.Seed == 0 {
				continue
			}
			s := strconv.FormatUint(p.Seed, 10)
			who := "shard " + p.Shard
			if p.Shard == "" {
				who = "generator " + strconv.Itoa(i+1)
			}
			if l := who + " " + s; !slices.Contains(labelled, l) {
				labelled = append(labelled, l)
			}
			if !slices.Contains(seeds, s) {
				seeds = append(seeds, s)
			}
		}
	}
	switch {
	case len(seeds) == 0:
		return ""
	case several:
		return "seeds: " + strings.Join(labelled, ", ") + " (each generator's --seed replays its own draws)"
	}
	return "seed " + strings.Join(seeds, ", ") + " (--seed replays the draws)"
}

// noAnswerVerdict is said in the verdict's place when no send was answered:
// there is no latency of the SUT's to judge, nor the generator's part in it.
const noAnswerVerdict = "no send was answered: no latency figure here is the SUT's, and there is none to judge the generator by"

// noAnswer reports whether r sent and got no answer at all.
func noAnswer(r *record.Record) bool {
	return r.Overall.Latency.Count == 0 && r.Overall.Counts.Sent > 0
}

// noAnswerSaid is noAnswerVerdict as a sentence begins it when r got no
// answer, "" when it did.
func noAnswerSaid(r *record.Record) string {
	if !noAnswer(r) {
		return ""
	}
	return strings.ToUpper(noAnswerVerdict[:1]) + noAnswerVerdict[1:]
}

// fmtElapsed formats a window in seconds: "60.1s", or three significant
// digits under 10 s ("0.197s"), so a run of a fraction of a second says so.
func fmtElapsed(s float64) string {
	if s >= 10 {
		return strconv.FormatFloat(s, 'f', 1, 64) + "s"
	}
	return strconv.FormatFloat(s, 'g', 3, 64) + "s"
}

// fmtSeconds formats d as whole seconds ("27s"), or minutes and seconds.
func fmtSeconds(d time.Duration) string {
	s := int64((d + time.Second/2) / time.Second)
	if s < 60 {
		return strconv.FormatInt(s, 10) + "s"
	}
	return strconv.FormatInt(s/60, 10) + "m" + fmt.Sprintf("%02d", s%60) + "s"
}
