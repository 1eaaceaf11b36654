package record

import "time"

// ticker is a Recorder's once-a-second goroutine: it cuts the timeline's
// ticks, reports progress and takes the checkpoints.
type ticker struct {
	r        *Recorder
	stopc    chan struct{}
	done     chan struct{}
	timeline []Tick
	spare    []*interval
	agg      *interval
	last     Progress
	prev     Counts // the totals at the previous tick
	final    bool   // the run has ended: the next snapshot is the last
}

// init makes the intervals a tick swaps in for shards shards.
func (t *ticker) init(shards int) {
	t.agg = newInterval()
	t.spare = make([]*interval, shards)
	for i := range t.spare {
		t.spare[i] = newInterval()
	}
}

func (t *ticker) start(r *Recorder) {
	t.r = r
	t.stopc, t.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.done)
		t.run()
	}()
}

// finish records the last (partial) second and waits for the goroutine.
func (t *ticker) finish() {
	close(t.stopc)
	<-t.done
}

// run snapshots the interval measurements once a second, aligned to the
// start, until stopped; then it records the last (partial) second.
func (t *ticker) run() {
	r := t.r
	start := r.s.Start
	tm := time.NewTimer(time.Until(start.Add(time.Second)))
	defer tm.Stop()
	every := r.o.CheckpointEvery
	nextCheckpoint := every
	for k := 1; ; k++ {
		select {
		case <-tm.C:
			t.snapshot(k, time.Second, time.Duration(k)*time.Second)
			if r.o.Checkpoint != nil && time.Duration(k)*time.Second >= nextCheckpoint {
				r.o.Checkpoint(r.checkpoint(time.Now()))
				for nextCheckpoint <= time.Duration(k)*time.Second {
					nextCheckpoint += every
				}
			}
			tm.Reset(time.Until(start.Add(time.Duration(k+1) * time.Second)))
		case <-t.stopc:
			end := r.stop.End
			span := end.Sub(start) - time.Duration(k-1)*time.Second
			t.final = true
			if span > 0 {
				t.snapshot(k, span, end.Sub(start))
			}
			return
		}
	}
}

func (t *ticker) snapshot(k int, span, elapsed time.Duration) {
	r := t.r
	var answered int64
	for i, sh := range r.shards {
		sh.mu.Lock()
		sh.iv, t.spare[i] = t.spare[i], sh.iv
		answered += sh.answered
		sh.mu.Unlock()
	}
	agg := t.agg
	agg.reset()
	for _, iv := range t.spare {
		agg.merge(iv)
		iv.reset()
	}
	r.mu.Lock()
	tot := r.tot
	r.mu.Unlock()
	tk := Tick{
		T:           k,
		Span:        span.Seconds(),
		Warmup:      time.Duration(k)*time.Second <= r.s.Warmup,
		Offered:     tot.Offered - t.prev.Offered,
		Sent:        tot.Sent - t.prev.Sent,
		Dropped:     tot.Dropped - t.prev.Dropped,
		Starved:     tot.Starved - t.prev.Starved,
		Completed:   agg.completed,
		OK:          agg.ok,
		Errors:      agg.errs,
		Status429:   agg.r4,
		Inflight:    tot.Sent - answered, // answers were read first: never negative
		LatencyP50:  agg.lat.ValueAtQuantile(50),
		LatencyP99:  agg.lat.ValueAtQuantile(99),
		LatencyMax:  agg.lat.Max(),
		LatenessP99: agg.late.ValueAtQuantile(99),
		LatenessP50: agg.late.ValueAtQuantile(50),
	}
	if agg.lat.TotalCount() == 0 {
		tk.LatencyMax = 0
	}
	t.prev = tot
	t.timeline = append(t.timeline, tk)

	pr := &t.last
	pr.Elapsed, pr.Total, pr.Warmup, pr.Tick, pr.Final = elapsed, r.s.Total, elapsed < r.s.Warmup, tk, t.final
	pr.Offered, pr.Sent, pr.Dropped, pr.Starved = tot.Offered, tot.Sent, tot.Dropped, tot.Starved
	pr.Completed += tk.Completed
	pr.OK += tk.OK
	pr.Errors += tk.Errors
	pr.Status429 += tk.Status429
	pr.Inflight = tk.Inflight
	if r.o.Progress != nil {
		r.o.Progress(*pr)
	}
}
