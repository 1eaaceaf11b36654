package flood

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// countingSource hands out a fresh Prepared for every Next, numbered in
// Body and its Token, so each can be told apart.
type countingSource struct {
	url   *url.URL
	taken []*Prepared
}

func (s *countingSource) Next(context.Context) (*Prepared, error) {
	p := &Prepared{Type: "Follow", Method: http.MethodPost, URL: s.url, Header: http.Header{},
		Body: []byte(strconv.Itoa(len(s.taken))), Token: len(s.taken)}
	s.taken = append(s.taken, p)
	return p, nil
}

// TestSettledHearsEveryTakenRequest: Collector.Settled hears exactly once, before
// Run returns, of every request the engine took from its source: answered
// (with its class), dropped for want of a slot, aborted in flight, or taken
// and left unsent when the run was interrupted while waiting for its time.
// A sent one's Outcome carries its Delivery, a dropped one's its Offer, and
// one never due neither.
func TestSettledHearsEveryTakenRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := answersAfter(35 * time.Millisecond)
		u, _ := url.Parse("http://sut.test/inbox")
		src := &countingSource{url: u}
		var mu sync.Mutex
		heard := map[any][]record.Outcome{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(1005*time.Millisecond, cancel) // between two sends, with some in flight
		res := mustRun(t, ctx, Plan{Limits: Limits{Duration: 10 * time.Second, MaxInflight: 3},
			Sleep: time.Sleep, Pacer: mustConstant(t, 100),
			Source: src, Transport: rt,
		}, settledFunc(func(token any, d record.Outcome) {
			if d.Sent != (d.Delivery != nil) || d.Offer.Dropped && d.Sent ||
				d.Delivery != nil && (d.Delivery.Aborted != d.Aborted || d.Delivery.Class != d.Class || d.Delivery.Attempts != 1) {
				t.Errorf("settled %+v (delivery %+v, offer %+v)", d, d.Delivery, d.Offer)
			}
			mu.Lock()
			heard[token] = append(heard[token], d)
			mu.Unlock()
		}))
		var answered, dropped, unsent, aborted int64
		for i, p := range src.taken {
			ds := heard[p.Token]
			if len(ds) != 1 {
				t.Fatalf("request %d taken from the source was settled %d times", i, len(ds))
			}
			switch d := ds[0]; {
			case !d.Sent && d.Offer.Dropped:
				dropped++
			case !d.Sent:
				unsent++
			case d.Aborted:
				aborted++
			case d.Class == record.Class202:
				answered++
			default:
				t.Errorf("request %d: %+v", i, d)
			}
		}
		c := res.Overall.Counts
		// The last request taken waited for its time when the run ended.
		if answered != c.Completed || aborted != c.Aborted || dropped != c.Dropped || unsent != 1 || c.Dropped == 0 || aborted == 0 {
			t.Errorf("settled %d answered, %d aborted, %d dropped, %d unsent; counts %+v (want drops, aborts, and one taken but never due)",
				answered, aborted, dropped, unsent, c)
		}
	})
}

// journal is a Collector that keeps everything it hears, in order.
type journal struct {
	mu       sync.Mutex
	calls    []string // "begin", "offered", "answered", "settled", "end"
	offers   []record.Offer
	answers  []record.Delivery
	settled  map[any][]record.Outcome
	schedule record.Schedule
	stop     record.Stop
}

func (j *journal) note(call string) { j.calls = append(j.calls, call) }

func (j *journal) Begin(s record.Schedule) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.note("begin")
	j.schedule = s
}

func (j *journal) Offered(o record.Offer) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.note("offered")
	j.offers = append(j.offers, o)
}

func (j *journal) Answered(_ int, d *record.Delivery) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.note("answered")
	j.answers = append(j.answers, *d)
}

func (j *journal) Settled(token any, o record.Outcome) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.note("settled")
	j.settled[token] = append(j.settled[token], o)
}

func (j *journal) End(s record.Stop) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.note("end")
	j.stop = s
}

// TestCollectorHearsEachRequestOnce: a run with a warm-up, drops (3
// slots, answers after 35 ms at 100/s) and an interruption in flight
// tells its collector Begin first and End last, once each; one Offered
// per send due (sent or dropped), one Answered per send made, and one
// Settled per request taken from the source, sent exactly when answered:
// offered = answered + dropped, taken = settled = offered + the one taken
// but never due. The Recorder beside it counts the same.
func TestCollectorHearsEachRequestOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, _ := url.Parse("http://sut.test/inbox")
		src := &countingSource{url: u}
		j := &journal{settled: map[any][]record.Outcome{}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(2005*time.Millisecond, cancel) // between two sends, with some in flight
		res := mustRun(t, ctx, Plan{Limits: Limits{Duration: 10 * time.Second, MaxInflight: 3, Warmup: time.Second},
			Sleep: time.Sleep, Pacer: mustConstant(t, 100), Source: src, Transport: answersAfter(35 * time.Millisecond)}, j)

		if n := len(j.calls); n < 2 || j.calls[0] != "begin" || j.calls[n-1] != "end" {
			t.Fatalf("calls begin with %q and end with %q, want begin … end", j.calls[0], j.calls[n-1])
		}
		count := map[string]int{}
		for _, c := range j.calls {
			count[c]++
		}
		if count["begin"] != 1 || count["end"] != 1 {
			t.Errorf("Begin %d and End %d times, want once each", count["begin"], count["end"])
		}
		var dropped, measured int
		for _, o := range j.offers {
			if o.Dropped {
				dropped++
			}
			if o.Measured {
				measured++
			}
		}
		var sent, unsent, aborted int
		for i, p := range src.taken {
			outs := j.settled[p.Token]
			if len(outs) != 1 {
				t.Fatalf("request %d was settled %d times, want once", i, len(outs))
			}
			switch o := outs[0]; {
			case !o.Sent:
				unsent++
			case o.Aborted:
				sent++
				aborted++
			default:
				sent++
			}
		}
		if len(j.settled) != len(src.taken) || count["settled"] != len(src.taken) {
			t.Errorf("%d settlements of %d tokens for %d requests taken", count["settled"], len(j.settled), len(src.taken))
		}
		if len(j.answers) != sent || len(j.offers) != sent+dropped || unsent != dropped+1 {
			t.Errorf("%d offered (%d dropped), %d answered, %d settled sent, %d unsent: want offered = answered + dropped, unsent = dropped + the one never due",
				len(j.offers), dropped, len(j.answers), sent, unsent)
		}
		if dropped == 0 || aborted == 0 || measured == len(j.offers) || measured == 0 {
			t.Fatalf("want drops (%d), aborts (%d) and a warm-up (%d of %d measured) for the test to mean something", dropped, aborted, measured, len(j.offers))
		}
		c, w := res.Overall.Counts, res.WarmupCounts
		if c.Offered+w.Offered != int64(len(j.offers)) || c.Dropped+w.Dropped != int64(dropped) || c.Offered != int64(measured) {
			t.Errorf("the Recorder counted %+v and warm-up %+v; the collector heard %d offers, %d dropped, %d measured", c, w, len(j.offers), dropped, measured)
		}
		if !j.stop.Partial || j.stop.Reason != record.ReasonInterrupted || j.schedule.MaxInflight != 3 || j.schedule.Warmup != time.Second {
			t.Errorf("schedule %+v, stop %+v", j.schedule, j.stop)
		}
	})
}
