package flood

import (
	"context"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
	"github.com/crowdfed/crowd/flood/report"
	"github.com/crowdfed/crowd/internal/pipenet"
)

// TestImpossibleRateReportsElapsed: --rate 1e9 --max-sends 50 against a
// sink whose every answer takes 50 ms, from a source that drafts a request
// in 10 µs (a crowd cannot sign faster). The schedule lasts 50 ns, the
// sends take 0.5 ms to hand out and one answer's 50 ms to finish: the
// record's rates are the sends over the time they took, its measured
// window is that time, and the verdict blames the generator, never "kept
// up". The whole HTTP stack runs over an in-memory network on synctest's
// fake clock, so the figures are exact and a loaded machine cannot move them.
func TestImpossibleRateReportsElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const sends, answer, draft = 50, 50 * time.Millisecond, 10 * time.Microsecond
		sink := pipenet.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			time.Sleep(answer)
			w.WriteHeader(http.StatusAccepted)
		}))
		tr := NewTransport(100, 0, nil)
		tr.DialContext = sink.DialContext
		defer tr.CloseIdleConnections()

		inner := newCycleSource(t, "http://sink.test/inbox")
		src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
			time.Sleep(draft)
			return inner.Next(ctx)
		})
		res := mustRun(t, context.Background(), Plan{
			Sleep: time.Sleep, // synctest: fake clock
			Pacer: mustConstant(t, 1e9), Limits: Limits{MaxSends: sends, MaxInflight: 100},
			Source: src, Transport: tr})
		rec := recordtest.MustRecord(t, res, record.Settings{Label: "impossible"})
		t.Logf("elapsed %v, measured %.4fs, rates %+v, window %+v", res.Elapsed, rec.Measured, rec.Rates, rec.Window)

		if rec.Overall.Tally.OK() != sends {
			t.Fatalf("2xx %d, want %d: %+v", rec.Overall.Tally.OK(), sends, rec.Overall.Tally)
		}
		// Elapsed is the run as the engine took it: from the start to the
		// last answer, which came one answer's time after the last draft.
		if lo, hi := answer, answer+(sends+1)*draft; res.Elapsed < lo || res.Elapsed > hi {
			t.Errorf("elapsed %v, want the %v of an answer after the %v of the drafts", res.Elapsed, answer, sends*draft)
		}
		want := sends / res.Elapsed.Seconds()
		for name, got := range map[string]float64{"offered": rec.Rates.Offered, "sent": rec.Rates.Sent, "throughput": rec.Rates.Throughput} {
			if math.Abs(got-want) > 0.001*want {
				t.Errorf("%s rate %.1f/s, want %.1f/s (%d sends in %v)", name, got, want, sends, res.Elapsed)
			}
		}
		if math.Abs(rec.Measured-res.Elapsed.Seconds()) > 1e-6 {
			t.Errorf("measured %.6fs, want the %v the run took", rec.Measured, res.Elapsed)
		}
		if !rec.Bottleneck.Generator || !strings.Contains(strings.Join(rec.Bottleneck.Reasons, "\n"), "schedule not kept") {
			t.Errorf("verdict %+v: want the generator's limit (schedule not kept)", rec.Bottleneck)
		}
		if notes := strings.Join(rec.Bottleneck.Notes, "\n"); strings.Contains(notes, "the SUT") {
			t.Errorf("the generator's burst is blamed on the SUT: %q", notes)
		}
		var table strings.Builder
		if err := report.WriteTable(&table, rec); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(table.String(), "generator kept up") || strings.Contains(table.String(), "1000000000.0/s") {
			t.Errorf("the table claims the impossible:\n%s", table.String())
		}
		if !strings.Contains(table.String(), "at most 50 sends") {
			t.Errorf("the table does not say the run was bounded by sends:\n%s", table.String())
		}
	})
}
