package flood

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/report"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// TestImpossibleRateReportsElapsed: --rate 1e9 --max-sends 50 against a
// real sink. The schedule lasts 50 ns, the sends take milliseconds: the
// record's rates are the sends over the time they took (within 10 % of
// sends ÷ the wall time around the run), its measured window is that
// time, and the verdict blames the generator, never "kept up".
func TestImpossibleRateReportsElapsed(t *testing.T) {
	// Each answer takes 50 ms, so the run's length is the
	// answers' and not the engine's own start and stop.
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(50 * time.Millisecond)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer sink.Close()
	tr := NewTransport(100, 0, nil)
	defer tr.CloseIdleConnections()

	const sends = 50
	began := time.Now()
	res := mustRun(t, context.Background(), Plan{Limits: Limits{MaxSends: sends, MaxInflight: 100}, Pacer: mustConstant(t, 1e9),
		Source: newCycleSource(t, sink.URL+"/inbox"), Transport: tr})
	wall := time.Since(began)
	rec := recordtest.MustRecord(t, res, record.Settings{Label: "impossible"})

	// Elapsed is the run's wall time as the engine took it (start to the
	// last send finished); the wall time around Run bounds it from above.
	want := sends / res.Elapsed.Seconds()
	t.Logf("wall %v, elapsed %v, measured %.4fs, rates %+v, window %+v", wall, res.Elapsed, rec.Measured, rec.Rates, rec.Window)
	if rec.Overall.Tally.OK() != sends {
		t.Fatalf("2xx %d, want %d: %+v", rec.Overall.Tally.OK(), sends, rec.Overall.Tally)
	}
	for name, got := range map[string]float64{"offered": rec.Rates.Offered, "sent": rec.Rates.Sent, "throughput": rec.Rates.Throughput} {
		if got < 0.9*want || got > 1.1*want || got < sends/wall.Seconds() {
			t.Errorf("%s rate %.1f/s, want %.1f/s ± 10%% (%d sends in %v; %v around the run)", name, got, want, sends, res.Elapsed, wall)
		}
	}
	if rec.Measured < 0.9*res.Elapsed.Seconds() || rec.Measured > wall.Seconds() {
		t.Errorf("measured %.4fs, want the %v the run took", rec.Measured, res.Elapsed)
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
}
