package flood

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
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

// awareSource is a Source told how each schedule's dispatcher runs.
type awareSource struct {
	*cycleSource
	told       []record.Dispatcher
	beforeTold int // requests taken before the first Dispatching
}

func (s *awareSource) Dispatching(thread record.Dispatcher) { s.told = append(s.told, thread) }

func (s *awareSource) Next(ctx context.Context) (*Prepared, error) {
	if len(s.told) == 0 {
		s.beforeTold++
	}
	return s.cycleSource.Next(ctx)
}

// TestDispatcherAwareSourceIsToldFirst: a DispatcherAware Source is told,
// once a schedule and before the schedule's first request is taken, what
// the record says of the dispatcher's thread, whichever thread that is.
func TestDispatcherAwareSourceIsToldFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  float64
		sleep func(time.Duration)
		wrap  bool
	}{
		// A thread of its own, under the policy asked for (normal).
		{"own thread", 1000, nil, false},
		// Above preciseRateMax: the caller's thread, no policy of its own.
		{"shared thread", 2 * preciseRateMax, nil, false},
		// A test's Sleep: no thread at all, a zero Dispatcher.
		{"test's sleep", 1000, time.Sleep, false},
		// Wrapped by another Source (as forgeries wrap the pipeline): told through it.
		{"wrapped", 1000, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &awareSource{cycleSource: newCycleSource(t, "http://sink.test/inbox")}
			var plan Source = src
			if tc.wrap {
				plan = WrapSource(src, src.Next)
			}
			rt := rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil })
			res := mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, tc.rate), Source: plan, Transport: rt,
				Priority: PriorityNormal, Sleep: tc.sleep, Limits: Limits{MaxSends: 5}})
			if len(src.told) != 1 || src.beforeTold != 0 {
				t.Fatalf("told %d times, %d requests taken before; want once, before any", len(src.told), src.beforeTold)
			}
			if src.told[0] != res.Dispatcher {
				t.Errorf("told %+v, the record says %+v", src.told[0], res.Dispatcher)
			}
		})
	}
}
