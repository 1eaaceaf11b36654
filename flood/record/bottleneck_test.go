package record_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

func TestDiagnose(t *testing.T) {
	type in struct {
		offered, dropped, starved int64
		written                   int64   // of the sends, those the dispatcher wrote itself
		rate                      float64 // offered per second
		service, dispatch, late   time.Duration
		slots, generators         int
		asked, due, took          float64 // rate asked; seconds from the first due time to the last due and the last taken
	}
	for _, tc := range []struct {
		name      string
		in        in
		generator bool
		says      string // in a reason (generator) or a note
	}{
		{"clean run", in{offered: 10000, rate: 300, service: 20 * time.Millisecond, dispatch: 100 * time.Microsecond, late: 150 * time.Microsecond, slots: 100}, false, ""},
		{"source starved 0.2%", in{offered: 10000, starved: 20, rate: 300, service: 20 * time.Millisecond, slots: 100}, true, "source starved"},
		{"starved 0.05%: noise", in{offered: 10000, starved: 5, rate: 300, service: 20 * time.Millisecond, slots: 100}, false, ""},
		{"dispatch 5ms against service 10ms", in{offered: 10000, rate: 300, service: 10 * time.Millisecond, dispatch: 5 * time.Millisecond, late: 5 * time.Millisecond, slots: 100}, true, "generator late"},
		// The dispatcher wrote the sends on time; the workers took the
		// answers late: said so, as the delay is in the reading.
		{"answers taken 1.8ms late, sends on time", in{offered: 2000, written: 2000, rate: 20, service: 3 * time.Millisecond, dispatch: 1800 * time.Microsecond, late: 100 * time.Microsecond, slots: 100}, true, "the sends left on time (lateness p99 100µs)"},
		// Written, but the sends were late too: the plain verdict.
		{"written and late", in{offered: 2000, written: 2000, rate: 20, service: 3 * time.Millisecond, dispatch: 1800 * time.Microsecond, late: 1800 * time.Microsecond, slots: 100}, true, "generator late: its own dispatch delay"},
		// 80 sends: their dispatch p99 is the worst one or two, not judged
		// (a tiny run flagged the generator from one hiccup).
		{"dispatch 1.18ms over 80 sends: too few", in{offered: 80, written: 80, rate: 20, service: 2340 * time.Microsecond, dispatch: 1180 * time.Microsecond, late: 54 * time.Microsecond, slots: 100}, false, "over only 80 sends"},
		// 1 000 sends: some ten lie beyond their p99, judged.
		{"dispatch 1.18ms over 1000 sends: judged", in{offered: 1000, written: 1000, rate: 20, service: 2340 * time.Microsecond, dispatch: 1180 * time.Microsecond, late: 54 * time.Microsecond, slots: 100}, true, "generator late reading answers"},
		{"dispatch 5ms against service 2s: the SUT dwarfs it", in{offered: 10000, rate: 30, service: 2 * time.Second, dispatch: 5 * time.Millisecond, late: 5 * time.Millisecond, slots: 100}, false, ""},
		{"dispatch 0.8ms: under the limit", in{offered: 10000, rate: 300, service: time.Millisecond, dispatch: 800 * time.Microsecond, late: 800 * time.Microsecond, slots: 100}, false, ""},
		{"drops with fast service", in{offered: 10000, dropped: 100, rate: 1000, service: 10 * time.Millisecond, slots: 100}, true, "drops with fast service"},
		{"drops with slow service: the SUT's", in{offered: 10000, dropped: 100, rate: 1000, service: time.Second, slots: 100}, false, "the SUT's slowness filled them"},
		{"drops needing 80 of 100 slots: the SUT's", in{offered: 10000, dropped: 100, rate: 1000, service: 80 * time.Millisecond, slots: 100, generators: 1}, false, "SUT's slowness"},
		{"the same on 2 generators (200 slots): the crowd's", in{offered: 10000, dropped: 100, rate: 1000, service: 80 * time.Millisecond, slots: 100, generators: 2}, true, "could not recycle"},
		{"waiting for connections", in{offered: 10000, rate: 300, service: 2 * time.Millisecond, dispatch: 100 * time.Microsecond, late: 500 * time.Millisecond, slots: 100}, false, "waited for a connection"},
		{"nothing offered", in{}, false, ""},
		{"--rate 1e9 --max-sends 50: 50 ns of schedule took 2 ms", in{offered: 50, rate: 25000, service: 50 * time.Millisecond, slots: 100, asked: 1e9, due: 49e-9, took: 0.002}, true, "schedule not kept"},
		{"60 s at 300/s taken 0.2 ms late: kept", in{offered: 18000, rate: 300, service: 20 * time.Millisecond, slots: 100, asked: 300, due: 59.9967, took: 59.9969}, false, ""},
		{"100 sends at 1000/s taken 20 ms late: not kept", in{offered: 100, rate: 1000, service: 20 * time.Millisecond, slots: 100, asked: 1000, due: 0.099, took: 0.12}, true, "schedule not kept"},
	} {
		r := &record.Record{Settings: record.Settings{MaxInflight: tc.in.slots, Rate: tc.in.asked}, Window: record.Window{LastDue: tc.in.due, LastSent: tc.in.took}}
		for range max(1, tc.in.generators) {
			r.Parts = append(r.Parts, record.Part{})
		}
		r.Overall.Counts = record.Counts{Offered: tc.in.offered, Sent: tc.in.offered - tc.in.dropped, Dropped: tc.in.dropped, Starved: tc.in.starved, Written: tc.in.written}
		r.Rates.Offered = tc.in.rate
		r.Overall.Service.P99 = us(tc.in.service)
		r.Overall.Lateness.P99 = us(tc.in.late)
		r.Dispatch.P99, r.Dispatch.Count = us(tc.in.dispatch), tc.in.offered-tc.in.dropped
		d := record.DefaultBottleneckRule().Diagnose(r)
		if !strings.Contains(d.Rule, "0.1% of offered") || !strings.Contains(d.Rule, "span / 0.9") {
			t.Errorf("%s: the verdict does not state its thresholds: %q", tc.name, d.Rule)
		}
		if d.Generator != tc.generator {
			t.Errorf("%s: generator %v, want %v: %+v", tc.name, d.Generator, tc.generator, d)
		}
		all := strings.Join(append(d.Reasons, d.Notes...), "\n")
		if tc.says == "" && all != "" {
			t.Errorf("%s: unexpected verdict %q", tc.name, all)
		}
		if !strings.Contains(all, tc.says) {
			t.Errorf("%s: verdict %q does not say %q", tc.name, all, tc.says)
		}
	}
}
