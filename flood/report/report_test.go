package report

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// reportRecord is a deterministic record: Creates with a 429 share, Likes,
// 12 drops, a partial end.
func reportRecord(t *testing.T) *record.Record {
	t.Helper()
	create := recordtest.Sends(2400, func(i int) time.Duration { return time.Duration(1+i%400) * 250 * time.Microsecond }, recordtest.Every(40, record.Class429))
	create.Counts.Offered += 12
	create.Counts.Dropped = 12
	like := recordtest.Sends(600, func(i int) time.Duration { return time.Duration(1+i%100) * 100 * time.Microsecond }, recordtest.Every(300, record.ClassTimeout))
	res := recordtest.Run(t0, 10*time.Second, map[string]*record.Stats{"Create": create, "Like": like})
	res.Partial, res.Reason, res.Rate = true, "interrupted", 300
	rec, err := res.Record(record.Settings{Label: "report", Arrivals: "poisson", Mix: "create=4,like=1", Signing: "pipeline", Warmup: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rec.Parts[0].ID = "FIXEDID"
	return rec
}

func TestWriteTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, reportRecord(t)); err != nil {
		t.Fatal(err)
	}
	recordtest.Golden(t, "table.golden", b.Bytes(), *update)
}

// TestTableSaysWhyNoAnswer: the sends that got no answer are told by
// reason, in the table, Markdown and HTML; a record written before the
// reasons were kept, by class, as a merge counts them.
func TestTableSaysWhyNoAnswer(t *testing.T) {
	for _, c := range []struct {
		name       string
		unanswered record.Unanswered
		want, md   string
	}{
		// The flood named each: the reasons, most first.
		{"named", record.Unanswered{"connection refused": 1, "TLS: certificate signed by an authority not trusted": 1},
			"2 got no answer (TLS: certificate signed by an authority not trusted 1, connection refused 1), kept apart",
			"No answer: TLS: certificate signed by an authority not trusted 1, connection refused 1."},
		// An older record: the classes, without claiming a cause.
		{"older record", nil, "2 got no answer (timeout 2), kept apart", "No answer: timeout 2."},
	} {
		rec := reportRecord(t)
		rec.Overall.Unanswered = c.unanswered
		var b bytes.Buffer
		if err := WriteTable(&b, rec); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: the table does not say %q:\n%s", c.name, c.want, b.String())
		}
		b.Reset()
		if err := WriteMarkdown(&b, rec, "r.json"); err != nil {
			t.Fatal(err)
		}
		if said := strings.Contains(b.String(), "No answer:"); said != (c.md != "") || !strings.Contains(b.String(), c.md) {
			t.Errorf("%s: the Markdown says no answer %v, want %q:\n%s", c.name, said, c.md, b.String())
		}
		// The page says the same words (HTML-escaped).
		b.Reset()
		if err := WriteHTML(&b, rec); err != nil {
			t.Fatal(err)
		}
		if said := strings.Contains(b.String(), `<p id="unanswered">No answer: `); said != (c.md != "") || !strings.Contains(b.String(), strings.TrimSuffix(c.md, ".")) {
			t.Errorf("%s: the page says no answer %v, want %q", c.name, said, c.md)
		}
	}
}

// TestMarkdownSaysHowToReplay: a Markdown report, posted where the record
// is not, says what was asked and the seed that replays the run.
func TestMarkdownSaysHowToReplay(t *testing.T) {
	rec := reportRecord(t)
	rec.Parts[0].Seed = 42
	var b bytes.Buffer
	if err := WriteMarkdown(&b, rec, "r.json"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nreport: 300/s poisson for 10s, signing pipeline, mix create=4,like=1\n",
		"\nseed 42 (--seed replays the draws)\n", "\n- rule: the generator is the bottleneck when"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, b.String())
		}
	}
}

func TestMarkdownRowGolden(t *testing.T) {
	r := reportRecord(t)
	recordtest.Golden(t, "runs_row.golden", []byte(record.MarkdownHeader()+r.MarkdownRow(r.FileName())), *update)
}

func TestLiveGolden(t *testing.T) {
	p := record.Progress{
		Elapsed: 27 * time.Second, Total: 60 * time.Second,
		Tick:    record.Tick{T: 27, Span: 1, Sent: 300, LatencyP50: 3100, LatencyP99: 12400, LatencyMax: 20100, LatenessP99: 180},
		Offered: 8112, Sent: 8100, Dropped: 12, Starved: 1, Completed: 8097, OK: 8080, Errors: 17, Status429: 9, Inflight: 3,
	}
	var b bytes.Buffer
	term := NewLive(&b, true)
	term.Update(p)
	p.Warmup = true
	term.Update(p)
	term.Done()
	term.Done() // only one newline
	plain := NewLive(&b, false)
	plain.Update(p)
	recordtest.Golden(t, "live.golden", b.Bytes(), *update)
	if n := strings.Count(b.String(), "\n"); n != 2 {
		t.Errorf("%d newlines, want 2 (one ending the terminal line, one plain line)", n)
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{record.FormatDuration(0), "0"},
		{record.FormatDuration(850 * time.Microsecond), "850µs"},
		{record.FormatDuration(3210 * time.Microsecond), "3.21ms"},
		{record.FormatDuration(45600 * time.Microsecond), "45.6ms"},
		{record.FormatDuration(123 * time.Millisecond), "123ms"},
		{record.FormatDuration(1250 * time.Millisecond), "1.25s"},
		{fmtSeconds(27 * time.Second), "27s"},
		{fmtSeconds(125 * time.Second), "2m05s"},
		{record.Percent(0, 0), "-"},
		{record.Percent(0, 10), "0%"},
		{record.Percent(1, 3000), "0.033%"},
		{record.Percent(1, 30), "3.3%"},
		{record.Percent(1, 2), "50%"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// TestAbortedShown: an interrupted run's tables show the sends in flight
// at the interruption in a column of their own, per type, so that each
// row's sent adds up; the page says why they are in no figure. A run
// without any (the goldens) has no such column.
func TestAbortedShown(t *testing.T) {
	r := reportRecord(t)
	r.Types["Create"].Counts.Aborted = 4
	r.Overall.Counts.Aborted = 4
	checkRenderings(t, []rendering{
		{"table", func(b *bytes.Buffer) error { return WriteTable(b, r) }, []string{"no answer  aborted  dropped", "; aborted 4"}},
		{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, r, "r.json") }, []string{
			"| 2xx | errors | no answer | aborted | dropped |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", " | 4 | 12 (0.5%) |\n", " | 0 | 0 (0%) |\n"}},
		{"html", func(b *bytes.Buffer) error { return WriteHTML(b, r) }, []string{"<th>errors</th><th>no answer</th><th>aborted</th><th>dropped</th>",
			"<td>4</td><td>12 (0.5%)</td>", "in flight when the run was interrupted"}},
	})
}

// TestNoAnswerShown: a run whose every send went unanswered (interrupted
// while a slow SUT held them all) has no latency to show: every latency
// cell is "-", not a 0 that reads as an instant answer, and the verdict
// says there is nothing to judge, not that the figures are the SUT's.
func TestNoAnswerShown(t *testing.T) {
	held := record.NewStats()
	held.Counts = record.Counts{Offered: 54, Sent: 54, Aborted: 54}
	res := recordtest.Run(t0, 3*time.Second, map[string]*record.Stats{"Create": held})
	res.Partial, res.Reason = true, "interrupted"
	r, err := res.Record(record.Settings{Label: "held", Arrivals: "constant", Mix: "create=1", Signing: "pipeline"})
	if err != nil {
		t.Fatal(err)
	}
	checkRenderings(t, []rendering{
		{"table", func(b *bytes.Buffer) error { return WriteTable(b, r) }, []string{
			"Create    54         0    -    -    -    -      -    -            -         -", "no send was answered: no latency figure here is the SUT's"}},
		{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, r, "r.json") }, []string{"| Create | 54 | - | - | - | - | - | - | - | - |",
			"No send was answered: no latency figure here is the SUT's"}},
		{"html", func(b *bytes.Buffer) error { return WriteHTML(b, r) }, []string{"<td>Create</td><td>54</td><td>-</td><td>-</td>",
			"<strong>No send was answered: no latency figure here is the SUT&#39;s"}},
		{"runs.md row", func(b *bytes.Buffer) error { _, err := b.WriteString(r.MarkdownRow("r.json")); return err }, []string{
			"| - | - | - | - | - |", "| - (no answer) (partial: interrupted) |"}},
	})
	for name, write := range map[string]func(*bytes.Buffer) error{
		"table": func(b *bytes.Buffer) error { return WriteTable(b, r) },
		"html":  func(b *bytes.Buffer) error { return WriteHTML(b, r) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil || strings.Contains(b.String(), "kept up") {
			t.Errorf("%s: says the generator kept up with nothing answered (%v):\n%s", name, err, b.String())
		}
	}
}

// TestLadderSaysChangesAndSeeds: a ladder's table says what each rung
// changed from what was asked (its per-type p95 may lack a type for it),
// and the seeds that replay the draws, as a single run's table does.
func TestLadderSaysChangesAndSeeds(t *testing.T) {
	first, second := reportRecord(t), reportRecord(t)
	first.Parts[0].Seed, second.Parts[0].Seed = 7, 7
	// A persona without posts is so at every rung: said once, with both.
	first.Deviations = record.Deviations{PersonasWithoutPosts: []string{"a@sut.test"}}
	second.Deviations = record.Deviations{FollowsDiverted: 6, PersonasWithoutPosts: []string{"a@sut.test"}}
	res := record.LadderResult{Rows: []record.RungRow{{Rate: 10, Record: first}, {Rate: 20, Record: second}}, Shoulder: -1}
	var b bytes.Buffer
	if err := WriteLadder(&b, res); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "a@sut.test"); n != 1 {
		t.Errorf("the persona without posts is said %d times, want once:\n%s", n, b.String())
	}
	for _, want := range []string{"CHANGED at 10/s, 20/s: 1 persona", "CHANGED at 20/s: 6 Follows were sent as Creates", "seed 7 (--seed replays the draws)\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the ladder lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "CHANGED at 10/s: 6") {
		t.Errorf("a rung that diverted nothing says it did:\n%s", b.String())
	}
}
