package record_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/crowdfed/crowd/flood/record"

	"github.com/crowdfed/crowd/flood/record/recordtest"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// TestMergeExact: two generators' records, merged after a trip through
// JSON, give exactly the percentiles of one histogram holding every value.
func TestMergeExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var all []time.Duration
	gen := func(n int, scale float64) func(int) time.Duration {
		vals := make([]time.Duration, n)
		for i := range vals {
			// Log-normal-ish spread over 100µs .. tens of seconds.
			vals[i] = time.Duration(scale * rng.ExpFloat64() * rng.ExpFloat64() * float64(time.Millisecond))
			all = append(all, vals[i])
		}
		return func(i int) time.Duration { return vals[i] }
	}
	a := recordtest.Run(t0, 10*time.Second, map[string]*record.Stats{
		"Create": recordtest.Sends(5000, gen(5000, 3), recordtest.Every(20, record.Class429)),
		"Like":   recordtest.Sends(2000, gen(2000, 40), recordtest.Always(record.Class202)),
	})
	b := recordtest.Run(t0.Add(300*time.Millisecond), 10*time.Second, map[string]*record.Stats{
		"Create": recordtest.Sends(7000, gen(7000, 900), recordtest.Every(10, record.ClassTimeout)),
		"Follow": recordtest.Sends(1000, gen(1000, 1), recordtest.Always(record.Class401)),
	})
	s := record.Settings{Label: "merge", Arrivals: "constant", Mix: "create=6,like=3,follow=1", Signing: "pipeline"}
	s.Shard = "1/2"
	ra := recordtest.RoundTrip(t, recordtest.MustRecord(t, a, s))
	s.Shard = "2/2"
	rb := recordtest.RoundTrip(t, recordtest.MustRecord(t, b, s))

	m, err := record.Merge(ra, rb)
	if err != nil {
		t.Fatal(err)
	}
	single := record.NewHist()
	for _, v := range all {
		record.RecordDuration(single, v)
	}
	// Answered sends are in latency, the timeouts in failed: together they
	// hold every value.
	h, err := m.Overall.Latency.Decode()
	if err != nil {
		t.Fatal(err)
	}
	failed, err := m.Overall.Failed.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if failed.TotalCount() != 700 {
		t.Errorf("failed holds %d values, want the 700 timeouts", failed.TotalCount())
	}
	h.Merge(failed)
	if got, want := record.Summarize(h), record.Summarize(single); got != want {
		t.Errorf("merged summary %+v\nwant %+v", got, want)
	}
	if !h.Equals(single) {
		t.Error("merged histogram differs from the histogram of all values")
	}
	for q := 0.0; q <= 100; q += 0.25 {
		if got, want := h.ValueAtQuantile(q), single.ValueAtQuantile(q); got != want {
			t.Fatalf("p%g: merged %d, single %d", q, got, want)
		}
	}
	if c := m.Overall.Counts; c.Sent != 15000 || c.Completed != 15000 {
		t.Errorf("merged counts %+v, want 15000", c)
	}
	if got := m.Overall.Tally.Classes[record.ClassTimeout]; got != 700 || !reflect.DeepEqual(m.Overall.Unanswered, record.Unanswered{"timeout": 700}) {
		t.Errorf("timeouts %d, unanswered %v; want 700 of them, named", got, m.Overall.Unanswered)
	}
	if got := m.Overall.Tally.Classes[record.Class429]; got != 250 || m.Overall.Tally.RetryAfter != 250 {
		t.Errorf("429 %d Retry-After %d, want 250", got, m.Overall.Tally.RetryAfter)
	}
	if got := m.TypeNames(); !reflect.DeepEqual(got, []string{"Create", "Follow", "Like"}) {
		t.Errorf("types %v", got)
	}
	if m.Types["Create"].Counts.Sent != 12000 || m.Types["Like"].Counts.Sent != 2000 {
		t.Errorf("per-type counts wrong: %+v", m.Types["Create"].Counts)
	}
	if m.Generators() != 2 || m.Settings.Shard != "" || !m.Start.Equal(t0) {
		t.Errorf("generators %d shard %q start %v", m.Generators(), m.Settings.Shard, m.Start)
	}
	// The generators ran concurrently: 15000 sends in a 10 s window.
	if m.Rates.Sent != 1500 {
		t.Errorf("merged rate %v/s, want 1500", m.Rates.Sent)
	}
	// Timelines add up second by second (b started 0.3 s later: same seconds).
	if len(m.Timeline) != 10 || m.Timeline[0].Offered != 200 {
		t.Errorf("merged timeline %d ticks, first %+v", len(m.Timeline), m.Timeline[0])
	}
	// A merged record can itself be merged (here: alone).
	if _, err := record.Merge(m); err != nil {
		t.Errorf("re-merging a merged record: %v", err)
	}
}

// TestMergeCountsEveryUnansweredSend: merged records' reasons count every
// send without an answer, one generator's record from before the reasons
// were kept told by class.
func TestMergeCountsEveryUnansweredSend(t *testing.T) {
	lat := func(int) time.Duration { return time.Millisecond }
	newer := recordtest.Run(t0, 10*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(100, lat, recordtest.Every(10, record.ClassConnError))})
	for _, st := range []*record.Stats{newer.Overall, newer.Types["Create"]} {
		st.Unanswered = record.Unanswered{"connection refused": 10}
	}
	older := recordtest.Run(t0, 10*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(100, lat, recordtest.Every(4, record.ClassTimeout))})
	s := record.Settings{Label: "merge", Arrivals: "constant", Mix: "create=1", Signing: "pipeline"}
	s.Shard = "1/2"
	a := recordtest.RoundTrip(t, recordtest.MustRecord(t, newer, s))
	s.Shard = "2/2"
	b := recordtest.MustRecord(t, older, s)
	b.Overall.Unanswered, b.Types["Create"].Unanswered = nil, nil // as an older crowd wrote it
	b = recordtest.RoundTrip(t, b)
	m, err := record.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := record.Unanswered{"connection refused": 10, "timeout": 25}
	for name, tr := range map[string]*record.TypeRecord{"overall": &m.Overall, "Create": m.Types["Create"]} {
		if !reflect.DeepEqual(tr.Unanswered, want) {
			t.Errorf("%s: no answer because %v, want %v", name, tr.Unanswered, want)
		}
	}
}

// TestMergeRefuses: records that cannot be combined are refused, with the
// reason named.
func TestMergeRefuses(t *testing.T) {
	res := func() *record.Result {
		return recordtest.Run(t0, 5*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(10, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))})
	}
	base := record.Settings{Label: "x", Arrivals: "constant", Shard: "1/2"}
	rec := func(edit func(*record.Settings)) *record.Record {
		s := base
		if edit != nil {
			edit(&s)
		}
		return recordtest.MustRecord(t, res(), s)
	}
	one := rec(nil)
	foreign := rec(func(s *record.Settings) { s.Shard = "2/2" })
	foreign.Overall.Latency.HDR = encodedForeign(t)
	for _, tc := range []struct {
		name string
		recs []*record.Record
		want string
	}{
		{"nothing to merge", nil, "no records"},
		{"different label", []*record.Record{one, rec(func(s *record.Settings) { s.Label = "y"; s.Shard = "2/2" })}, "label"},
		{"different rate", []*record.Record{one, func() *record.Record {
			r := rec(func(s *record.Settings) { s.Shard = "2/2" })
			r.Settings.Rate = 200
			return r
		}()}, "rate"},
		{"different mix", []*record.Record{one, rec(func(s *record.Settings) { s.Mix = "like=1"; s.Shard = "2/2" })}, "mix"},
		{"same shard twice", []*record.Record{one, rec(nil)}, "shard 1/2 appears twice"},
		{"same record twice", []*record.Record{one, one}, "a second time"},
		{"shards of different runs", []*record.Record{one, rec(func(s *record.Settings) { s.Shard = "2/3" })}, "shard"},
		{"sharded with unsharded", []*record.Record{one, rec(func(s *record.Settings) { s.Shard = "" })}, "shard"},
		{"foreign histogram geometry", []*record.Record{one, foreign}, "geometry"},
	} {
		_, err := record.Merge(tc.recs...)
		if !errors.Is(err, record.ErrMerge) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrMerge mentioning %q", tc.name, err, tc.want)
		}
	}
}

// TestMergeSpans: records merge only when they flooded together, each two
// sharing at least half of the shorter one's span; a merged rate of runs
// made one after the other would be one the SUT never met.
func TestMergeSpans(t *testing.T) {
	rec := func(shard string, start time.Time) *record.Record {
		res := recordtest.Run(start, 5*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(10, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))})
		return recordtest.MustRecord(t, res, record.Settings{Label: "x", Arrivals: "constant", Shard: shard})
	}
	const whole = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		name   string
		second time.Duration // when the second shard started, after the first (each spans 5.05 s)
		span   time.Duration // the second's span: whole (5.05 s), or less, interrupted early
		merges bool
	}{
		// Started together: the sharded run as meant.
		{"together", 0, whole, true},
		// Started by hand two seconds apart: they share 3.05 s of 5.05.
		{"two seconds apart", 2 * time.Second, whole, true},
		// Three seconds apart: 2.05 s of 5.05 shared, under half.
		{"three seconds apart", 3 * time.Second, whole, false},
		// One after the other: nothing shared.
		{"one after the other", 10 * time.Second, whole, false},
		// Before the first began.
		{"before", -10 * time.Second, whole, false},
		// Interrupted after 2 s, within the other's span: all of the
		// shorter shared.
		{"interrupted inside the other", time.Second, 2 * time.Second, true},
		// Interrupted after 2 s, 4 s in: 1.05 s of the shorter's 2 s.
		{"interrupted at the other's end", 4 * time.Second, 2 * time.Second, true},
		// Interrupted after 2 s, 4.5 s in: 0.55 s of 2 s.
		{"interrupted mostly after the other", 4500 * time.Millisecond, 2 * time.Second, false},
		// A record of no length within the other's span.
		{"no length, within", 2 * time.Second, 0, true},
		// A record of no length a day later: nothing shared.
		{"no length, a day later", 24 * time.Hour, 0, false},
		// A record that ends before it starts: malformed.
		{"reversed", time.Second, -time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			second := rec("1/2", t0.Add(tc.second))
			refusal := "did not flood together"
			if tc.span < 0 {
				refusal = "ends (" // before it starts
			}
			if tc.span != whole {
				second.End = second.Start.Add(tc.span)
			}
			m, err := record.Merge(rec("0/2", t0), second)
			switch {
			case tc.merges && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.merges && (!errors.Is(err, record.ErrMerge) || !strings.Contains(err.Error(), refusal)):
				t.Fatalf("merged (%v), want ErrMerge saying %q", err, refusal)
			case tc.merges && m.Generators() != 2:
				t.Errorf("merged %d generators, want 2", m.Generators())
			}
		})
	}
}

// encodedForeign is a histogram with a geometry other than the flood's.
func encodedForeign(t *testing.T) string {
	t.Helper()
	f := hdrNew(1, 1000, 2)
	_ = f.RecordValue(5)
	b, err := f.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRecordJSONRoundTrip(t *testing.T) {
	r := recordtest.MustRecord(t, recordtest.Run(t0, 3*time.Second, map[string]*record.Stats{
		"Create": recordtest.Sends(300, func(i int) time.Duration { return time.Duration(i) * time.Millisecond }, recordtest.Every(7, record.Class503)),
	}), record.Settings{Label: "rt", Mix: "create=1", Signing: "presign", Target: "load%d@sut.test", Warmup: time.Second})
	back := recordtest.RoundTrip(t, r)
	if !reflect.DeepEqual(r, back) {
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(back)
		t.Fatalf("round trip changed the record:\n%s\n%s", a, b)
	}
	b, _ := json.Marshal(r)
	for _, tc := range []struct{ name, from, to string }{
		{"other schema", `"schema":"crowd.flood.record"`, `"schema":"vegeta"`},
		{"newer version", `"version":2`, `"version":3`},
		{"unknown status class", `"retry_after"`, `"teapot":1,"retry_after"`},
		{"bad duration", `"timeout":"10s"`, `"timeout":"ten"`},
	} {
		bad := strings.Replace(string(b), tc.from, tc.to, 1)
		if bad == string(b) {
			t.Fatalf("%s: nothing replaced", tc.name)
		}
		if _, err := record.DecodeRecord(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	// A results file's first line: said to be one, and how to read it.
	run := `{"line":"run","schema":"crowd.flood.results","version":1,"run":0}`
	if _, err := record.DecodeRecord(strings.NewReader(run)); err == nil || !strings.Contains(err.Error(), "a results file of crowd flood --results") {
		t.Errorf("a results file read as a record: %v, want it said to be one", err)
	}
}

// TestWriteRecord: a final record without checkpoints takes the name its
// start and label give, "-2" when that is taken, and adds its row to runs.md.
func TestWriteRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "load")
	r := recordtest.MustRecord(t, recordtest.Run(t0, 2*time.Second, map[string]*record.Stats{
		"Like": recordtest.Sends(200, func(int) time.Duration { return 3 * time.Millisecond }, recordtest.Always(record.Class202)),
	}), record.Settings{Label: "smoke/run 1"})
	p1, err := record.NewRecordFile(dir).FinalWith(r, r)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := record.NewRecordFile(dir).FinalWith(r, r)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p1) != "20261130-120000-smoke_run_1.json" || filepath.Base(p2) != "20261130-120000-smoke_run_1-2.json" {
		t.Errorf("files %s, %s", p1, p2)
	}
	if _, err := record.LoadRecord(p2); err != nil {
		t.Error(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "runs.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(md)), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "| start (UTC)") {
		t.Fatalf("runs.md:\n%s", md)
	}
	if !strings.Contains(lines[3], "(20261130-120000-smoke_run_1-2.json)") {
		t.Errorf("row does not link its record: %s", lines[3])
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".record-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
