package audience

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestProber reads the homes on schedule, reports each status with the
// probe's times, and tallies answers and errors. The fake SUT answers in
// memory on synctest's fake clock, so the schedule holds whatever the load.
func TestProber(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int // the home timeline's answer (0 = 200)
		limit    int
		statuses int // in each home
		errClass string
		overflow bool
	}{
		// A home with two statuses, read fine.
		{"ok", 0, 40, 2, "", false},
		// A rate-limited home: every probe an error of class 429.
		{"429", 429, 40, 2, "429", false},
		// A server error.
		{"5xx", 502, 40, 2, "5xx", false},
		// Full answers: the first is the baseline, the same ones later are
		// not new, so no overflow.
		{"full, no overflow", 0, 2, 2, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSUT("load0", "load1")
			f.homeStatus = tc.status
			for _, p := range []string{"load0", "load1"} {
				for i := range tc.statuses {
					f.home[p] = append(f.home[p], Status{ID: fmt.Sprint(i), URI: fmt.Sprintf("https://flood1.test/n/%s/%d", p, i)})
				}
			}
			synctest.Test(t, func(t *testing.T) {
				c := f.inMemory(t)
				var mu sync.Mutex
				seen := map[string]time.Duration{} // persona uri → answer − ask
				pr := &Prober{Client: c, Hz: 20, Limit: tc.limit,
					Targets: []ProbeTarget{{Persona: "load0", Token: "tok-load0"}, {Persona: "load1", Token: "tok-load1"}},
					OnSeen: func(p, uri string, asked, at time.Time) bool {
						mu.Lock()
						defer mu.Unlock()
						k := p + " " + uri
						if _, ok := seen[k]; ok {
							return false
						}
						seen[k] = at.Sub(asked)
						return true
					}}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				st := pr.Run(ctx)
				// 2 personas × 20/s × 1 s on the fake clock: 40, and one more
				// for a persona whose tick ties with the end of the run.
				if st.Probes < 40 || st.Probes > 42 {
					t.Errorf("%d probes in 1 s at 20/s for 2 personas, want 40 to 42", st.Probes)
				}
				if st.Skipped != 0 {
					t.Errorf("%d ticks skipped, though every answer takes no time", st.Skipped)
				}
				if tc.errClass != "" {
					if st.Errors != st.Probes || st.ErrorClasses[tc.errClass] != st.Probes || st.OK != 0 {
						t.Errorf("errors %d of %d, classes %v", st.Errors, st.Probes, st.ErrorClasses)
					}
					return
				}
				if st.Errors != 0 || st.OK != st.Probes || st.Latency.Count != st.Probes {
					t.Errorf("stats %+v", st)
				}
				if len(seen) != 2*tc.statuses {
					t.Errorf("saw %d statuses, want %d", len(seen), 2*tc.statuses)
				}
				for k, d := range seen {
					if d < 0 {
						t.Errorf("%s: answered before it was asked", k)
					}
				}
				if (st.Overflows > 0) != tc.overflow {
					t.Errorf("overflows %d", st.Overflows)
				}
			})
		})
	}
}

// TestProberSlowHome: a probe slower than the period skips the ticks it
// overran instead of piling up. On synctest's fake clock the schedule is
// exact: at 20/s (a tick every 50 ms) a 120 ms home is probed at 0, 150,
// 300 and 450 ms, each probe overrunning two ticks; the probe due at 600 ms
// meets the end of the run and is not counted.
func TestProberSlowHome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeSUT("load0")
		f.homeDelay = 120 * time.Millisecond
		pr := &Prober{Client: f.inMemory(t), Hz: 20, Targets: []ProbeTarget{{Persona: "load0", Token: "tok-load0"}}}
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		defer cancel()
		st := pr.Run(ctx)
		if st.Probes != 4 || st.OK != 4 || st.Skipped != 8 {
			t.Errorf("a 120 ms home at 20/s for 0.6 s: %d probes (%d ok), %d skipped; want 4, 4, 8", st.Probes, st.OK, st.Skipped)
		}
		// The histogram keeps 3 significant digits: 120 ms is read back within 0.1 %.
		if st.Latency.Count != 4 || st.Latency.P50 < 120000 || st.Latency.Max > 120120 {
			t.Errorf("latency %+v, want 4 probes of the home's 120 ms", st.Latency)
		}
	})
}
