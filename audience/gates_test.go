package audience

import (
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// TestRunGates: which gates the run section takes (CheckGate), and how
// each part is judged (JudgeGates), a part that measured nothing missed.
func TestRunGates(t *testing.T) {
	run := sampleRecord().Run
	run.Visibility.Latency = recordtest.Latency(t, 8455, 310000, 2900000, 4100000) // kept, as a run keeps it
	for _, tc := range []struct {
		expr  string
		check string // CheckGate's error, "" for none
		say   string // JudgeGates' result, its start
	}{
		{"visibility.p95<1h", "", "visibility.latency.p95 = "},                           // a latency of the notes
		{"visibility.never_seen<=2", "", "visibility.never_seen = 2 (want <= 2): met"},   // its count
		{"delivery.unreached<50%", "", "delivery.unreached = "},                          // the deliveries' count, as a share
		{"home.p99<1h", "", "home.latency.p99 = "},                                       // the probes' latency
		{"home.never_seen==0", "home has latencies only", ""},                            // home counts nothing
		{"delivery.never_seen==0", "delivery counts unreached only", ""},                 // another part's count
		{"visibility.p75<1h", "", "visibility.latency.p75 = "},                           // a quantile from the histogram
		{"visibility.service.p95<1s", "keeps one latency, no service", ""},               // no family but latency
		{"drain.p95<1s", "drain is no part of crowd run's run section a gate reads", ""}, // a part with no gate
	} {
		gs, err := record.ParseGates([]string{tc.expr})
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		err = CheckGate(gs[0])
		if (err == nil) != (tc.check == "") || (err != nil && !strings.Contains(err.Error(), tc.check)) {
			t.Errorf("CheckGate(%s) = %v, want %q", tc.expr, err, tc.check)
			continue
		}
		if err != nil {
			continue
		}
		res := JudgeGates(run, gs)
		if len(res) != 1 || !res[0].Known || !strings.HasPrefix(res[0].String(), tc.say) {
			t.Errorf("JudgeGates(%s) = %+v, want %q", tc.expr, res, tc.say)
		}
	}
	// Nothing owed, nothing to count: no data, missed, not a vacuous pass.
	empty := *run
	empty.Visibility = VisibilityStats{}
	gs, _ := record.ParseGates([]string{"visibility.never_seen==0"})
	if res := JudgeGates(&empty, gs); res[0].Known || !strings.Contains(res[0].String(), "no data") {
		t.Errorf("never_seen of no note: %s", res[0].String())
	}
}
