// Package recordtest builds records for tests of the packages around the
// run record: made-up stats and results with known percentiles, the JSON
// round trip, and golden files.
package recordtest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// Sends records n completed sends (as a recorder files them): latency lat(i), service half of it,
// lateness lat(i)/10, status class cls(i) (Retry-After on 429s; an unanswered one's reason its
// class's name).
func Sends(n int, lat func(i int) time.Duration, cls func(i int) record.Class) *record.Stats {
	st := record.NewStats()
	for i := range n {
		l := lat(i)
		c := cls(i)
		st.Observe(c, l, l/2, l/10)
		st.Tally.Add(c, c == record.Class429)
		if !c.Answered() {
			st.Unanswered.Add(c.String(), 1)
		}
	}
	st.Counts = record.Counts{Offered: int64(n), Sent: int64(n), Completed: int64(n)}
	return st
}

// Run is a finished run with the given per-type stats.
func Run(start time.Time, measured time.Duration, types map[string]*record.Stats) *record.Result {
	r := &record.Result{
		Start: start, End: start.Add(measured + 50*time.Millisecond), Elapsed: measured, Measured: measured,
		Overall: record.NewStats(), Types: types, Dispatch: record.NewHist(),
		Rate: 100, Duration: measured, MaxInflight: 100, Timeout: 10 * time.Second,
	}
	for _, st := range types {
		r.Overall.Merge(st)
		for range st.Counts.Sent {
			record.RecordDuration(r.Dispatch, 50*time.Microsecond)
		}
	}
	for s := 1; s <= int(measured/time.Second); s++ {
		r.Timeline = append(r.Timeline, record.Tick{T: s, Span: 1, Offered: 100, Sent: 100, Completed: 100, OK: 99, Errors: 1,
			LatencyP50: 2000, LatencyP99: 9000, LatencyMax: 12000, LatenessP99: 300})
	}
	return r
}

// Always returns class c for every send.
func Always(c record.Class) func(int) record.Class { return func(int) record.Class { return c } }

// Every returns class c for every k-th send and 202 otherwise.
func Every(k int, c record.Class) func(int) record.Class {
	return func(i int) record.Class {
		if i%k == k-1 {
			return c
		}
		return record.Class202
	}
}

// RoundTrip encodes and decodes a record, as merging records from files does.
func RoundTrip(t *testing.T, r *record.Record) *record.Record {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := record.DecodeRecord(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// MustRecord turns res into a record with settings s, failing t on error.
func MustRecord(t *testing.T, res *record.Result, s record.Settings) *record.Record {
	t.Helper()
	r, err := res.Record(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Golden compares got with testdata/name, or rewrites it when update is set (each
// package's -update flag).
func Golden(t *testing.T, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
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

// Gated is the gates' test run: 1000 Creates (latency i ms, so p95 ≈ 950 ms; 1 in 20 is a
// 429) and 500 Likes at 2 ms; 10 s measured; 25 dropped of 1525 offered.
func Gated(t testing.TB) *record.Record {
	t.Helper()
	create := Sends(1000, func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }, Every(20, record.Class429))
	like := Sends(500, func(int) time.Duration { return 2 * time.Millisecond }, Always(record.Class202))
	create.Counts.Offered += 25
	create.Counts.Dropped = 25
	r, err := Run(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), 10*time.Second, map[string]*record.Stats{"Create": create, "Like": like}).Record(record.Settings{Label: "gates"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Latency is a latency histogram of n values (µs) whose quantiles are
// about the ones given, spread between them as a real run's are: from
// half p50 up to p50 over the first half, on to p95, p99, then twice p99
// at the top, each stretch linearly.
func Latency(t testing.TB, n, p50, p95, p99 int64) record.HistRecord {
	t.Helper()
	knots := []struct{ q, v float64 }{{0, float64(p50) / 2}, {0.5, float64(p50)}, {0.95, float64(p95)}, {0.99, float64(p99)}, {1, 2 * float64(p99)}}
	h := record.NewHist()
	for i := range n {
		q := (float64(i) + 0.5) / float64(n)
		k := 1
		for knots[k].q < q {
			k++
		}
		a, b := knots[k-1], knots[k]
		if err := h.RecordValue(int64(a.v + (b.v-a.v)*(q-a.q)/(b.q-a.q))); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := record.EncodeHist(h)
	if err != nil {
		t.Fatal(err)
	}
	return kept
}
