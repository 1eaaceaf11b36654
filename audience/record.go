package audience

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/atomicfile"
)

// The run section's schema name and version (the record around it is the
// flood's, crowd.flood.record, which every reader of flood records reads).
const (
	RunSchema  = "crowd.run"
	RunVersion = 1
)

// ErrRunUnread marks a run section of another schema or a newer version
// than this crowd reads: the flood's figures around it still read.
var ErrRunUnread = errors.New("this crowd does not read it")

// RunsFile is the Markdown table of `crowd run` in the out directory, one
// row a run (runs.md beside it is the flood's own table, which gets a row
// for the flood of each run too).
const RunsFile = "crowd-run.md"

// SetupStats say how the audience was set up.
type SetupStats struct {
	Seconds float64 `json:"seconds"`
	// Follows of crowd actors by the personas, through the client API.
	FollowsRequested int `json:"follows_requested"`
	FollowsAccepted  int `json:"follows_accepted"`
	// Follows of the personas by crowd actors (for the deliveries).
	CrowdFollowsRequested int `json:"crowd_follows_requested"`
	CrowdFollowsAccepted  int `json:"crowd_follows_accepted"`
	// Posts the personas made before the flood (for the crowd to like).
	Posts int `json:"posts"`
	// Boosters are the crowd actors that may boost in a run with
	// Announces, and BoostersFollowed those a persona follows (accepted):
	// Mastodon drops a boost of a post not its own from anyone else.
	Boosters         int `json:"boosters,omitempty"`
	BoostersFollowed int `json:"boosters_followed,omitempty"`
}

// RunSection is what `crowd run` adds to the flood's record: the audience's
// set-up and what the personas saw.
type RunSection struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	// SUT is the client API's base URL.
	SUT string `json:"sut"`
	// Personas are the personas' accts; Follows is each one's share of the
	// crowd; Followers the crowd actors that follow each; ProbeHz the home
	// timeline probes a second per persona.
	Personas  []string `json:"personas"`
	Follows   int      `json:"follows"`
	Followers int      `json:"followers"`
	ProbeHz   float64  `json:"probe_hz"`

	Setup      SetupStats      `json:"setup"`
	Home       HomeStats       `json:"home"`
	Visibility VisibilityStats `json:"visibility"`
	Drain      DrainStats      `json:"drain"`
	Delivery   DeliveryStats   `json:"delivery"`
	// Sweep is the deep read of the homes after the drain, when notes were
	// still unseen (see Sweep); nil when none was needed.
	Sweep *SweepStats `json:"sweep,omitempty"`
	// NotesFile is the per-note log beside the record (JSON lines of
	// NoteLog), by file name.
	NotesFile string `json:"notes_file,omitempty"`
}

// Record is a `crowd run` record: the flood's record (its fields at the top
// level, so record.LoadRecord, crowd report, compare and merge read it as
// one) plus the "run" section.
type Record struct {
	*record.Record
	Run *RunSection `json:"run"`
}

// RunSectionError is a run section ReadRun does not read, with what the
// section says it is, so that each reader words it in its own terms: Err
// is the decoder's error for a section of this schema and version that
// does not decode (a damaged record), nil for one of another schema or a
// newer version (errors.Is ErrRunUnread: the record is sound, this crowd
// is old or foreign to it).
type RunSectionError struct {
	Schema  string
	Version int
	Err     error
}

// Newer reports whether the section is a crowd run's of a newer version
// than this crowd reads: upgrading crowd reads it.
func (e *RunSectionError) Newer() bool {
	return e.Err == nil && e.Schema == RunSchema && e.Version > RunVersion
}

// Damaged reports whether the section is of a schema and version this
// crowd reads and does not decode: the record file is broken, not new.
func (e *RunSectionError) Damaged() bool { return e.Err != nil }

func (e *RunSectionError) Error() string {
	if e.Err != nil {
		return "the record's run section does not read: " + e.Problem()
	}
	upgrade := ""
	if e.Newer() {
		upgrade = ": upgrade crowd to see it"
	}
	return fmt.Sprintf("the record's run section is %s version %d: %v (it reads %s up to version %d)%s",
		e.Schema, e.Version, ErrRunUnread, RunSchema, RunVersion, upgrade)
}

// Problem says in plain words why a damaged section does not decode (its
// field of the wrong kind, as the flood record's reader says it), never in
// Go's types; "" for a section that is not damaged.
func (e *RunSectionError) Problem() string {
	if e.Err == nil {
		return ""
	}
	return record.JSONProblem(e.Err, "a run section")
}

// Unwrap is the decoder's error of a damaged section, ErrRunUnread else.
func (e *RunSectionError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return ErrRunUnread
}

// ReadRun reads the run section of a record file's bytes: nil (and no
// error) for a flood's record, which has none; else a *RunSectionError
// for a section it does not read, one of another schema or a newer
// version than this crowd reads (wrapping ErrRunUnread) or a damaged one.
func ReadRun(raw []byte) (*RunSection, error) {
	// Schema and version first: a newer section may not decode as this one.
	var head struct {
		Run *struct {
			Schema  string `json:"schema"`
			Version int    `json:"version"`
		} `json:"run"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.Run == nil {
		return nil, nil // a flood's record, or one the record's own reader refuses, saying why
	}
	if head.Run.Schema != RunSchema || head.Run.Version > RunVersion {
		return nil, &RunSectionError{Schema: head.Run.Schema, Version: head.Run.Version}
	}
	var doc struct {
		Run *RunSection `json:"run"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, &RunSectionError{Schema: head.Run.Schema, Version: head.Run.Version, Err: err}
	}
	return doc.Run, nil
}

// SummaryLines are WriteSummary's lines, for a report's section.
func SummaryLines(run *RunSection) []string {
	var b strings.Builder
	WriteSummary(&b, run) // a strings.Builder takes every write
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// NotesPath is the notes file of the record at recordPath: the same name
// with ".notes.jsonl" for ".json".
func NotesPath(recordPath string) string {
	return strings.TrimSuffix(recordPath, ".json") + ".notes.jsonl"
}

// WriteNotes writes the per-note log (one JSON object a line) to path.
func WriteNotes(path string, notes []NoteLog) error {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, n := range notes {
		if err := enc.Encode(n); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return atomicfile.Write(path, buf.Bytes(), 0o644)
}

// AppendRow appends r's row to dir/RunsFile, with the table's header first
// when the file is new. file is the record's file name, linked from the row.
func AppendRow(dir string, r *Record, file string) error {
	return atomicfile.Append(filepath.Join(dir, RunsFile), []byte(MarkdownHeader()), []byte(r.MarkdownRow(file)), 0o644)
}

// MarkdownHeader is the header (two lines) of the table of runs.
func MarkdownHeader() string {
	return "| start (UTC) | label | rate/s | seconds | posts held | latency p50 / p95 | 202 / 429 / other | visibility p50 / p95 | never seen | drain | home p95 | delivery p95, reached | record |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
}

// MarkdownRow is the record's row: the columns runs are compared by. Posts
// held are the Creates the SUT answered 2xx; latency is the flood's
// (from the intended send time); visibility is from send to first
// appearance in a home timeline; drain is after the flood; home p95 is the
// home timeline probes' latency during the flood; delivery is the personas'
// posts reaching the crowd's inboxes.
func (r *Record) MarkdownRow(file string) string {
	o := r.Overall
	var held int64
	if t, ok := r.Type("Create"); ok {
		held = t.Tally.OK()
	}
	c202 := o.Tally.Classes[record.Class202]
	c429 := o.Tally.Classes[record.Class429]
	other := o.Tally.Total() - c202 - c429
	label := r.Settings.Label
	if label == "" {
		label = "-"
	}
	if r.Partial {
		label += " (partial: " + string(r.PartialReason) + ")"
	}
	if met := r.WeatherMet(); met != "clear" {
		// Visibility and deliveries under bad weather are not a clear run's.
		label += " (weather: " + met + ")"
	}
	run := r.Run
	if run == nil {
		run = &RunSection{}
	}
	v := run.Visibility
	drain := fmtSeconds(run.Drain.Seconds)
	if !run.Drain.Complete {
		drain = "> " + drain
	}
	d := run.Delivery
	delivery := "-"
	if d.Expected > 0 {
		delivery = fmt.Sprintf("%s, %d/%d (%.1f%%)", fmtUS(d.Latency.P95), d.Reached, d.Expected, 100*d.Completeness)
	}
	return fmt.Sprintf("| %s | %s | %g | %.1f | %d | %s / %s | %d / %d / %d | %s / %s | %s of %d | %s | %s | %s | [%s](%s) |\n",
		r.Start.UTC().Format("2006-01-02 15:04:05"), record.EscapeMarkdown(label), r.Settings.Rate*float64(r.Generators()), r.Measured,
		held, fmtUS(o.Latency.P50), fmtUS(o.Latency.P95), c202, c429, other,
		fmtUS(v.Latency.P50), fmtUS(v.Latency.P95), neverSeen(v), v.Accepted, drain, fmtUS(run.Home.Latency.P95),
		delivery, file, file)
}

// neverSeen is the row's count of notes never seen, with those the sweep
// found below the newest page: "12" or "12 (+30 buried)".
func neverSeen(v VisibilityStats) string {
	if v.Buried == 0 {
		return strconv.FormatInt(v.NeverSeen, 10)
	}
	return fmt.Sprintf("%d (+%d buried)", v.NeverSeen, v.Buried)
}

// fmtUS formats a duration in µs for people: "850 µs", "12 ms", "3.1 s";
// "-" for none.
func fmtUS(us int64) string {
	if us <= 0 {
		return "-"
	}
	d := time.Duration(us) * time.Microsecond
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", us)
	case d < time.Second:
		return sig3(float64(d)/float64(time.Millisecond)) + " ms"
	default:
		return fmtSeconds(d.Seconds())
	}
}

// fmtSeconds formats seconds: "0 s", "4.2 s", "63 s".
func fmtSeconds(s float64) string {
	if s == 0 {
		return "0 s"
	}
	return sig3(s) + " s"
}

// sig3 prints v with about three significant digits.
func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// WriteSummary prints the run section for people (after the flood's table).
func WriteSummary(out io.Writer, run *RunSection) error {
	w := &strings.Builder{}
	fmt.Fprintf(w, "audience: %d personas on %s, %d follows each (%d of %d accepted), %d crowd followers each (%d of %d accepted), set up in %.1f s\n",
		len(run.Personas), run.SUT, run.Follows, run.Setup.FollowsAccepted, run.Setup.FollowsRequested,
		run.Followers, run.Setup.CrowdFollowsAccepted, run.Setup.CrowdFollowsRequested, run.Setup.Seconds)
	h := run.Home
	fmt.Fprintf(w, "home timeline: %d probes at %g/s each, p50 %s p95 %s p99 %s, %d errors", h.Probes, run.ProbeHz,
		fmtUS(h.Latency.P50), fmtUS(h.Latency.P95), fmtUS(h.Latency.P99), h.Errors)
	if len(h.ErrorClasses) > 0 {
		b, _ := json.Marshal(h.ErrorClasses)
		fmt.Fprintf(w, " %s", b)
	}
	if h.Overflows > 0 {
		fmt.Fprintf(w, ", %d full answers all new (notes may have scrolled past)", h.Overflows)
	}
	w.WriteString("\n")
	v := run.Visibility
	fmt.Fprintf(w, "visibility: %d notes owed to a follower's home, %d accepted, %d seen, %d never seen; p50 %s p95 %s p99 %s\n",
		v.Sent, v.Accepted, v.Seen, v.NeverSeen, fmtUS(v.Latency.P50), fmtUS(v.Latency.P95), fmtUS(v.Latency.P99))
	if sw := run.Sweep; sw != nil {
		fmt.Fprintf(w, "sweep: %d never seen by the probes were in the home below the newest page (%d pages of %d personas read after the drain",
			sw.Found, sw.Pages, sw.Personas)
		if sw.Errors > 0 {
			fmt.Fprintf(w, ", %d failed: %s", sw.Errors, sw.Error)
		}
		if sw.Cut > 0 || sw.Left > 0 {
			fmt.Fprintf(w, "; at its bound %d were cut short and %d left unread", sw.Cut, sw.Left)
		}
		w.WriteString("); they are counted as buried, not never seen\n")
	}
	switch {
	case run.Drain.Complete && v.Accepted == 0:
		w.WriteString("drain: no accepted note to wait for\n")
	case run.Drain.Complete:
		fmt.Fprintf(w, "drain: the last accepted note was visible %s after the flood\n", fmtSeconds(run.Drain.Seconds))
	default:
		fmt.Fprintf(w, "drain: not complete after %s (--drain-timeout %s)\n", fmtSeconds(run.Drain.Seconds), fmtSeconds(run.Drain.Timeout))
	}
	d := run.Delivery
	fmt.Fprintf(w, "delivery: %d posts, %d of %d deliveries to the crowd (%.1f%%), p50 %s p95 %s p99 %s",
		d.Posts, d.Reached, d.Expected, 100*d.Completeness, fmtUS(d.Latency.P50), fmtUS(d.Latency.P95), fmtUS(d.Latency.P99))
	if d.PostErrors > 0 {
		fmt.Fprintf(w, ", %d posts refused", d.PostErrors)
	}
	if d.StreamLost > 0 {
		fmt.Fprintf(w, ", %d log entries lost (arrivals may be missing)", d.StreamLost)
	}
	w.WriteString("\n")
	_, err := io.WriteString(out, w.String())
	return err
}

// keptHist is h as a run section keeps a latency: its summary and its
// histogram, which crowd compare's noise test reads. A histogram that
// does not encode (it cannot, being the flood's geometry) leaves the
// summary alone.
func keptHist(h *hdr.Histogram) record.HistRecord {
	kept, err := record.EncodeHist(h)
	if err != nil {
		return record.HistRecord{Quantiles: record.Summarize(h)}
	}
	return kept
}
