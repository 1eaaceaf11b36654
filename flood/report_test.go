package flood

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// reportRecord is a deterministic record: Creates with a 429 share, Likes,
// 12 drops, a partial end.
func reportRecord(t *testing.T) *Record {
	t.Helper()
	create := fakeStats(2400, func(i int) time.Duration { return time.Duration(1+i%400) * 250 * time.Microsecond }, every(40, Class429))
	create.Counts.Offered += 12
	create.Counts.Dropped = 12
	like := fakeStats(600, func(i int) time.Duration { return time.Duration(1+i%100) * 100 * time.Microsecond }, every(300, ClassTimeout))
	res := fakeResult(t0, 10*time.Second, map[string]*Stats{"Create": create, "Like": like})
	res.Partial, res.Reason, res.Rate = true, "interrupted", 300
	rec, err := res.Record(Settings{Label: "report", Arrivals: "poisson", Mix: "create=4,like=1", Signing: "pipeline", Warmup: 2 * time.Second})
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
	golden(t, "table.golden", b.Bytes())
}

func TestMarkdownRowGolden(t *testing.T) {
	r := reportRecord(t)
	golden(t, "runs_row.golden", []byte(MarkdownHeader()+r.MarkdownRow(r.FileName())))
}

func TestLiveGolden(t *testing.T) {
	p := Progress{
		Elapsed: 27 * time.Second, Total: 60 * time.Second,
		Tick:    Tick{T: 27, Span: 1, Sent: 300, LatencyP50: 3100, LatencyP99: 12400, LatencyMax: 20100, LatenessP99: 180},
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
	golden(t, "live.golden", b.Bytes())
	if n := strings.Count(b.String(), "\n"); n != 2 {
		t.Errorf("%d newlines, want 2 (one ending the terminal line, one plain line)", n)
	}
}

func TestWriteLadderGolden(t *testing.T) {
	stop, _ := ParseGates([]string{"p95>2s"})
	var calls []float64
	l := &Ladder{Rates: []float64{100, 300, 600, 1000, 2000}, Step: 2 * time.Second, StopWhen: stop}
	res, err := l.Run(context.Background(), fakeRung(500, &calls), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteLadder(&b, res); err != nil {
		t.Fatal(err)
	}
	golden(t, "ladder.golden", b.Bytes())
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{fmtDur(0), "0"},
		{fmtDur(850 * time.Microsecond), "850µs"},
		{fmtDur(3210 * time.Microsecond), "3.21ms"},
		{fmtDur(45600 * time.Microsecond), "45.6ms"},
		{fmtDur(123 * time.Millisecond), "123ms"},
		{fmtDur(1250 * time.Millisecond), "1.25s"},
		{fmtSeconds(27 * time.Second), "27s"},
		{fmtSeconds(125 * time.Second), "2m05s"},
		{pct(0, 0), "-"},
		{pct(0, 10), "0%"},
		{pct(1, 3000), "0.033%"},
		{pct(1, 30), "3.3%"},
		{pct(1, 2), "50%"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
