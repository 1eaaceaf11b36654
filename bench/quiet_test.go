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
		busy      int  // windows in which the sink uses a whole core before it goes quiet (-1: never)
		cancelled bool // the context has ended
		looks     int  // the CPU readings taken, the first included (0: at least the limit's worth)
	}{
		// Quiet already: one window.
		{"quiet", 0, false, 2},
		// Busy for three windows: the fourth is quiet.
		{"busy, then quiet", 3, false, 5},
		// Never quiet: the limit ends the wait.
		{"never quiet", -1, false, 0},
		// An ended context ends the wait at once.
		{"cancelled", -1, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			looks := 0
			used := func() float64 {
				looks++
				// One look per window: a busy window adds a core's window.
				if c.busy < 0 || looks <= c.busy+1 {
					return float64(looks) * window.Seconds()
				}
				return float64(c.busy+1) * window.Seconds()
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
