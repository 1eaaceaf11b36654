package flood

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

func TestRunRejectsInvalidPlans(t *testing.T) {
	ok := Plan{Limits: Limits{Duration: time.Second},
		Pacer:     mustConstant(t, 10),
		Source:    newCycleSource(t, "http://sut.test/inbox"),
		Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
	}
	for _, tc := range []struct {
		name string
		edit func(*Plan)
	}{
		{"no pacer", func(p *Plan) { p.Pacer = nil }},
		{"no source", func(p *Plan) { p.Source = nil }},
		{"no transport", func(p *Plan) { p.Transport = nil }},
		{"unbounded: neither duration nor max sends", func(p *Plan) { p.Duration = 0 }},
		{"negative in-flight", func(p *Plan) { p.MaxInflight = -1 }},
		{"warm-up as long as the run", func(p *Plan) { p.Warmup = time.Second }},
	} {
		p := ok
		tc.edit(&p)
		if _, err := recorded(context.Background(), p); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: err = %v, want ErrInvalidPlan", tc.name, err)
		}
	}
}

// TestDropsWhenCapReached: 100 sends/s into a SUT that takes 505 ms with 10
// slots. Whenever all 10 are busy at a send's intended time the send is
// dropped (never delayed): the counts must equal a direct simulation of that
// rule, and no more than 10 requests may ever be in flight. 505 ms keeps
// completions off the 10 ms grid, so no send ties with a slot freeing.
func TestDropsWhenCapReached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			slots = 10
			svc   = 505 * time.Millisecond
		)
		var cur, peak atomic.Int64
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(svc)
			cur.Add(-1)
			return answer(req, 202, nil), nil
		})
		pacer := mustConstant(t, 100)
		res := mustRun(t, context.Background(), Plan{Limits: Limits{Duration: 3 * time.Second, MaxInflight: slots},
			Sleep:  time.Sleep, // synctest: fake clock
			Pacer:  pacer,
			Source: newCycleSource(t, "http://sut.test/inbox", "Create", "Like"), Transport: rt,
		})

		var busy []time.Duration // when each busy slot frees
		var wantSent, wantDropped int64
		for n := int64(0); pacer.Offset(n) < 3*time.Second; n++ {
			at := pacer.Offset(n)
			free := busy[:0]
			for _, f := range busy {
				if f > at {
					free = append(free, f)
				}
			}
			busy = free
			if len(busy) >= slots {
				wantDropped++
				continue
			}
			busy = append(busy, at+svc)
			wantSent++
		}
		c := res.Overall.Counts
		if c.Sent != wantSent || c.Dropped != wantDropped || c.Offered != wantSent+wantDropped {
			t.Fatalf("sent %d dropped %d offered %d, want sent %d dropped %d", c.Sent, c.Dropped, c.Offered, wantSent, wantDropped)
		}
		if c.Completed != c.Sent {
			t.Errorf("completed %d of %d sent", c.Completed, c.Sent)
		}
		if p := peak.Load(); p != slots {
			t.Errorf("peak in flight %d, want exactly %d", p, slots)
		}
		var perType int64
		for _, st := range res.Types {
			perType += st.Counts.Dropped
		}
		if perType != c.Dropped {
			t.Errorf("per-type drops add up to %d, want %d", perType, c.Dropped)
		}
		// Every sent request started on time: drops, not delays.
		if m := res.Overall.Lateness.Max(); m != 0 {
			t.Errorf("lateness max %dµs, want 0", m)
		}
		rec, err := res.Record(record.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		// 100/s × 505 ms needs ~50 slots: the SUT filled them, not the crowd.
		if rec.Bottleneck.Generator {
			t.Errorf("drops blamed on the generator: %v", rec.Bottleneck.Reasons)
		}
		if len(rec.Bottleneck.Notes) == 0 || !strings.Contains(rec.Bottleneck.Notes[0], "dropped") {
			t.Errorf("no note explaining the drops: %v", rec.Bottleneck.Notes)
		}
	})
}

// TestLatenessServiceSplit: a transport that waits 30 ms for a connection,
// then 20 ms for the answer. Lateness is the 30 ms (the send was not on the
// wire yet), service time the 20 ms, latency from the intended time 50 ms,
// and the generator's own dispatch delay zero.
func TestLatenessServiceSplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			time.Sleep(30 * time.Millisecond)
			gotConn(req)
			time.Sleep(20 * time.Millisecond)
			return answer(req, 202, nil), nil
		})
		res := mustRun(t, context.Background(), Plan{Limits: Limits{Duration: 2 * time.Second, MaxInflight: 100},
			Sleep:  time.Sleep, // synctest: fake clock
			Pacer:  mustConstant(t, 50),
			Source: newCycleSource(t, "http://sut.test/inbox"), Transport: rt,
		})
		o := res.Overall
		for _, tc := range []struct {
			name string
			got  int64
			want time.Duration
		}{
			{"latency", o.Latency.ValueAtQuantile(50), 50 * time.Millisecond},
			{"latency max", o.Latency.Max(), 50 * time.Millisecond},
			{"service", o.Service.ValueAtQuantile(99), 20 * time.Millisecond},
			{"lateness", o.Lateness.ValueAtQuantile(99), 30 * time.Millisecond},
			{"dispatch", res.Dispatch.Max(), 0},
		} {
			if !o.Latency.ValuesAreEquivalent(tc.got, us(tc.want)) {
				t.Errorf("%s = %dµs, want %v", tc.name, tc.got, tc.want)
			}
		}
	})
}

// TestSourceStarved: a source that takes 25 ms on every tenth request at
// 100 sends/s delivers that send 15 ms after its intended time: 20 of 200
// sends are starved and the record blames the generator.
func TestSourceStarved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newCycleSource(t, "http://sut.test/inbox")
		calls := 0
		src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
			if calls%10 == 5 {
				time.Sleep(25 * time.Millisecond)
			}
			calls++
			return inner.Next(ctx)
		})
		res := mustRun(t, context.Background(), Plan{Limits: Limits{Duration: 2 * time.Second, MaxInflight: 10},
			Sleep:  time.Sleep, // synctest: fake clock
			Pacer:  mustConstant(t, 100),
			Source: src, Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
		})
		if got := res.Overall.Counts.Starved; got != 20 {
			t.Errorf("starved %d, want 20", got)
		}
		rec, err := res.Record(record.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Bottleneck.Generator || !strings.Contains(strings.Join(rec.Bottleneck.Reasons, "\n"), "source starved") {
			t.Errorf("bottleneck %+v, want the generator (source starved)", rec.Bottleneck)
		}
	})
}

// TestCancelGivesPartialRecord: Ctrl-C (a cancelled context) 2.005 s into a
// 10 s run stops the schedule, aborts the 5 sends in flight (50 ms each)
// without waiting for them, and yields a record marked partial that is
// written and read back as such.
func TestCancelGivesPartialRecord(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		rt := rtFunc(func(req *http.Request) (*http.Response, error) {
			select {
			case <-time.After(50 * time.Millisecond):
				return answer(req, 202, nil), nil
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(2005*time.Millisecond, cancel)
		res := mustRun(t, ctx, Plan{Limits: Limits{Duration: 10 * time.Second, MaxInflight: 100},
			Sleep:  time.Sleep, // synctest: fake clock
			Pacer:  mustConstant(t, 100),
			Source: newCycleSource(t, "http://sut.test/inbox"), Transport: rt,
		})
		if !res.Partial || res.Reason != "interrupted" {
			t.Fatalf("partial %v reason %q, want an interrupted partial result", res.Partial, res.Reason)
		}
		if res.Elapsed != 2005*time.Millisecond {
			t.Errorf("run took %v after the cancel at 2.005s", res.Elapsed)
		}
		c := res.Overall.Counts
		if c.Offered != 201 || c.Completed != 196 || c.Aborted != 5 {
			t.Errorf("counts %+v, want 201 offered, 196 completed, 5 aborted", c)
		}
		if res.Measured != 2005*time.Millisecond {
			t.Errorf("measured %v, want 2.005s", res.Measured)
		}
		rec, err := res.Record(record.Settings{Label: "cancel test"})
		if err != nil {
			t.Fatal(err)
		}
		path, err := record.NewRecordFile(dir).FinalWith(rec, rec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := record.LoadRecord(path)
		if err != nil {
			t.Fatal(err)
		}
		if !back.Partial || back.PartialReason != "interrupted" || back.Overall.Counts != c {
			t.Errorf("record read back: partial %v %q counts %+v", back.Partial, back.PartialReason, back.Overall.Counts)
		}
	})
}

// TestSourceEnds: a source that runs dry or fails ends the run early, marked
// partial, with what was sent measured.
func TestSourceEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			err    error
			reason record.StopReason
		}{
			{"exhausted", io.EOF, "source exhausted"},
			{"failed", errors.New("signer broke"), "source error: signer broke"},
		} {
			inner := newCycleSource(t, "http://sut.test/inbox")
			n := 0
			src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
				if n++; n > 50 {
					return nil, tc.err
				}
				return inner.Next(ctx)
			})
			res := mustRun(t, context.Background(), Plan{Limits: Limits{Duration: 10 * time.Second},
				Sleep:  time.Sleep, // synctest: fake clock
				Pacer:  mustConstant(t, 100),
				Source: src, Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
			})
			if !res.Partial || res.Reason != tc.reason || res.Overall.Counts.Completed != 50 {
				t.Errorf("%s: partial %v reason %q completed %d", tc.name, res.Partial, res.Reason, res.Overall.Counts.Completed)
			}
			if (res.Err != nil) != (tc.err != io.EOF) {
				t.Errorf("%s: Err = %v", tc.name, res.Err)
			}
		}
	})
}

// TestJITStarvedOnlyWhenSigningLate: a Source that signs each request in
// Next (as --signing jit does) is starved only for sends its signing made
// late; the first send, due at the schedule's start, is no exception.
func TestJITStarvedOnlyWhenSigningLate(t *testing.T) {
	cases := []struct {
		name    string
		sign    time.Duration // time each Next takes
		rate    float64
		seconds time.Duration
		want    int64
	}{
		// 1 ms of signing in a 200 ms gap: never late, the first send included.
		{"fits the gap", time.Millisecond, 5, 10 * time.Second, 0},
		// 300 ms of signing in a 200 ms gap: every send after the first is late
		// (the first is ready when the schedule starts).
		{"exceeds the gap", 300 * time.Millisecond, 5, 2 * time.Second, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := newCycleSource(t, "http://sut.test/inbox")
				src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
					time.Sleep(tc.sign)
					return inner.Next(ctx)
				})
				res := mustRun(t, context.Background(), Plan{Limits: Limits{Duration: tc.seconds, MaxInflight: 10},
					Sleep:  time.Sleep, // synctest: fake clock
					Pacer:  mustConstant(t, tc.rate),
					Source: src, Transport: rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil }),
				})
				if got := res.Overall.Counts.Starved; got != tc.want {
					t.Errorf("starved %d of %d, want %d", got, res.Overall.Counts.Offered, tc.want)
				}
			})
		})
	}
}
