package results_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/results"
)

// TestReadingResults: what Records makes of a results file written by
// real floods, whole, cut short, or not a results file at all.
func TestReadingResults(t *testing.T) {
	u := sut(t)
	var file bytes.Buffer
	w, err := results.NewWriter(&file, "a buffer", results.Plain, results.Options{Describe: describe})
	if err != nil {
		t.Fatal(err)
	}
	// Two runs in one file, as a ladder's rungs.
	first := flooding(t, context.Background(), u, 100, time.Second, w.Run(settings()))
	second := flooding(t, context.Background(), u, 150, time.Second, w.Run(settings()))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(file.String()), "\n")
	whole := strings.Join(lines, "")
	withoutEnd := strings.Join(lines[:len(lines)-1], "")
	firstEnd := 0
	for !strings.HasPrefix(lines[firstEnd], `{"line":"end"`) {
		firstEnd++
	}
	for _, c := range []struct {
		name    string
		in      string
		runs    int
		partial bool   // the last run's record
		err     string // "" none; with records, an ErrCut
	}{
		// Each run is read back into its own record.
		{"two runs", whole, 2, false, ""},
		// A file that stops before a run's end line (a killed generator)
		// gives that run's record, partial, and says the file is cut.
		{"cut before the end line", withoutEnd, 2, true, "the results file is cut short (a run has no end line)"},
		// The first run alone, whole.
		{"one run", strings.Join(lines[:firstEnd+1], ""), 1, false, ""},
		// A record is not a results file.
		{"a record", `{"schema":"crowd.flood.record","version":2}` + "\n", 0, false, "not a results file"},
		// A record as the flood writes it, indented: said to be no results file.
		{"an indented record", "{\n  \"schema\": \"crowd.flood.record\"\n}\n", 0, false, "line 1: not a results file"},
		// Another version is refused, not misread.
		{"a later version", strings.Replace(whole, `"version":2`, `"version":3`, 1), 0, false, "version 3"},
		// An unknown kind of line is an error naming the line.
		{"an unknown line", lines[0] + `{"line":"sample"}` + "\n", 0, false, `line 2: unknown line kind "sample"`},
		// A send after its run's end line belongs to no run.
		{"a send after the end", strings.Join(lines[:firstEnd+1], "") + lines[1], 0, false, "a send line outside a run"},
		// So is a line that is not JSON, with lines after it (a last one is
		// a cut: below).
		{"not JSON", lines[0] + "{\"line\":\n" + lines[1], 0, false, "line 2: not a results line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, err := results.Records(strings.NewReader(c.in))
			if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("error %v, want one saying %q", err, c.err)
			}
			if c.runs == 0 {
				if recs != nil {
					t.Errorf("%d records beside the error", len(recs))
				}
				return
			}
			if c.err == "" && err != nil {
				t.Fatal(err)
			}
			if len(recs) != c.runs {
				t.Fatalf("%d records, want %d", len(recs), c.runs)
			}
			if last := recs[len(recs)-1]; last.Partial != c.partial {
				t.Errorf("the last record partial %v (%q), want %v", last.Partial, last.PartialReason, c.partial)
			}
			if !c.partial {
				agree(t, first, recs[0])
			}
			if c.runs == 2 && !c.partial {
				agree(t, second, recs[1])
			}
		})
	}
	// A version 1 file, written before no_answer: read as it was, its
	// unanswered sends counted by class.
	v1 := regexp.MustCompile(`,"no_answer":"[^"]*"`).ReplaceAllString(strings.ReplaceAll(whole, `"version":2`, `"version":1`), "")
	if strings.Contains(v1, "no_answer") {
		t.Fatal("the version 1 file still has no_answer")
	}
	recs, err := results.Records(strings.NewReader(v1))
	if err != nil || len(recs) != 2 {
		t.Fatalf("version 1: %d records, %v", len(recs), err)
	}
	for i, want := range []*record.Record{first, second} {
		byClass := record.Unanswered{}
		byClass.Add(record.ClassTimeout.String(), want.Overall.Tally.Classes[record.ClassTimeout])
		byClass.Add(record.ClassConnError.String(), want.Overall.Tally.Classes[record.ClassConnError])
		if got := recs[i].Overall; len(byClass) == 0 || !maps.Equal(got.Unanswered, byClass) || got.Tally != want.Overall.Tally {
			t.Errorf("version 1, run %d: unanswered %v tally %v, want %v by class and the run's tally", i, got.Unanswered, got.Tally, byClass)
		}
	}
	// A results file read as a run record is said to be one (the record
	// package knows its schema by a copy of Schema: this pins it).
	if _, err := record.DecodeRecord(strings.NewReader(lines[0])); err == nil || !strings.Contains(err.Error(), "a results file of crowd flood --results") {
		t.Errorf("a results file read as a record: %v, want it said to be one", err)
	}
	// A file cut in the middle of a line (a killed flood's buffered
	// writes), plain or a gzip stream that broke off: said to be cut
	// short, not a line of bad JSON.
	// Ten bytes into a line: a cut at a line's very end leaves a whole
	// last line, which reads as one.
	at := len(whole) * 2 / 3
	cutPlain := whole[:at+strings.IndexByte(whole[at:], '\n')+1+10]
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(whole))
	zw.Close()
	for name, open := range map[string]func() io.Reader{
		"plain, mid-line": func() io.Reader { return strings.NewReader(cutPlain) },
		"gzip, mid-stream": func() io.Reader {
			zr, err := gzip.NewReader(bytes.NewReader(gz.Bytes()[:gz.Len()*2/3]))
			if err != nil {
				t.Fatal(err)
			}
			return zr
		},
	} {
		// What the whole lines hold is read all the same, the cut run
		// partial, saying why.
		recs, err := results.Records(open())
		if !errors.Is(err, results.ErrCut) {
			t.Errorf("%s: Records: %v, want ErrCut", name, err)
			continue
		}
		if len(recs) != 2 || !recs[1].Partial || !strings.Contains(string(recs[1].PartialReason), "the results file is cut short") {
			t.Errorf("%s: %d records, the last partial for %q; want 2, the second cut", name, len(recs), recs[len(recs)-1].PartialReason)
		}
		agree(t, first, recs[0])
	}
}

// TestRunsLastAtMostAWeek: a run is read back a tick a second, so how long
// a file says its runs lasted is bounded, one run and all of them together
// (a short corrupt file must not cost days of ticks), by a week and an
// hour for each line (files of many floods appended bring their lines).
func TestRunsLastAtMostAWeek(t *testing.T) {
	const start = "2026-12-02T17:00:00Z"
	run := func(n int) string {
		return fmt.Sprintf(`{"line":"run","schema":"crowd.flood.results","version":1,"run":%d,"start":%q,"settings":{"label":"f"},"rate_hz":10,"duration_us":2000000}`+"\n", n, start)
	}
	end := func(n int, after time.Duration) string {
		at, _ := time.Parse(time.RFC3339, start)
		return fmt.Sprintf(`{"line":"end","run":%d,"end":%q,"window_end_us":2000000}`+"\n", n, at.Add(after).Format(time.RFC3339Nano))
	}
	// A cut run ends at its last answer.
	answeredAfter := func(n int, after time.Duration) string {
		return fmt.Sprintf(`{"line":"send","run":%d,"type":"Like","measured":true,"outcome":"answered","class":"202","status":202,"intended_us":0,"picked_us":0,"sent_us":0,"done_us":%d}`+"\n", n, after.Microseconds())
	}
	const day = 24 * time.Hour
	for _, c := range []struct {
		name string
		in   string
		err  string // "" none
	}{
		// Three days, whole or cut: read (a cut file says so).
		{"three days", run(0) + end(0, 3*day), ""},
		{"three days, cut", run(0) + answeredAfter(0, 3*day), "the results file is cut short"},
		// Two runs of three days: still one week's flood.
		{"two runs of three days", run(0) + end(0, 3*day) + run(1) + end(1, 3*day), ""},
		// Eight days: no flood the crowd makes.
		{"eight days", run(0) + end(0, 8*day), "ends 192h0m0s after its start"},
		// A cut run whose last answer came eight days in.
		{"eight days, cut", run(0) + answeredAfter(0, 8*day), "ends 192h0m0s after its start"},
		// Two runs of four days: each could be, both together cannot.
		{"two runs of four days", run(0) + end(0, 4*day) + run(1) + end(1, 4*day), "run 1 ends 96h0m0s after its start: more than"},
		// A hundred floods of two hours appended: past a week together, their lines allow it.
		{"a hundred runs of two hours", strings.Repeat(run(0)+end(0, 2*time.Hour), 100), ""},
		// An end before the start.
		{"ends before it starts", run(0) + end(0, -time.Second), "ends 1s before its start"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := results.Records(strings.NewReader(c.in))
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one saying %q", err, c.err)
			}
		})
	}
}

// FuzzRecords: whatever a results file holds, reading it never panics nor
// loops long, and a record it gives counts every send it sent as answered
// or aborted.
func FuzzRecords(f *testing.F) {
	run := `{"line":"run","schema":"crowd.flood.results","version":1,"run":0,"start":"2026-12-02T17:00:00Z","settings":{"label":"f"},"rate_hz":10,"duration_us":2000000,"max_inflight":4,"timeout_us":1000000}` + "\n"
	send := `{"line":"send","run":0,"type":"Create","measured":true,"outcome":"answered","class":"202","status":202,"intended_us":100000,"picked_us":100100,"sent_us":100200,"done_us":150000,"retry_after":true,"ratelimit_limit":300,"ratelimit_reset_us":5000000,"ratelimit_reset_at":"2026-12-02T17:00:05Z"}` + "\n"
	dropped := `{"line":"send","run":0,"type":"Like","measured":true,"outcome":"dropped","intended_us":200000}` + "\n"
	end := `{"line":"end","run":0,"end":"2026-12-02T17:00:02Z","window_end_us":2000000,"sends":2}` + "\n"
	f.Add(run + send + dropped + end)
	f.Add(run + send + dropped)
	f.Add(run + send + end + run + dropped + end)
	f.Add(strings.Replace(run+send+end, `"end":"2026-12-02T17:00:02Z"`, `"end":"9999-12-02T17:00:02Z"`, 1))
	f.Add(strings.Replace(run+send, `"done_us":150000`, `"done_us":-9223372036854775807`, 1))
	f.Fuzz(func(t *testing.T, in string) {
		recs, err := results.Records(strings.NewReader(in))
		if err != nil && !errors.Is(err, results.ErrCut) {
			if recs != nil {
				t.Errorf("%d records beside %v", len(recs), err)
			}
			return
		}
		for _, r := range recs {
			for name, tr := range r.Types {
				if c := tr.Counts; c.Completed+c.Aborted != c.Sent || c.Sent+c.Dropped != c.Offered {
					t.Errorf("%s: counts %+v: every send sent is answered or aborted, every one offered sent or dropped", name, c)
				}
			}
		}
	})
}
