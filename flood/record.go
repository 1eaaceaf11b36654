package flood

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// The run record's schema name and version. A reader refuses another schema,
// and any version it does not know. The format is documented in SCHEMA.md.
// Version 2 keeps sends that got no answer out of latency and service
// (they are in failed), adds accepted, failed and window, and measures
// rates over the elapsed window; version 1 records are still read.
const (
	RecordSchema  = "crowd.flood.record"
	RecordVersion = 2
)

// ErrMerge is wrapped by every error of Merge: records that cannot be
// combined (different settings, the same shard twice, foreign geometry).
var ErrMerge = errors.New("flood: cannot merge records")

// Settings are what a run was asked to do. Records merge only when their
// settings are equal in every field but Shard (each generator of a sharded
// run offers Rate itself, so the merged offered rate is the sum).
type Settings struct {
	Label       string        // --label: names the run's files
	Rate        float64       // sends per second offered by one generator
	Arrivals    string        // "constant" or "poisson"
	Duration    time.Duration // schedule length, warm-up included (0 = by MaxSends)
	Warmup      time.Duration // discarded start of the schedule
	MaxSends    int64         // 0 = by Duration
	MaxInflight int           // worker slots of one generator
	Timeout     time.Duration // per send
	Mix         string        // activity mix, e.g. "create=6,like=3,follow=1"
	Signing     string        // "pipeline", "presign" or "jit"
	Target      string        // what was flooded (personas, inbox mode), free text
	Shard       string        // "i/n" of this generator, "" when not sharded
}

// settingsJSON is the wire form of Settings: durations as Go duration
// strings ("1m0s"), which round-trip exactly.
type settingsJSON struct {
	Label       string  `json:"label"`
	Rate        float64 `json:"rate"`
	Arrivals    string  `json:"arrivals"`
	Duration    string  `json:"duration"`
	Warmup      string  `json:"warmup"`
	MaxSends    int64   `json:"max_sends"`
	MaxInflight int     `json:"max_inflight"`
	Timeout     string  `json:"timeout"`
	Mix         string  `json:"mix"`
	Signing     string  `json:"signing"`
	Target      string  `json:"target"`
	Shard       string  `json:"shard"`
}

// MarshalJSON writes durations as Go duration strings.
func (s Settings) MarshalJSON() ([]byte, error) {
	return json.Marshal(settingsJSON{
		Label: s.Label, Rate: s.Rate, Arrivals: s.Arrivals,
		Duration: s.Duration.String(), Warmup: s.Warmup.String(),
		MaxSends: s.MaxSends, MaxInflight: s.MaxInflight, Timeout: s.Timeout.String(),
		Mix: s.Mix, Signing: s.Signing, Target: s.Target, Shard: s.Shard,
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Settings) UnmarshalJSON(b []byte) error {
	var j settingsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var ds [3]time.Duration
	for i, v := range []string{j.Duration, j.Warmup, j.Timeout} {
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("settings: %w", err)
		}
		ds[i] = d
	}
	*s = Settings{
		Label: j.Label, Rate: j.Rate, Arrivals: j.Arrivals,
		Duration: ds[0], Warmup: ds[1], MaxSends: j.MaxSends, MaxInflight: j.MaxInflight,
		Timeout: ds[2], Mix: j.Mix, Signing: j.Signing, Target: j.Target, Shard: j.Shard,
	}
	return nil
}

// diff lists the fields other than Shard in which s and o differ.
func (s Settings) diff(o Settings) []string {
	var d []string
	add := func(name string, a, b any) {
		if a != b {
			d = append(d, fmt.Sprintf("%s %v ≠ %v", name, a, b))
		}
	}
	add("label", s.Label, o.Label)
	add("rate", s.Rate, o.Rate)
	add("arrivals", s.Arrivals, o.Arrivals)
	add("duration", s.Duration, o.Duration)
	add("warmup", s.Warmup, o.Warmup)
	add("max_sends", s.MaxSends, o.MaxSends)
	add("max_inflight", s.MaxInflight, o.MaxInflight)
	add("timeout", s.Timeout, o.Timeout)
	add("mix", s.Mix, o.Mix)
	add("signing", s.Signing, o.Signing)
	add("target", s.Target, o.Target)
	return d
}

// Part identifies one generator's run inside a (possibly merged) record.
type Part struct {
	ID    string    `json:"id"`    // random, unique per run: a record is never merged twice
	Shard string    `json:"shard"` // "i/n" or ""
	Start time.Time `json:"start"`
	// Seed seeded the generator's draws (--seed): the same seed, settings
	// and state draw the same activities again. 0 in records made before it
	// was kept.
	Seed uint64 `json:"seed"`
}

// HistRecord is one histogram: its summary (µs) and its HdrHistogram V2
// compressed, base64 encoding, from which records merge exactly.
type HistRecord struct {
	Quantiles
	HDR string `json:"hdr"`
}

// TypeRecord holds the measurements of one activity type (or all of them).
type TypeRecord struct {
	Counts   Counts     `json:"counts"`
	Tally    Tally      `json:"tally"`
	Latency  HistRecord `json:"latency"`  // answered sends, from the intended send time (CO-corrected)
	Service  HistRecord `json:"service"`  // answered sends, from the actual send
	Lateness HistRecord `json:"lateness"` // actual - intended, every completed send
	Accepted HistRecord `json:"accepted"` // 2xx answers' latency
	Failed   HistRecord `json:"failed"`   // latency of the sends that got no answer (timeouts, connection errors)
}

// Rates are per second over the measured window (Record.Measured: the
// elapsed window, see SCHEMA.md).
type Rates struct {
	Offered    float64 `json:"offered"`    // sends due
	Sent       float64 `json:"sent"`       // sends made (offered - dropped)
	Completed  float64 `json:"completed"`  // answers, timeouts and errors
	Throughput float64 `json:"throughput"` // 2xx answers
}

// Record is the JSON run record (see SCHEMA.md): settings, counts, status
// tally, encoded histograms per activity type and overall, the per-second
// timeline and the bottleneck verdict. Records of several generators combine
// with Merge.
type Record struct {
	Schema        string                 `json:"schema"`
	Version       int                    `json:"version"`
	Settings      Settings               `json:"settings"`
	Parts         []Part                 `json:"parts"`
	Start         time.Time              `json:"start"`
	End           time.Time              `json:"end"`
	Measured      float64                `json:"measured_s"`
	Window        Window                 `json:"window"`
	Partial       bool                   `json:"partial"`
	PartialReason string                 `json:"partial_reason,omitempty"`
	HistUnit      string                 `json:"hist_unit"`
	Rates         Rates                  `json:"rates"`
	Warmup        Counts                 `json:"warmup"`
	Overall       TypeRecord             `json:"overall"`
	Types         map[string]*TypeRecord `json:"types"`
	Dispatch      HistRecord             `json:"dispatch"`
	Timeline      []Tick                 `json:"timeline"`
	Bottleneck    Diagnosis              `json:"bottleneck"`
	// Capacity is the verdict of the ladder this rung belongs to, over the
	// rungs up to and including it (so the last rung's is the ladder's);
	// nil for a single run.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Deviations are what the run changed from what it was asked.
	Deviations Deviations `json:"deviations"`
}

// Record turns a Result into a run record. The engine's own facts (rate,
// duration, warm-up, max sends, max in-flight, timeout) come from the result
// and overwrite those fields of s; the caller supplies the rest (label,
// arrivals, mix, signing, target, shard).
func (res *Result) Record(s Settings) (*Record, error) {
	s.Rate, s.Duration, s.Warmup = res.Rate, res.Duration, res.Warmup
	s.MaxSends, s.MaxInflight, s.Timeout = res.MaxSends, res.MaxInflight, res.Timeout
	if s.Arrivals == "" {
		s.Arrivals = "constant"
	}
	r := &Record{
		Schema:        RecordSchema,
		Version:       RecordVersion,
		Settings:      s,
		Parts:         []Part{{ID: rand.Text(), Shard: s.Shard, Start: res.Start.UTC()}},
		Start:         res.Start.UTC().Round(0),
		End:           res.End.UTC().Round(0),
		Measured:      res.Measured.Seconds(),
		Window:        res.Window,
		Partial:       res.Partial,
		PartialReason: res.Reason,
		HistUnit:      "us",
		Warmup:        res.WarmupCounts,
		Types:         make(map[string]*TypeRecord, len(res.Types)),
		Timeline:      res.Timeline,
	}
	var err error
	if r.Overall, err = typeRecord(res.Overall); err != nil {
		return nil, err
	}
	for name, st := range res.Types {
		tr, err := typeRecord(st)
		if err != nil {
			return nil, err
		}
		r.Types[name] = &tr
	}
	if r.Dispatch, err = encodeHist(res.Dispatch); err != nil {
		return nil, err
	}
	r.finish()
	return r, nil
}

// finish computes what derives from the rest: rates and the verdict.
func (r *Record) finish() {
	c := r.Overall.Counts
	if r.Measured > 0 {
		r.Rates = Rates{
			Offered:    float64(c.Offered) / r.Measured,
			Sent:       float64(c.Sent) / r.Measured,
			Completed:  float64(c.Completed) / r.Measured,
			Throughput: float64(r.Overall.Tally.OK()) / r.Measured,
		}
	}
	r.Bottleneck = DefaultBottleneckRule().Diagnose(r)
}

func typeRecord(st *Stats) (TypeRecord, error) {
	tr := TypeRecord{Counts: st.Counts, Tally: st.Tally}
	var err error
	if tr.Latency, err = encodeHist(st.Latency); err != nil {
		return tr, err
	}
	if tr.Service, err = encodeHist(st.Service); err != nil {
		return tr, err
	}
	if tr.Lateness, err = encodeHist(st.Lateness); err != nil {
		return tr, err
	}
	if tr.Accepted, err = encodeHist(st.Accepted); err != nil {
		return tr, err
	}
	tr.Failed, err = encodeHist(st.Failed)
	return tr, err
}

func encodeHist(h *hdr.Histogram) (HistRecord, error) {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return HistRecord{}, fmt.Errorf("encode histogram: %w", err)
	}
	return HistRecord{Quantiles: Summarize(h), HDR: string(b)}, nil
}

// Decode returns the histogram (µs). An empty encoding is an empty histogram.
// It refuses a geometry other than the flood's, which would not merge
// exactly.
func (h HistRecord) Decode() (*hdr.Histogram, error) {
	if h.HDR == "" {
		return newHist(), nil
	}
	d, err := hdr.Decode([]byte(h.HDR))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	if d.LowestTrackableValue() != histLowest || d.HighestTrackableValue() != histHighest || d.SignificantFigures() != histSigFigs {
		return nil, fmt.Errorf("histogram geometry %d..%d/%d, want %d..%d/%d",
			d.LowestTrackableValue(), d.HighestTrackableValue(), d.SignificantFigures(), histLowest, histHighest, histSigFigs)
	}
	return d, nil
}

// Type returns the measurements of activity type name (matched ignoring
// case), or the overall ones for name "". ok is false for an unknown type.
func (r *Record) Type(name string) (*TypeRecord, bool) {
	if name == "" {
		return &r.Overall, true
	}
	if t, ok := r.Types[name]; ok {
		return t, true
	}
	for k, t := range r.Types {
		if strings.EqualFold(k, name) {
			return t, true
		}
	}
	return nil, false
}

// TypeNames returns the record's activity types, sorted.
func (r *Record) TypeNames() []string {
	names := make([]string, 0, len(r.Types))
	for k := range r.Types {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// DecodeRecord reads one JSON record and checks its schema and version.
func DecodeRecord(rd io.Reader) (*Record, error) {
	var r Record
	dec := json.NewDecoder(rd)
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("read record: %w", err)
	}
	if r.Schema != RecordSchema {
		return nil, fmt.Errorf("read record: schema %q, want %q", r.Schema, RecordSchema)
	}
	if r.Version < 1 || r.Version > RecordVersion {
		return nil, fmt.Errorf("read record: version %d, this crowd reads 1 to %d", r.Version, RecordVersion)
	}
	if r.Types == nil {
		r.Types = map[string]*TypeRecord{}
	}
	return &r, nil
}

// LoadRecord reads the record in file path.
func LoadRecord(path string) (*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := DecodeRecord(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Merge combines the records of generators that ran the same settings at the
// same time (a sharded run) into one: counts and tallies add up, histograms
// merge exactly (so merged percentiles are those of one histogram of all the
// values), timelines add up second by second on the wall clock. It refuses,
// wrapping ErrMerge: settings that differ in anything but the shard, a shard
// or record present twice, shards of different totals, sharded with unsharded
// records, and histograms of another geometry. Timeline percentiles of a
// merged record are the maximum over the generators (an upper bound); all
// other figures are exact. The merged record's MeasuredSeconds is the longest
// of the inputs (the generators ran concurrently).
func Merge(recs ...*Record) (*Record, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no records", ErrMerge)
	}
	first := recs[0]
	out := &Record{
		Schema:   RecordSchema,
		Version:  RecordVersion,
		Settings: first.Settings,
		HistUnit: "us",
		Types:    map[string]*TypeRecord{},
	}
	out.Settings.Shard = ""
	seen := map[string]bool{}
	shardN := ""
	var reasons []string
	for i, r := range recs {
		if r.Schema != RecordSchema || r.Version != RecordVersion {
			return nil, fmt.Errorf("%w: record %d is %s v%d", ErrMerge, i+1, r.Schema, r.Version)
		}
		if d := first.Settings.diff(r.Settings); len(d) > 0 {
			return nil, fmt.Errorf("%w: record %d's settings differ from record 1's: %s", ErrMerge, i+1, strings.Join(d, ", "))
		}
		for _, p := range r.Parts {
			if seen[p.ID] {
				return nil, fmt.Errorf("%w: record %d contains run %s a second time", ErrMerge, i+1, p.ID)
			}
			seen[p.ID] = true
			_, n, ok := strings.Cut(p.Shard, "/")
			if !ok {
				n = ""
			}
			if len(out.Parts) == 0 {
				shardN = n
			} else if n != shardN {
				return nil, fmt.Errorf("%w: record %d is shard %q, others are %q", ErrMerge, i+1, p.Shard, out.Parts[0].Shard)
			}
			if p.Shard != "" && slices.ContainsFunc(out.Parts, func(q Part) bool { return q.Shard == p.Shard }) {
				return nil, fmt.Errorf("%w: shard %s appears twice (record %d)", ErrMerge, p.Shard, i+1)
			}
			out.Parts = append(out.Parts, p)
		}
		if out.Start.IsZero() || r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		if r.End.After(out.End) {
			out.End = r.End
		}
		out.Measured = max(out.Measured, r.Measured)
		out.Window = laterWindow(out.Window, r.Window)
		if r.Partial {
			out.Partial = true
			if r.PartialReason != "" && !slices.Contains(reasons, r.PartialReason) {
				reasons = append(reasons, r.PartialReason)
			}
		}
		out.Warmup.Merge(r.Warmup)
		out.Deviations.merge(r.Deviations)
	}
	out.PartialReason = strings.Join(reasons, "; ")

	// Histograms: decode, merge, re-encode.
	overall, err := mergeTypes(recs, "")
	if err != nil {
		return nil, err
	}
	if out.Overall, err = typeRecord(overall); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, r := range recs {
		for k := range r.Types {
			names[k] = true
		}
	}
	for name := range names {
		st, err := mergeTypes(recs, name)
		if err != nil {
			return nil, err
		}
		tr, err := typeRecord(st)
		if err != nil {
			return nil, err
		}
		out.Types[name] = &tr
	}
	disp := newHist()
	for i, r := range recs {
		h, err := r.Dispatch.Decode()
		if err != nil {
			return nil, fmt.Errorf("%w: record %d dispatch: %v", ErrMerge, i+1, err)
		}
		disp.Merge(h)
	}
	if out.Dispatch, err = encodeHist(disp); err != nil {
		return nil, err
	}
	out.Timeline = mergeTimelines(out.Start, recs)
	out.Settings.MaxInflight = first.Settings.MaxInflight
	out.finish()
	return out, nil
}

// mergeTypes merges type name ("" = overall) of every record.
func mergeTypes(recs []*Record, name string) (*Stats, error) {
	st := NewStats()
	for i, r := range recs {
		var tr *TypeRecord
		if name == "" {
			tr = &r.Overall
		} else if tr = r.Types[name]; tr == nil {
			continue
		}
		st.Counts.Merge(tr.Counts)
		st.Tally.Merge(tr.Tally)
		for _, p := range []struct {
			dst *hdr.Histogram
			src HistRecord
		}{{st.Latency, tr.Latency}, {st.Service, tr.Service}, {st.Lateness, tr.Lateness}, {st.Accepted, tr.Accepted}, {st.Failed, tr.Failed}} {
			h, err := p.src.Decode()
			if err != nil {
				return nil, fmt.Errorf("%w: record %d type %q: %v", ErrMerge, i+1, name, err)
			}
			if dropped := p.dst.Merge(h); dropped != 0 {
				return nil, fmt.Errorf("%w: record %d type %q: %d values out of range", ErrMerge, i+1, name, dropped)
			}
		}
	}
	return st, nil
}

// laterWindow is the window of generators that ran together: each offset
// the latest of the two (they share a schedule, started within a second).
func laterWindow(a, b Window) Window {
	return Window{FirstDue: max(a.FirstDue, b.FirstDue), LastDue: max(a.LastDue, b.LastDue), LastSent: max(a.LastSent, b.LastSent),
		LastAnswer: max(a.LastAnswer, b.LastAnswer), ScheduleEnd: max(a.ScheduleEnd, b.ScheduleEnd)}
}

// mergeTimelines adds the ticks that end in the same wall-clock second.
func mergeTimelines(start time.Time, recs []*Record) []Tick {
	var out []Tick
	for _, r := range recs {
		shift := int(math.Round(r.Start.Sub(start).Seconds()))
		for _, t := range r.Timeline {
			i := t.T + shift - 1
			for len(out) <= i {
				out = append(out, Tick{T: len(out) + 1, Warmup: true})
			}
			m := &out[i]
			m.Span = max(m.Span, t.Span)
			m.Warmup = m.Warmup && t.Warmup
			m.Inflight += t.Inflight
			m.absorb(t)
		}
	}
	for i := range out {
		if out[i].Span == 0 { // a second no generator covered
			out[i].Warmup = false
		}
	}
	return out
}

// Generators is the number of generator runs combined in the record.
func (r *Record) Generators() int { return max(1, len(r.Parts)) }

// FileName is the record's file name in out/load/:
// <UTC start, 20060102-150405>-<label>.json (label sanitised to
// [A-Za-z0-9._-], "flood" when empty).
func (r *Record) FileName() string {
	return r.Start.UTC().Format("20060102-150405") + "-" + sanitizeLabel(r.Settings.Label) + ".json"
}

func sanitizeLabel(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			b[i] = '_'
		}
	}
	s = strings.Trim(string(b), ".")
	if s == "" {
		return "flood"
	}
	return s
}

// WriteRecord writes r as indented JSON to dir/FileName() (never replacing a
// file: "-2", "-3" ... are appended to a name already taken), durably (fsync,
// then linked into place), and appends its Markdown row to dir/runs.md
// (writing the table header first when the file is new). dir is created if
// needed. It returns the JSON file's path.
func WriteRecord(dir string, r *Record) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	data = append(data, '\n')
	path, err := atomicfile.CreateNumbered(dir, strings.TrimSuffix(r.FileName(), ".json"), ".json", data, 0o644)
	if err != nil {
		return "", err
	}
	if err := appendRunsMD(filepath.Join(dir, "runs.md"), r, filepath.Base(path)); err != nil {
		return path, err
	}
	return path, nil
}

// CheckOutDir makes sure records can be written to dir before a run
// starts: it creates dir if needed and writes and removes a probe file, so
// a directory that cannot take the record is found before the first send,
// not after the whole flood, when the record would be lost.
func CheckOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	err = f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return err
}

func appendRunsMD(path string, r *Record, file string) error {
	return atomicfile.Append(path, []byte(MarkdownHeader()), []byte(r.MarkdownRow(file)), 0o644)
}

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
	if r.Bottleneck.Generator {
		bound = "**generator**"
	}
	if r.Partial {
		bound += " (partial: " + mdEscape(r.PartialReason) + ")"
	}
	if !r.Deviations.Empty() {
		bound += " (changed: " + mdEscape(r.Deviations.short()) + ")"
	}
	label := r.Settings.Label
	if label == "" {
		label = "-"
	}
	return fmt.Sprintf("| %s | %s | %d | %s | %g | %.1f | %.1f | %.1f | %d (%s) | %s | %s | %s | %s | %s | %s | %d | %d | %d (%s) | %s | [%s](%s) |\n",
		r.Start.UTC().Format("2006-01-02 15:04:05"), mdEscape(label), r.Generators(), r.Settings.Arrivals,
		r.Settings.Rate*float64(r.Generators()), r.Measured, r.Rates.Offered, r.Rates.Sent,
		c.Dropped, pct(c.Dropped, c.Offered),
		fmtUS(o.Latency.P50), fmtUS(o.Latency.P95), fmtUS(o.Latency.P99), fmtUS(o.Latency.P999), fmtUS(o.Latency.Max),
		fmtUS(o.Lateness.P99), o.Tally.OK(), o.Tally.Classes[Class429], o.Tally.Errors(), pct(o.Tally.Errors(), c.Completed),
		bound, file, file)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
