package record

import (
	"cmp"
	"slices"
	"time"
)

// Replay rebuilds a run's Result from its sends written down one by one (a
// results file, flood/record/results): the Recorder's own shards, counters
// and timeline ticks, fed in time order instead of as the run went, so that
// a report made from the sends and one made from the record count alike.
// A Replay serves one run; it is not safe for concurrent use.
type Replay struct {
	r      *Recorder
	events []replayed
}

// replayed is one offer (at its intended time) or one answer (at its end).
type replayed struct {
	at    time.Duration
	offer bool
	o     Offer
	d     Delivery
}

// NewReplay returns a Replay of the run that s scheduled.
func NewReplay(s Schedule) *Replay {
	r := NewRecorder(RecorderOptions{Shards: 1})
	r.s = s
	r.t.r = r
	return &Replay{r: r}
}

// Offered adds a send whose intended time was reached, as the dispatcher
// offered it (Collector.Offered).
func (p *Replay) Offered(o Offer) {
	p.events = append(p.events, replayed{at: o.Due, offer: true, o: o})
}

// Answered adds a send handed to a worker, as it ended
// (Collector.Answered).
func (p *Replay) Answered(d Delivery) {
	p.events = append(p.events, replayed{at: d.Done, d: d})
}

// Result is the run's Result, ended as st says: the sends in time order
// (offers at their intended time, answers at their end), the timeline cut
// at each whole second from the start as a Recorder's ticker cuts it.
func (p *Replay) Result(st Stop) *Result {
	r := p.r
	// Stable: at one instant an offer stays before its answer, which was
	// added after it.
	slices.SortStableFunc(p.events, func(a, b replayed) int { return cmp.Compare(a.at, b.at) })
	elapsed := st.End.Sub(r.s.Start)
	k := 1
	for i := range p.events {
		ev := &p.events[i]
		for ; time.Duration(k)*time.Second <= min(ev.at, elapsed); k++ {
			r.t.snapshot(k, time.Second, time.Duration(k)*time.Second)
		}
		if ev.offer {
			r.Offered(ev.o)
		} else {
			r.shards[0].record(&ev.d)
		}
	}
	for ; time.Duration(k)*time.Second <= elapsed; k++ {
		r.t.snapshot(k, time.Second, time.Duration(k)*time.Second)
	}
	r.stop = st
	r.t.final = true
	if span := elapsed - time.Duration(k-1)*time.Second; span > 0 {
		r.t.snapshot(k, span, elapsed)
	}
	res := r.collect(st.End, st.WindowEnd)
	res.Partial, res.Reason, res.Err = st.Partial, st.Reason, st.Err
	res.Timeline = r.t.timeline
	return res
}
