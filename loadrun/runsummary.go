package loadrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crowdfed/crowd/audience"
	"github.com/crowdfed/crowd/flood/record"
)

// RunSummary is what a crowd run record's run section says (raw is the
// record file's bytes): the lines crowd run printed after its table (the
// personas' homes, the drain, the deliveries to the crowd), for a report
// of the record; nil for a flood's record, which has no such section. A
// section of a schema or version this crowd does not read is one line
// saying so, in its place; the error is a section that does not decode
// (a *audience.RunSectionError, damaged, its words plain): a damaged
// record, which crowd report says in the section's place, rendering the
// flood's parts all the same and exiting 1.
func RunSummary(raw []byte) ([]string, error) {
	rs, err := audience.ReadRun(raw)
	if errors.Is(err, audience.ErrRunUnread) {
		// The section carries its own schema and version so that the
		// flood's figures around it stay readable: not a reason to refuse them.
		return []string{err.Error()}, nil
	}
	if err != nil || rs == nil {
		return nil, err
	}
	return audience.SummaryLines(rs), nil
}

// RunComparison is what crowd compare shows, after its verdict, of two
// records' run sections (baseRaw, headRaw: each record file's bytes; the
// names: what its table calls them), and the figures of them that
// regressed ("visibility p95 +40.0%"). Both read: the two side by side,
// judged by o as the flood's figures are (audience.WriteRunComparison).
// Otherwise one line, and no regression: a flood's record against a run
// record names the one that has a section;
// a section this crowd does not read (a newer version: upgrade crowd;
// another schema; a damaged one) is said to be there and why it is not
// shown, never that its record has none. "" for two floods' records. A
// section that does not read is said, never an error: compare's verdict
// is on the flood's figures, which did. format is compare's: "text", or
// "markdown" (audience.WriteRunComparisonMarkdown; the line as a
// paragraph), or "json" (an object: the rows, notes and regressions, or
// {"unshown": the line}).
func RunComparison(baseName string, baseRaw []byte, headName string, headRaw []byte, o record.CompareOptions, format string) (string, []string) {
	base, baseErr := audience.ReadRun(baseRaw)
	head, headErr := audience.ReadRun(headRaw)
	if base == nil || head == nil {
		line := unshownRuns(baseName, base, baseErr, headName, head, headErr)
		if format == "json" && line != "" {
			doc, _ := json.Marshal(map[string]string{"unshown": strings.TrimSuffix(line, "\n")}) // strings always marshal
			return string(doc), nil
		}
		return line, nil
	}
	var b strings.Builder
	var c audience.RunComparison
	switch format { // a strings.Builder takes every write
	case "markdown":
		c, _ = audience.WriteRunComparisonMarkdown(&b, base, head, o)
	case "json":
		c = audience.CompareRuns(base, head, o)
	default:
		c, _ = audience.WriteRunComparison(&b, base, head, o)
	}
	regressed := []string{}
	for _, r := range c.Regressions() {
		regressed = append(regressed, r.Part+" "+r.Metric+" "+r.Change)
	}
	if format == "json" {
		doc, _ := json.Marshal(struct { // strings, bools and finite numbers always marshal
			audience.RunComparison
			Regressed []string `json:"regressed"`
		}{c, regressed})
		return string(doc), regressed
	}
	return b.String(), regressed
}

// unshownRuns is RunComparison's line when the run sections are not both
// there to set side by side.
func unshownRuns(baseName string, base *audience.RunSection, baseErr error, headName string, head *audience.RunSection, headErr error) string {
	switch {
	case base != nil && headErr == nil:
		return fmt.Sprintf("crowd run: only base (%s) has a run section to show; %s\n", baseName, unshownRun("head", headName, nil))
	case head != nil && baseErr == nil:
		return fmt.Sprintf("crowd run: only head (%s) has a run section to show; %s\n", headName, unshownRun("base", baseName, nil))
	case base != nil:
		// The other has one too: saying it has none would hide why.
		return fmt.Sprintf("crowd run: the run sections are not set side by side: %s\n", unshownRun("head", headName, headErr))
	case head != nil:
		return fmt.Sprintf("crowd run: the run sections are not set side by side: %s\n", unshownRun("base", baseName, baseErr))
	case baseErr != nil || headErr != nil:
		return fmt.Sprintf("crowd run: no run section to show: %s; %s\n", unshownRun("base", baseName, baseErr), unshownRun("head", headName, headErr))
	}
	return ""
}

// unshownRun says why a record's run section is not shown: err nil, a
// flood's record has none; else ReadRun's error says which section it
// has, a newer version's (upgrade crowd), another schema's or a damaged one.
func unshownRun(side, name string, err error) string {
	var se *audience.RunSectionError
	switch {
	case err == nil:
		return fmt.Sprintf("%s (%s) is a flood's record, which has none", side, name)
	case !errors.As(err, &se):
		return fmt.Sprintf("%s (%s): %v", side, name, err)
	case se.Damaged():
		return fmt.Sprintf("%s (%s) has a run section that does not read, a damaged record: %s", side, name, se.Problem())
	case se.Newer():
		return fmt.Sprintf("%s (%s) has a run section of %s version %d, newer than this crowd reads (up to version %d): upgrade crowd to see it",
			side, name, se.Schema, se.Version, audience.RunVersion)
	}
	return fmt.Sprintf("%s (%s) has a run section of another schema, %s version %d, which this crowd does not read (it reads %s)",
		side, name, se.Schema, se.Version, audience.RunSchema)
}
