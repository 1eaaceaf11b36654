package flood

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/report"

	"github.com/crowdfed/crowd/flood/record"
)

// TestTimelineAndWarmup: 5 s at 100/s with 2 s of warm-up: one tick a second
// (the last one partial), the first two flagged warm-up, the ticks adding up
// to every offer; the measured counts hold only the last 3 s; Progress is
// called once per tick.
func TestTimelineAndWarmup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var progress []record.Progress
		res, err := recordedWith(context.Background(), Plan{Limits: Limits{Duration: 5 * time.Second, Warmup: 2 * time.Second},
			Sleep:     time.Sleep, // synctest: fake clock
			Pacer:     mustConstant(t, 100),
			Source:    newCycleSource(t, "http://sut.test/inbox"),
			Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
		}, record.RecorderOptions{Progress: func(p record.Progress) { progress = append(progress, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Timeline) != 5 || len(progress) != 5 {
			t.Fatalf("%d ticks, %d progress calls, want 5", len(res.Timeline), len(progress))
		}
		var offered, completed int64
		for i, tk := range res.Timeline {
			offered += tk.Offered
			completed += tk.Completed
			if tk.Warmup != (i < 2) {
				t.Errorf("tick %d warm-up %v", tk.T, tk.Warmup)
			}
		}
		if offered != 500 || completed != 500 {
			t.Errorf("ticks add up to %d offered, %d completed, want 500", offered, completed)
		}
		if res.Overall.Counts.Offered != 300 || res.WarmupCounts.Offered != 200 {
			t.Errorf("measured %d, warm-up %d, want 300 and 200", res.Overall.Counts.Offered, res.WarmupCounts.Offered)
		}
		if res.Measured != 3*time.Second {
			t.Errorf("measured window %v, want 3s", res.Measured)
		}
		last := progress[len(progress)-1]
		if last.Sent != 500 || last.Completed != 500 || last.Total != 5*time.Second {
			t.Errorf("last progress %+v", last)
		}
	})
}

// TestDrainLineNotRepeated: a 2 s run at 10/s whose answers take 150 ms
// ends with a 50 ms drain after its schedule. The live line of that drain
// is the last report and says so (t=2.05s, end=1); in whole seconds it
// would have repeated t=2s. The measured window includes the drain: the
// rates divide by the 2.05 s the run took.
func TestDrainLineNotRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		live := report.NewLive(&out, false)
		res, err := recordedWith(context.Background(), Plan{Limits: Limits{Duration: 2 * time.Second},
			Sleep:  time.Sleep, // synctest: fake clock
			Pacer:  mustConstant(t, 10),
			Source: newCycleSource(t, "http://sut.test/inbox"),
			Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
				time.Sleep(150 * time.Millisecond)
				return answer(r, 202, nil), nil
			}),
		}, record.RecorderOptions{Progress: live.Update})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		seen := map[string]bool{}
		for _, l := range lines {
			at, _, _ := strings.Cut(l, " ")
			if seen[at] {
				t.Errorf("%s reported twice:\n%s", at, out.String())
			}
			seen[at] = true
		}
		if len(lines) != 3 || !strings.HasPrefix(lines[2], "t=2.05s ") || !strings.HasSuffix(lines[2], " end=1") {
			t.Errorf("want t=1s, t=2s and the drain t=2.05s … end=1:\n%s", out.String())
		}
		if res.Measured != 2050*time.Millisecond {
			t.Errorf("measured %v, want the 2.05s the run took", res.Measured)
		}
	})
}
