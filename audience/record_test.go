package audience

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// sampleRecord is a run record like the reference run's (300/s for 60 s,
// 20 personas, 50 follows), made by hand so its figures are known.
func sampleRecord() *Record {
	var tally record.Tally
	tally.Classes[record.Class202] = 14100
	tally.Classes[record.Class429] = 3800
	tally.Classes[record.ClassTimeout] = 100
	var creates record.Tally
	creates.Classes[record.Class202] = 8460
	creates.Classes[record.Class429] = 2280
	fr := &record.Record{
		Schema: record.RecordSchema, Version: record.RecordVersion,
		Settings: record.Settings{Label: "reference", Rate: 300, Arrivals: "constant", Duration: time.Minute,
			Mix: "create=6,like=3,follow=1", Signing: "pipeline", Target: "20 personas (load0@gts.test … load19@gts.test)"},
		Parts: []record.Part{{ID: "PART", Start: time.Date(2026, 10, 5, 9, 0, 0, 0, time.UTC)}},
		Start: time.Date(2026, 10, 5, 9, 0, 0, 0, time.UTC), End: time.Date(2026, 10, 5, 9, 1, 0, 300e6, time.UTC),
		Measured: 60, HistUnit: "us",
		Overall: record.TypeRecord{Counts: record.Counts{Offered: 18000, Sent: 18000, Completed: 18000}, Tally: tally,
			Latency: record.HistRecord{Quantiles: record.Quantiles{Count: 18000, P50: 12000, P95: 47000, P99: 81000}}},
		Types: map[string]*record.TypeRecord{"Create": {Counts: record.Counts{Offered: 10740, Sent: 10740, Completed: 10740}, Tally: creates}},
	}
	return &Record{Record: fr, Run: &RunSection{
		Schema: RunSchema, Version: RunVersion, SUT: "https://gts.test",
		Personas: []string{"load0@gts.test", "load1@gts.test"}, Follows: 50, Followers: 2, ProbeHz: 4,
		Setup: SetupStats{Seconds: 41.5, FollowsRequested: 1000, FollowsAccepted: 1000, CrowdFollowsRequested: 40, CrowdFollowsAccepted: 40, Posts: 40},
		Home: HomeStats{Probes: 4800, OK: 4790, Errors: 10, ErrorClasses: map[string]int64{"429": 10},
			Latency: record.HistRecord{Quantiles: record.Quantiles{Count: 4790, P50: 9000, P95: 27000, P99: 64000}}},
		Visibility: VisibilityStats{Sent: 10740, Accepted: 8460, Refused: 2280, Seen: 8455, NeverSeen: 2, Buried: 3,
			Latency: record.HistRecord{Quantiles: record.Quantiles{Count: 8455, P50: 310000, P95: 2900000, P99: 4100000}}},
		Drain:     DrainStats{Seconds: 60, Complete: false, Timeout: 60},
		Delivery:  DeliveryStats{Posts: 240, Expected: 480, Reached: 478, Completeness: 478.0 / 480, Latency: record.HistRecord{Quantiles: record.Quantiles{P50: 90000, P95: 350000}}},
		Sweep:     &SweepStats{Personas: 2, Pages: 6, Found: 3},
		NotesFile: "20261005-090000-reference.notes.jsonl",
	}}
}

// TestMarkdownRow: the columns users compare runs by, for a sample run,
// an interrupted one, and one begun with an origin down.
func TestMarkdownRow(t *testing.T) {
	rec := sampleRecord()
	partial := sampleRecord()
	partial.Partial, partial.PartialReason = true, "interrupted"
	partial.Run.Drain = DrainStats{Seconds: 0, Complete: true, Timeout: 60}
	partial.Run.Delivery = DeliveryStats{}
	weathered := sampleRecord()
	weathered.Ambient = &record.AmbientWeather{Start: &record.WeatherState{SinceS: -60, Spec: "down=flood3.test",
		Counts: map[string]int{"down": 1, "clear": 19}, Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}}}}
	var b strings.Builder
	b.WriteString(MarkdownHeader())
	b.WriteString(rec.MarkdownRow("20261005-090000-reference.json"))
	b.WriteString(partial.MarkdownRow("20261005-090000-reference-2.json"))
	b.WriteString(weathered.MarkdownRow("20261005-090000-reference-3.json"))
	golden(t, "crowd-run.md.golden", []byte(b.String()))
}

// TestSummary: the lines crowd run prints after the flood's table.
func TestSummary(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSummary(&b, sampleRecord().Run); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.txt.golden", b.Bytes())
	// A run that owed no note (a delete storm) had no drain to time.
	run := *sampleRecord().Run
	run.Visibility.Sent, run.Visibility.Accepted, run.Drain = 0, 0, DrainStats{Complete: true}
	b.Reset()
	if err := WriteSummary(&b, &run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "drain: no accepted note to wait for\n") || strings.Contains(b.String(), "was visible") {
		t.Errorf("a run that owed no note:\n%s", b.String())
	}
}

// TestRecordFiles: a run record, written as the run's final record, is
// still a flood record for every reader of those, and round-trips; the
// row goes to crowd-run.md with its header once.
func TestRecordFiles(t *testing.T) {
	dir := t.TempDir()
	rec := sampleRecord()
	path, err := record.NewRecordFile(dir).FinalWith(rec.Record, rec)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top["schema"] == nil || top["run"] == nil || top["overall"] == nil {
		t.Fatalf("the record's top level: %v %v", err, top)
	}
	fr, err := record.LoadRecord(path)
	if err != nil || fr.Overall.Tally.Classes[record.Class202] != 14100 {
		t.Fatalf("record.LoadRecord of a run record: %v", err)
	}
	var got Record
	if err := json.Unmarshal(raw, &got); err != nil || got.Run.Visibility.NeverSeen != 2 || got.Run.Visibility.Buried != 3 || got.Run.Sweep == nil || got.Run.Sweep.Found != 3 || got.Run.Home.ErrorClasses["429"] != 10 || got.Settings.Label != "reference" {
		t.Fatalf("the run record read back: %+v, %v", got, err)
	}
	for range 2 {
		if err := AppendRow(dir, rec, filepath.Base(path)); err != nil {
			t.Fatal(err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, RunsFile))
	if strings.Count(string(md), "| start (UTC) |") != 1 || strings.Count(string(md), "| 2026-10-05 09:00:00 | reference |") != 2 {
		t.Errorf("%s:\n%s", RunsFile, md)
	}
	notes := NotesPath(path)
	if !strings.HasSuffix(notes, ".notes.jsonl") || strings.HasSuffix(notes, ".json.notes.jsonl") {
		t.Errorf("NotesPath = %s", notes)
	}
	seen := at(300)
	ms := 300.0
	if err := WriteNotes(notes, []NoteLog{{Persona: "load0", URI: "https://flood1.test/users/a/notes/1", Sender: alice, Sent: at(0), Status: 202, Seen: &seen, Asked: &seen, Visible: &ms}}); err != nil {
		t.Fatal(err)
	}
	line, _ := os.ReadFile(notes)
	golden(t, "notes.jsonl.golden", line)
}

// TestReadRun: what ReadRun makes of a record's run section, by what the
// section is, so that report and compare can word each case: a newer
// version (upgrade crowd), another schema, a damaged one (the record is
// broken, said in plain words), or none at all (a flood's record).
func TestReadRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		raw     string
		read    bool // a section comes back
		err     bool // a *RunSectionError comes back
		unread  bool // it is ErrRunUnread (the record is sound)
		newer   bool
		damaged bool
	}{
		// A flood's record: no section, no error.
		{"flood", `{"schema":"crowd.flood.record","version":2}`, false, false, false, false, false},
		// This crowd's version: read.
		{"this version", `{"run":{"schema":"crowd.run","version":1,"personas":["a@sut.test"]}}`, true, false, false, false, false},
		// A newer version, whatever its shape: unread, and newer.
		{"newer", `{"run":{"schema":"crowd.run","version":9,"personas":{"a shape":"unread"}}}`, false, true, true, true, false},
		// Another schema: unread, not newer (no upgrade reads it).
		{"other schema", `{"run":{"schema":"elsewhere.run","version":1}}`, false, true, true, false, false},
		// This version, not decoding: damaged, not ErrRunUnread.
		{"damaged", `{"run":{"schema":"crowd.run","version":1,"personas":{"not":"a list"}}}`, false, true, false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, err := ReadRun([]byte(c.raw))
			if (rs != nil) != c.read {
				t.Errorf("section %v, want one: %v", rs, c.read)
			}
			var se *RunSectionError
			if errors.As(err, &se) != c.err || (err != nil && !c.err) {
				t.Fatalf("error %v, want a RunSectionError: %v", err, c.err)
			}
			if !c.err {
				return
			}
			if errors.Is(err, ErrRunUnread) != c.unread || se.Newer() != c.newer || se.Damaged() != c.damaged {
				t.Errorf("%v: unread %v newer %v damaged %v, want %v %v %v", err,
					errors.Is(err, ErrRunUnread), se.Newer(), se.Damaged(), c.unread, c.newer, c.damaged)
			}
			if strings.Contains(err.Error(), "Go ") || (se.Problem() != "") != c.damaged {
				t.Errorf("%v: Go's types leak, or a problem %q where damaged is %v", err, se.Problem(), c.damaged)
			}
		})
	}
}
