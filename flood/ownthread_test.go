package flood

import (
	"context"
	"net/http"
	"runtime"
	"testing"
)

// The schedule runs on a goroutine of its own (up to preciseRateMax),
// yet what ends it abnormally ends Run's caller as it would have had the
// schedule run there: a Source's panic reaches the caller, and a Source's
// runtime.Goexit (a test's t.Fatal) ends the caller's goroutine.
func TestScheduleEndsItsCallerAsItEnded(t *testing.T) {
	for _, tc := range []struct {
		name       string
		end        func()
		wantPanic  bool
		wantReturn bool
	}{
		{"a panic reaches the caller", func() { panic("source broke") }, true, false},
		{"a Goexit ends the caller", runtime.Goexit, false, false},
		{"an ordinary return returns", func() {}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
				tc.end()
				return nil, context.Canceled // an ordinary end: the source has no more
			})
			rt := rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil })
			plan := Plan{Pacer: mustConstant(t, 1000), Source: src, Transport: rt, Limits: Limits{MaxSends: 5}}
			type ending struct {
				returned bool
				panicked any
			}
			ended := make(chan ending, 1)
			go func() {
				var e ending
				defer func() {
					e.panicked = recover()
					ended <- e
				}()
				_ = Run(context.Background(), plan, Nop{})
				e.returned = true
			}()
			e := <-ended
			if (e.panicked != nil) != tc.wantPanic || e.returned != tc.wantReturn {
				t.Errorf("Run's caller ended with panic %v, returned %v; want a panic %v, returned %v", e.panicked, e.returned, tc.wantPanic, tc.wantReturn)
			}
		})
	}
}
