package traffic

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crowdfed/crowd/actors"
)

// Deletions records in the crowd's state the objects a run's Deletes
// delete, from the moment each Delete is drafted: a real server deletes
// first and federates after, and a SUT may fetch the object (the note, the
// account) while it handles the Delete, so it must see 410 by then. The
// drafts' marks go to the sink in group commits (one call in flight, the
// next batch gathering meanwhile), so a pipeline or presign run, which
// drafts ahead, pays no round trip per Delete on its send path; the engine
// holds a Delete whose mark is not recorded yet until it is (see
// Ticket.Hold). A Delete drafted and never sent (dropped, or left in a
// source when the run ended) has its deletion taken back (a Restored
// change): the crowd's state holds exactly the deletions of the Deletes
// the run sent, whatever their answer. Safe for concurrent use.
type Deletions struct {
	sink    ChangeSink
	timeout time.Duration

	mu      sync.Mutex
	pending []actors.Change
	batch   *markBatch // the batch pending joins
	closed  bool
	stats   DeletionStats

	kick chan struct{} // cap 1: the worker has pending items to record
	done chan struct{} // closed when the worker returns
}

// markBatch is one group commit; done closes once its sink call returned.
type markBatch struct{ done chan struct{} }

// DeletionStats is what Deletions recorded.
type DeletionStats struct {
	// Marked is the objects marked deleted as their Delete was drafted.
	Marked int64
	// Restored is those of them whose Delete was never sent: they stand again.
	Restored int64
	// Failed is the marks and restorations the sink refused or never got
	// (the crowd's state does not hold them); FirstError says why.
	Failed     int64
	FirstError string
}

// NewDeletions starts the worker of a Deletions feeding sink, each call
// bounded by timeout (0: 10 s).
func NewDeletions(sink ChangeSink, timeout time.Duration) *Deletions {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	d := &Deletions{sink: sink, timeout: timeout, batch: &markBatch{done: make(chan struct{})},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	go d.work()
	return d
}

// mark queues the deletion it and returns what closes once it was
// recorded (or the sink failed): the Delete may leave then.
func (d *Deletions) mark(it actors.Change) <-chan struct{} {
	return d.queue(it, func(s *DeletionStats) { s.Marked++ })
}

// restore queues taking back the deletion of the object id, whose Delete
// was drafted and never sent.
func (d *Deletions) restore(id string) {
	d.queue(actors.Change{ID: id, Restored: true}, func(s *DeletionStats) { s.Restored++ })
}

func (d *Deletions) queue(it actors.Change, count func(*DeletionStats)) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.failLocked(1, fmt.Errorf("deletion of %s queued after the run's deletions closed", it.ID))
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	count(&d.stats)
	d.pending = append(d.pending, it)
	select {
	case d.kick <- struct{}{}:
	default: // the worker is told already
	}
	return d.batch.done
}

func (d *Deletions) failLocked(n int64, err error) {
	d.stats.Failed += n
	if d.stats.FirstError == "" {
		d.stats.FirstError = err.Error()
	}
}

// work records each gathered batch, one at a time, in the order queued
// (a restoration after its mark), until Close.
func (d *Deletions) work() {
	defer close(d.done)
	for range d.kick {
		d.mu.Lock()
		items, b := d.pending, d.batch
		d.pending, d.batch = nil, &markBatch{done: make(chan struct{})}
		closed := d.closed
		d.mu.Unlock()
		if len(items) > 0 {
			d.record(items)
		}
		close(b.done)
		if closed {
			return
		}
	}
}

// record calls the sink with items; a sink that carries them over a wire
// splits them to its limit (adminapi.Client does).
func (d *Deletions) record(items []actors.Change) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	err := d.sink(ctx, items)
	cancel()
	if err != nil {
		d.mu.Lock()
		d.failLocked(int64(len(items)), fmt.Errorf("deletions: %w", err))
		d.mu.Unlock()
	}
}

// Close records what is pending (the restorations of the Deletes a
// source discarded, which it must have closed first), stops the worker and
// returns the stats; ctx bounds the wait.
func (d *Deletions) Close(ctx context.Context) DeletionStats {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
	d.mu.Unlock()
	select {
	case <-d.done:
	case <-ctx.Done():
		d.mu.Lock()
		d.failLocked(int64(len(d.pending)), fmt.Errorf("deletions: %w before the last batch was recorded", ctx.Err()))
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// ChangeSink takes a batch of the edits and deletions a run made into the
// crowd's state: the crowd's admin API for a crowd serving elsewhere
// (adapted by loadrun), WorldChanges for the world in this process.
type ChangeSink func(context.Context, []actors.Change) error

// WorldChanges is the sink of a world that runs in this process.
func WorldChanges(w *actors.World) ChangeSink {
	return func(_ context.Context, items []actors.Change) error { return w.RecordChanges(items) }
}
