package flood

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// fillingSource is a Source whose FillAhead takes cost each, wanting up
// to want in the wait after every every-th request it gives (every 0:
// after each), and notes the time each was given.
type fillingSource struct {
	*cycleSource
	cost  time.Duration
	want  int
	every int
	given int // requests given
	inGap int
	lefts []time.Duration
}

func (s *fillingSource) Next(ctx context.Context) (*Prepared, error) {
	s.inGap = 0
	s.given++
	return s.cycleSource.Next(ctx)
}

func (s *fillingSource) FillAhead(left time.Duration) bool {
	if s.inGap >= s.want || s.every > 0 && s.given%s.every != 0 {
		return false
	}
	s.inGap++
	s.lefts = append(s.lefts, left)
	time.Sleep(s.cost)
	return true
}

// TestDispatcherFillsItsWaits: a WaitFiller's FillAhead runs in the
// dispatcher's wait before each send (after the first, taken before the
// clock starts), given the time left until it, and is asked again while
// it returns true. Work that fits leaves every send on time; work that
// does not leaves the send late by the excess, as lateness, not
// starvation: a request was ready. At 10/s (100 ms gaps), 2 s.
func TestDispatcherFillsItsWaits(t *testing.T) {
	for _, c := range []struct {
		name  string
		cost  time.Duration
		want  int
		every int
		fills int             // FillAhead's runs in the 19 gaps
		lefts []time.Duration // the left each run was given, in turn (repeated)
		late  time.Duration   // the most a send was late
	}{
		// Two of 30 ms in each gap of 100: every send on time.
		{"fits", 30 * time.Millisecond, 2, 0, 38, []time.Duration{100 * time.Millisecond, 70 * time.Millisecond}, 0},
		// One of 130 ms in every fourth gap: that gap's send 30 ms late,
		// the next on time again.
		{"overruns", 130 * time.Millisecond, 1, 4, 5, []time.Duration{100 * time.Millisecond}, 30 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := &fillingSource{cycleSource: newCycleSource(t, "http://sut.test/inbox"), cost: c.cost, want: c.want, every: c.every}
				res := mustRun(t, context.Background(), Plan{Limits: Limits{Duration: 2 * time.Second, MaxInflight: 10},
					Sleep:  time.Sleep, // synctest: fake clock
					Pacer:  mustConstant(t, 10),
					Source: src, Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
				})
				if n := res.Overall.Counts.Offered; n != 20 || res.Overall.Counts.Starved != 0 {
					t.Fatalf("%d offered, %d starved; want 20, none", n, res.Overall.Counts.Starved)
				}
				if got := len(src.lefts); got != c.fills {
					t.Errorf("FillAhead ran %d times, want %d", got, c.fills)
				}
				for i, left := range src.lefts {
					if want := c.lefts[i%len(c.lefts)]; left != want {
						t.Errorf("FillAhead %d was given %v left, want %v", i, left, want)
						break
					}
				}
				if late := (time.Duration(res.Overall.Lateness.Max()) * time.Microsecond).Round(time.Millisecond); late != c.late {
					t.Errorf("a send late by %v at most, want %v", late, c.late)
				}
			})
		})
	}
}

// TestWrapSourceFillsIn: a wrapper passes FillAhead on to the Source it
// wraps, and says false for one that fills nothing.
func TestWrapSourceFillsIn(t *testing.T) {
	in := &fillingSource{cycleSource: newCycleSource(t, "http://sut.test/inbox"), want: 1}
	w := WrapSource(in, in.Next)
	f, ok := w.(WaitFiller)
	if !ok || !f.FillAhead(time.Second) || f.FillAhead(time.Second) || len(in.lefts) != 1 || in.lefts[0] != time.Second {
		t.Errorf("wrapped filler: %v, lefts %v; want one fill given 1s", ok, in.lefts)
	}
	plain := newCycleSource(t, "http://sut.test/inbox")
	if WrapSource(plain, plain.Next).(WaitFiller).FillAhead(time.Second) {
		t.Error("a wrapper of a Source that fills nothing filled")
	}
}
