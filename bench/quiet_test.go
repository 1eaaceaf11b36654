package main

import (
	"context"
	"testing"
	"time"
)

// TestWaitQuiet: the wait for a quiet sink ends at the first window in
// which the sink used less than its share of a core, at the limit when it
// never is, and when the context ends.
func TestWaitQuiet(t *testing.T) {
	const window = 10 * time.Millisecond
	for _, c := range []struct {
		name      string
		busy      int     // windows in which the sink uses load of a core before it goes idle (-1: never)
		load      float64 // the share of a core it uses in a busy window
		cancelled bool    // the context has ended
		looks     int     // the CPU readings taken, the first included (0: at least the limit's worth)
	}{
		// Quiet already: one window.
		{"quiet", 0, 1, false, 2},
		// Busy for three windows: the fourth is quiet.
		{"busy, then quiet", 3, 1, false, 5},
		// Under a tenth of a core is quiet already.
		{"under the share", -1, 0.05, false, 2},
		// Over it is not: the limit ends the wait.
		{"over the share", -1, 0.15, false, 0},
		// Never quiet: the limit ends the wait.
		{"never quiet", -1, 1, false, 0},
		// An ended context ends the wait at once.
		{"cancelled", -1, 1, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			looks := 0
			used := func() float64 {
				looks++
				// One look per window: a busy window adds load × a window.
				busy := looks - 1
				if c.busy >= 0 {
					busy = min(busy, c.busy)
				}
				return float64(busy) * c.load * window.Seconds()
			}
			ctx, cancel := context.WithCancel(context.Background())
			if c.cancelled {
				cancel()
			}
			defer cancel()
			limit := 20 * window
			waited := waitQuiet(ctx, used, window, 0.1, limit)
			switch {
			case c.looks > 0 && looks != c.looks:
				t.Errorf("%d readings, want %d", looks, c.looks)
			case c.looks == 0 && waited < limit:
				t.Errorf("waited %v for a sink never quiet, want the limit %v", waited, limit)
			}
		})
	}
}
