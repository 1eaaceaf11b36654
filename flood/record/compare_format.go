package record

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// WriteMarkdown writes the comparison for a pull request's comment: its
// verdict as a heading, the two runs, a table (type, metric, base, head,
// change, verdict), the notes, and the rule in a folded block.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	heading := "no regression beyond " + FormatPercent(c.Options.MaxRegression) + " and the noise"
	if regs := c.Regressions(); len(regs) > 0 {
		heading = fmt.Sprintf("REGRESSED beyond %s: %d of %d figures", FormatPercent(c.Options.MaxRegression), len(regs), len(c.Rows))
	}
	fmt.Fprintf(&b, "#### crowd compare: %s\n\n", heading)
	fmt.Fprintf(&b, "- base %s\n- head %s\n\n", EscapeMarkdown(describe(c.BaseName, c.Base)), EscapeMarkdown(describe(c.HeadName, c.Head)))
	b.WriteString("| type | metric | base | head | change | verdict |\n|---|---|---|---|---|---|\n")
	for _, r := range c.Rows {
		base, head := r.values()
		verdict := r.verdictText()
		if r.Verdict == VerdictRegressed {
			verdict = "**" + verdict + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", EscapeMarkdown(r.typeName()), r.Metric.Name(), base, head, r.formatChange(), verdict)
	}
	if notes := c.allNotes(); len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- note: %s\n", EscapeMarkdown(n))
		}
	}
	b.WriteString("\n<details><summary>the rule</summary>\n\n")
	b.WriteString(EscapeMarkdown(strings.Join(c.ruleLines(), " ")) + "\n\n</details>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// CompareSchema and CompareVersion name crowd compare's JSON document
// (CompareDoc).
const (
	CompareSchema  = "crowd.compare"
	CompareVersion = 1
)

// CompareDoc is the comparison as crowd compare --format json writes it,
// for a tool to read: the two runs, the rule's parameters, every row with
// its values in the metric's unit, the notes and the verdict. Run is
// crowd run's run sections' comparison, set by the caller (nil: none).
type CompareDoc struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	// Comparable is false for a pair compare refused (exit 2: not the
	// same unit of work, or a run that measured nothing), Error saying
	// why; such a document has nothing else.
	Comparable bool   `json:"comparable"`
	Error      string `json:"error,omitempty"`
	// Forced says the pair is not the same unit of work and --force
	// compared it anyway (a note says how they differ).
	Forced         bool            `json:"forced"`
	Base           *CompareSide    `json:"base,omitempty"`
	Head           *CompareSide    `json:"head,omitempty"`
	MaxRegression  float64         `json:"max_regression"`   // a fraction: 0.15 is 15 %
	ShareFloor     float64         `json:"share_floor"`      // a fraction: 0.001 is 0.1 percentage point
	LatencyFloorUS float64         `json:"latency_floor_us"` // µs
	Rows           []CompareRowDoc `json:"rows"`
	Notes          []string        `json:"notes"`
	// Compared is how many rows there are, Few and Noise how many of
	// them are not judged for those reasons.
	Compared  int             `json:"compared"`
	Few       int             `json:"few"`
	Noise     int             `json:"noise"`
	Regressed bool            `json:"regressed"` // the flood's figures regressed (Run says its own)
	Run       json.RawMessage `json:"run,omitempty"`
}

// RefusedDoc is the CompareDoc of a pair compare refused, err saying why.
func RefusedDoc(err error) CompareDoc {
	return CompareDoc{Schema: CompareSchema, Version: CompareVersion, Error: err.Error(), Rows: []CompareRowDoc{}, Notes: []string{}}
}

// CompareSide names one of the two runs compared.
type CompareSide struct {
	Name        string    `json:"name"` // the file as given, "stdin" for "-"
	Label       string    `json:"label"`
	Start       time.Time `json:"start"`
	OfferedRate float64   `json:"offered_rate"` // sends/s of every generator together
	MeasuredS   float64   `json:"measured_s"`
	Weather     string    `json:"weather"` // the weather the run met (Record.WeatherMet): "clear" for none
}

// CompareRowDoc is one row of CompareDoc. Base, Head and Change are null
// where the table writes "-": a side without the figure; Change also for
// a change from 0 ("new").
type CompareRowDoc struct {
	Type    string   `json:"type"` // "all" for every type together
	Metric  string   `json:"metric"`
	Unit    string   `json:"unit"` // "us", "share" (a fraction) or "per_s"
	Base    *float64 `json:"base"`
	Head    *float64 `json:"head"`
	Change  *float64 `json:"change"`  // relative: 0.2 is +20 %
	Verdict string   `json:"verdict"` // "", "better", "REGRESSED" or "no data"
	Few     bool     `json:"few"`     // too few sends beyond the quantile (or a max): not judged
	Noise   bool     `json:"noise"`   // moved beyond the threshold, within the floor or the noise: not judged
}

// Doc is the comparison as a CompareDoc.
func (c *Comparison) Doc() CompareDoc {
	side := func(name string, r *Record) *CompareSide {
		return &CompareSide{Name: name, Label: r.Settings.Label, Start: r.Start.UTC(), OfferedRate: r.OfferedRate(), MeasuredS: r.Measured,
			Weather: r.WeatherMet()}
	}
	few, noise := c.marked()
	d := CompareDoc{Schema: CompareSchema, Version: CompareVersion, Comparable: true, Forced: c.Options.Force && Comparable(c.Base, c.Head) != nil,
		Base: side(c.BaseName, c.Base), Head: side(c.HeadName, c.Head),
		MaxRegression: c.Options.MaxRegression, ShareFloor: c.Options.ShareFloor, LatencyFloorUS: c.Options.LatencyFloor,
		Rows: []CompareRowDoc{}, Notes: c.allNotes(), Compared: len(c.Rows), Few: few, Noise: noise, Regressed: c.Regressed()}
	if d.Notes == nil {
		d.Notes = []string{}
	}
	finite := func(v float64, ok bool) *float64 {
		if !ok || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil
		}
		return &v
	}
	for _, r := range c.Rows {
		d.Rows = append(d.Rows, CompareRowDoc{Type: r.typeName(), Metric: r.Metric.Name(), Unit: r.Metric.unit(),
			Base: finite(r.Base, r.Known), Head: finite(r.Head, r.Known), Change: finite(r.Change, r.Known),
			Verdict: string(r.Verdict), Few: r.Few, Noise: r.Noise})
	}
	return d
}

// unit names the unit of the metric's values in CompareDoc.
func (m CompareMetric) unit() string {
	switch m.g.kind {
	case kindDuration:
		return "us"
	case kindCount:
		return "share"
	}
	return "per_s"
}
