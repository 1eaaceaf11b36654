package results_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/results"
)

// TestRecordsFromResultsAgree: the record rebuilt from a flood's results
// file counts every type and status class exactly as the record the
// flood's Recorder composed, and its latency percentiles agree within the
// histograms' precision, whatever the file's compression.
func TestRecordsFromResultsAgree(t *testing.T) {
	u := sut(t)
	for _, c := range []struct {
		name   string
		file   string
		magic  []byte
		client flood.Client
	}{
		{"plain NDJSON", "run.ndjson", []byte(`{"line":"run"`), flood.ClientNetHTTP},
		{"gzip by its name", "run.ndjson.gz", []byte{0x1f, 0x8b}, flood.ClientNetHTTP},
		{"zstd by its name", "run.ndjson.zst", []byte{0x28, 0xb5, 0x2f, 0xfd}, flood.ClientNetHTTP},
		// The fast client: most sends written by the dispatcher itself.
		{"the dispatcher's own writes", "fast.ndjson", []byte(`{"line":"run"`), flood.ClientFast},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.file)
			w, err := results.Create(path, nil, results.Options{Describe: describe})
			if err != nil {
				t.Fatal(err)
			}
			tr := flood.NewClientTransport(flood.TransportOptions{Client: c.client, MaxInflight: 4, Timeout: 5 * time.Second})
			defer tr.CloseIdleConnections()
			want := floodingWith(t, context.Background(), u, 200, 2*time.Second, tr, w.Run(settings()))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(raw, c.magic) {
				t.Errorf("%s starts % x, want % x", c.file, raw[:min(len(raw), 8)], c.magic)
			}
			got := readRecords(t, path)
			if len(got) != 1 {
				t.Fatalf("%d records from the results, want 1", len(got))
			}
			if want.Overall.Counts.Dropped == 0 || want.Overall.Tally.Classes[record.Class429] == 0 {
				t.Fatalf("the flood dropped no send or met no 429 (%+v): the comparison would miss them", want.Overall.Counts)
			}
			if len(want.Overall.Unanswered) == 0 {
				t.Fatalf("no send went unanswered (%+v): the comparison would miss why", want.Overall.Tally)
			}
			if c.client == flood.ClientFast && want.Overall.Counts.Written == 0 {
				t.Fatalf("the dispatcher wrote no send (%+v): the comparison would miss them", want.Overall.Counts)
			}
			agree(t, want, got[0])
		})
	}
}

// agree compares a record rebuilt from results with the run's own.
func agree(t *testing.T, want, got *record.Record) {
	t.Helper()
	if got.Settings.Label != want.Settings.Label || got.Settings.Rate != want.Settings.Rate || got.Partial != want.Partial {
		t.Errorf("settings %+v partial %v, want %+v partial %v", got.Settings, got.Partial, want.Settings, want.Partial)
	}
	if w, g := want.Parts[0].Dispatcher, got.Parts[0].Dispatcher; w == nil || g == nil || *w != *g {
		t.Errorf("the dispatcher %+v, want %+v", g, w)
	}
	if got.Warmup != want.Warmup {
		t.Errorf("warm-up counts %+v, want %+v", got.Warmup, want.Warmup)
	}
	if len(got.Types) != len(want.Types) {
		t.Errorf("%d types, want %d", len(got.Types), len(want.Types))
	}
	types := map[string][2]*record.TypeRecord{"overall": {&want.Overall, &got.Overall}}
	for name, w := range want.Types {
		types[name] = [2]*record.TypeRecord{w, got.Types[name]}
	}
	for name, p := range types {
		w, g := p[0], p[1]
		if g == nil {
			t.Errorf("%s: missing", name)
			continue
		}
		if !maps.Equal(g.Unanswered, w.Unanswered) {
			t.Errorf("%s: no answer because %v, want %v", name, g.Unanswered, w.Unanswered)
		}
		if g.Counts != w.Counts || g.Tally != w.Tally || g.RateLimits.Answers() != w.RateLimits.Answers() {
			t.Errorf("%s: counts %+v tally %+v (%d rate-limited), want %+v %+v (%d)", name, g.Counts, g.Tally,
				g.RateLimits.Answers(), w.Counts, w.Tally, w.RateLimits.Answers())
		}
		for _, h := range []struct {
			what string
			w, g record.Quantiles
		}{{"latency", w.Latency.Quantiles, g.Latency.Quantiles}, {"service", w.Service.Quantiles, g.Service.Quantiles},
			{"lateness", w.Lateness.Quantiles, g.Lateness.Quantiles}} {
			if !within(h.w, h.g) {
				t.Errorf("%s %s: %+v, want %+v", name, h.what, h.g, h.w)
			}
		}
	}
}

// within: the same count, and every percentile within the histograms'
// precision (three significant digits) plus the microsecond a line rounds
// its times to.
func within(w, g record.Quantiles) bool {
	near := func(a, b int64) bool { return max(a-b, b-a) <= 2+max(a, b)/500 }
	return w.Count == g.Count && near(w.P50, g.P50) && near(w.P90, g.P90) && near(w.P99, g.P99) && near(w.Max, g.Max)
}

func readRecords(t *testing.T, path string) []*record.Record {
	t.Helper()
	f, err := results.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := results.Records(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestAFailedWriteStopsTheRun: a write the results cannot make stops the
// flood early (the run that feeds the Writer cancels it on Failed), and the
// error names the file and why; the record is left partial, never a run
// whose results silently end.
func TestAFailedWriteStopsTheRun(t *testing.T) {
	u := sut(t)
	for _, c := range []struct {
		name string
		open func(t *testing.T) (*results.Writer, error)
		want string // in the error
	}{
		// A pipe whose reader is gone, as `crowd flood --results - | head` leaves it.
		{"closed pipe", func(t *testing.T) (*results.Writer, error) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			t.Cleanup(func() { w.Close() })
			return results.NewWriter(w, "the pipe", results.Plain, results.Options{})
		}, "the pipe"},
		// /dev/full fails every write with ENOSPC, as a full disk does.
		{"full disk", func(*testing.T) (*results.Writer, error) {
			return results.Create("/dev/full", nil, results.Options{})
		}, "/dev/full"},
		// The same, through the compressor.
		{"full disk, gzip", func(*testing.T) (*results.Writer, error) {
			return results.NewWriter(mustOpen(t, "/dev/full"), "full.gz", results.Gzip, results.Options{})
		}, "full.gz"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := c.open(t)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				select {
				case <-w.Failed():
					cancel()
				case <-ctx.Done():
				}
			}()
			rec := flooding(t, ctx, u, 200, 30*time.Second, w.Run(settings()))
			if !rec.Partial || rec.PartialReason != record.ReasonInterrupted {
				t.Errorf("partial %v (%q), want a run stopped early", rec.Partial, rec.PartialReason)
			}
			werr := w.Err()
			cerr := w.Close()
			if werr == nil || !strings.Contains(werr.Error(), c.want) {
				t.Fatalf("Err() = %v, want an error naming %q", werr, c.want)
			}
			if cerr == nil || !strings.Contains(cerr.Error(), werr.Error()) {
				t.Errorf("Close() = %v, want %v", cerr, werr)
			}
		})
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestLinesLostAreCounted: a Writer that falls behind (its file a pipe
// nobody reads yet) loses lines rather than hold a send, and says how
// many: in the run's last line and in Close's error; every request the
// run took is a line written or a line lost.
func TestLinesLostAreCounted(t *testing.T) {
	u := sut(t)
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := results.NewWriter(pw, "the pipe", results.Plain, results.Options{Buffer: 8})
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte)
	go func() {
		// Nobody reads until a line is lost: the pipe and the Writer's
		// buffers hold less than the flood writes, so one is, soon.
		for deadline := time.Now().Add(time.Minute); w.Lost() == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		b, _ := io.ReadAll(r)
		read <- b
	}()
	rec := flooding(t, context.Background(), u, 400, time.Second, w.Run(settings()))
	cerr := w.Close()
	pw.Close()
	lines := bytes.Split(bytes.TrimSpace(<-read), []byte("\n"))
	var end results.EndLine
	if err := json.Unmarshal(lines[len(lines)-1], &end); err != nil || end.Line != results.LineEnd {
		t.Fatalf("last line %s: %v", lines[len(lines)-1], err)
	}
	taken := rec.Overall.Counts.Offered + rec.Warmup.Offered
	switch {
	case end.Lost == 0 || end.Lost != w.Lost():
		t.Errorf("lost %d (Writer says %d), want some, the same", end.Lost, w.Lost())
	case end.Sends != int64(len(lines)-2):
		t.Errorf("end line says %d sends, the file has %d", end.Sends, len(lines)-2)
	case end.Sends+end.Lost != taken && end.Sends+end.Lost != taken+1: // and the one taken but never due
		t.Errorf("%d written + %d lost, want the %d taken", end.Sends, end.Lost, taken)
	case cerr == nil || !strings.Contains(cerr.Error(), "lost"):
		t.Errorf("Close() = %v, want the lines lost", cerr)
	}
}

// TestCSVHasARowPerSend: the CSV of a flood's results has a header of the
// send line's fields and a row per send line, null an empty cell: a send
// never sent has no sent_us, one answered has its status.
func TestCSVHasARowPerSend(t *testing.T) {
	u := sut(t)
	path := filepath.Join(t.TempDir(), "run.ndjson")
	w, err := results.Create(path, nil, results.Options{Describe: describe})
	if err != nil {
		t.Fatal(err)
	}
	flooding(t, context.Background(), u, 200, time.Second, w.Run(settings()))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := results.WriteCSV(&b, bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	if sends := bytes.Count(raw, []byte(`{"line":"send"`)); len(rows) != sends+1 {
		t.Fatalf("%d rows, want a header and %d sends", len(rows), sends)
	}
	for _, row := range rows[1:] {
		outcome, sent, status := row[col["outcome"]], row[col["sent_us"]], row[col["status"]]
		switch {
		case (outcome == results.OutcomeDropped || outcome == results.OutcomeUnsent) != (sent == ""):
			t.Errorf("a %s send with sent_us %q", outcome, sent)
		case outcome == results.OutcomeAnswered && (status == "0" || row[col["sender"]] == ""):
			t.Errorf("an answered send with status %s, sender %q", status, row[col["sender"]])
		}
	}
	// The same file cut short (a killed flood): before its end line, or in
	// the middle of a line. Every whole send line's row is written, and the
	// error says the file is cut.
	atEnd := raw[:bytes.LastIndex(raw, []byte(`{"line":"end"`))]
	// Ten bytes into the line after the middle: halving the file alone cut
	// it at a line's very end once in a few hundred runs (a whole last
	// line, read as one).
	half := len(raw) / 2
	midLine := raw[:half+bytes.IndexByte(raw[half:], '\n')+1+10]
	wholeSends := func(cut []byte) int {
		return bytes.Count(cut[:bytes.LastIndexByte(cut, '\n')+1], []byte(`{"line":"send"`))
	}
	for name, cut := range map[string][]byte{"before the end line": atEnd, "mid-line": midLine} {
		b.Reset()
		err = results.WriteCSV(&b, bytes.NewReader(cut))
		if rows, _ := csv.NewReader(&b).ReadAll(); !errors.Is(err, results.ErrCut) || len(rows) != wholeSends(cut)+1 {
			t.Errorf("a file cut %s: %d rows, %v; want %d sends' rows and ErrCut", name, len(rows), err, wholeSends(cut))
		}
	}
}

// TestCreateKeepsAnEarlierFileUntilTheFirstLine: --results names a file an
// earlier run wrote; a run that fails before its first line (a persona not
// found) leaves it whole, and a file made for such a run is not left
// behind empty. A run that writes replaces it, with nothing of the old
// file's tail left past the new end.
func TestCreateKeepsAnEarlierFileUntilTheFirstLine(t *testing.T) {
	old := bytes.Repeat([]byte(`{"line":"run","old":true}`+"\n"), 500)
	for _, c := range []struct {
		name    string
		file    string
		existed bool
		writes  bool // the run writes its first line
	}{
		{"an earlier file, no line", "prev.ndjson", true, false},         // left whole
		{"an earlier gzip file, no line", "prev.ndjson.gz", true, false}, // no gzip header written over it
		{"a new file, no line", "new.ndjson.zst", false, false},          // removed again
		{"an earlier file, a run", "prev.ndjson", true, true},            // replaced
		{"an earlier gzip file, a run", "prev.ndjson.gz", true, true},    // replaced, compressed
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.file)
			if c.existed {
				if err := os.WriteFile(path, old, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, err := results.Create(path, nil, results.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.writes {
				r, start := w.Run(settings()), time.Now()
				r.Begin(record.Schedule{Start: start, Rate: 10, Duration: time.Second})
				r.End(record.Stop{End: start.Add(time.Second), WindowEnd: time.Second})
			} else {
				time.Sleep(450 * time.Millisecond) // two of the writer's flush ticks pass with nothing to write
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			switch {
			case !c.existed && !c.writes:
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the file made for a run that wrote nothing is left: %v, %d bytes", err, len(raw))
				}
			case !c.writes:
				if !bytes.Equal(raw, old) {
					t.Errorf("the earlier file changed: %d bytes, want its %d", len(raw), len(old))
				}
			default:
				got := readRecords(t, path)
				if len(got) != 1 || bytes.Contains(raw, []byte(`"old"`)) || len(raw) >= len(old) {
					t.Errorf("%d runs, %d bytes: want the new run alone", len(got), len(raw))
				}
			}
		})
	}
}

// TestCSVOfNoRunWritesNothing: a file that holds no run, or is no results
// file, gets no CSV at all (not a header alone, which reads as a run of no
// sends), and an error saying why.
func TestCSVOfNoRunWritesNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		err  string // what the error says
	}{
		// An empty file: no run in it, as crowd report says.
		{"empty", "", "no run in it"},
		// Blank lines alone.
		{"blank lines", "\n  \n", "no run in it"},
		// JSON lines of something else: refused at the first line.
		{"notes", `{"note":"first"}` + "\n" + `{"note":"second"}` + "\n", `want a "run" line first`},
		// A run record, indented.
		{"a record", "{\n  \"schema\": \"crowd.flood.record\"\n}\n", "not a results file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			err := results.WriteCSV(&b, strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want one saying %q", err, c.err)
			}
			if b.Len() > 0 {
				t.Errorf("wrote %q", b.String())
			}
		})
	}
}
