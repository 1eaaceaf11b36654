package traffic

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood/record"
)

// OutboxSink takes a batch of Creates the flood sent, in the order they
// left, into the crowd's outboxes: the crowd's admin API for a crowd
// serving elsewhere (adapted by loadrun), WorldOutbox for the world in this
// process.
type OutboxSink func(context.Context, []actors.SentNote) error

// WorldOutbox is the sink of a world that runs in this process
// (--standalone): the world's outboxes take the items directly.
func WorldOutbox(w *actors.World) OutboxSink {
	return func(_ context.Context, items []actors.SentNote) error { return w.RecordSent(items) }
}

// OutboxFeedOptions configures an OutboxFeed; the zero value is the default.
type OutboxFeedOptions struct {
	// Batch is how many items one sink call carries at most; default 1000.
	Batch int
	// Queue bounds the full batches waiting for the sink; beyond it a
	// batch is dropped (and counted failed) rather than slow the sends.
	// Default 64.
	Queue int
	// Every is the longest a sent Create waits for its batch to fill
	// before it is handed to the sink anyway; default 1 s.
	Every time.Duration
	// Timeout bounds one sink call; default 10 s.
	Timeout time.Duration
	// What names the sink in errors; default "outbox".
	What string
}

func (o OutboxFeedOptions) what() string {
	if o.What == "" {
		return "outbox"
	}
	return o.What
}

// OutboxFeedStats counts what an OutboxFeed did.
type OutboxFeedStats struct {
	Fed        int64 // items the sink took
	Failed     int64 // items refused, failed, or dropped from a full queue
	FirstError string
}

// OutboxFeed is a Settle hook that puts in the crowd's outboxes
// the Creates a run sent: a Create counts once it left (Delivery.Sent),
// whatever the target answered; a draft dropped or never sent is never
// fed. Settled only appends to a batch; one worker hands full batches (or,
// every Every, what there is) to the sink in the order the sends settled,
// so the outbox lists them newest first.
type OutboxFeed = Feed[actors.SentNote]

// Feed is a Settle hook that hands the items pick finds in the
// settled sends to a sink, in batches, off the send path (see OutboxFeed,
// ChangeFeed).
type Feed[T any] struct {
	sink    func(context.Context, []T) error
	pick    func(*Ticket, record.Outcome) (T, bool)
	opts    OutboxFeedOptions
	ch      chan []T
	done    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	pending []T
	closed  bool
	ticker  *time.Ticker

	fed, failed atomic.Int64
	errMu       sync.Mutex
	firstErr    string
}

// NewOutboxFeed starts the worker of an OutboxFeed feeding sink.
func NewOutboxFeed(sink OutboxSink, o OutboxFeedOptions) *OutboxFeed {
	return newFeed(sink, o, func(t *Ticket, d record.Outcome) (actors.SentNote, bool) {
		if t.Outbox == nil || !d.Sent {
			return actors.SentNote{}, false
		}
		return *t.Outbox, true
	})
}

// newFeed starts the worker of a Feed.
func newFeed[T any](sink func(context.Context, []T) error, o OutboxFeedOptions, pick func(*Ticket, record.Outcome) (T, bool)) *Feed[T] {
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	if o.Queue <= 0 {
		o.Queue = 64
	}
	if o.Every <= 0 {
		o.Every = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	f := &Feed[T]{sink: sink, pick: pick, opts: o, ch: make(chan []T, o.Queue), done: make(chan struct{}),
		ticker: time.NewTicker(o.Every)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	go f.work()
	return f
}

// Settled is the feed's Settle hook; it never blocks on the sink.
func (f *Feed[T]) Settled(t *Ticket, d record.Outcome) {
	it, ok := f.pick(t, d)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		f.fail(1, fmt.Errorf("feed closed before %s %s was fed", t.req.Type, t.req.URL))
		return
	}
	if f.pending == nil {
		f.pending = make([]T, 0, f.opts.Batch)
	}
	f.pending = append(f.pending, it)
	if len(f.pending) >= f.opts.Batch {
		f.handOff()
	}
}

// handOff queues the pending batch without blocking. The caller holds f.mu.
func (f *Feed[T]) handOff() {
	if len(f.pending) == 0 {
		return
	}
	select {
	case f.ch <- f.pending:
	default:
		f.fail(int64(len(f.pending)), fmt.Errorf("feed: queue full, %d items dropped", len(f.pending)))
	}
	f.pending = nil
}

// work calls the sink with each batch, and hands off a partial batch every
// Every so that a slow run's Creates reach the outbox too.
func (f *Feed[T]) work() {
	defer close(f.done)
	for {
		select {
		case batch, ok := <-f.ch:
			if !ok {
				return
			}
			f.feed(batch)
		case <-f.ticker.C:
			f.mu.Lock()
			if !f.closed {
				f.handOff()
			}
			f.mu.Unlock()
		}
	}
}

func (f *Feed[T]) feed(batch []T) {
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.Timeout)
	defer cancel()
	if err := f.sink(ctx, batch); err != nil {
		f.fail(int64(len(batch)), fmt.Errorf("%s: %w", f.opts.what(), err))
		return
	}
	f.fed.Add(int64(len(batch)))
}

func (f *Feed[T]) fail(n int64, err error) {
	f.failed.Add(n)
	f.errMu.Lock()
	if f.firstErr == "" {
		f.firstErr = err.Error()
	}
	f.errMu.Unlock()
}

// Close hands off what is pending, stops taking items and waits for the
// sink until ctx is done (batches left then are abandoned, and counted
// failed). It may be called more than once.
func (f *Feed[T]) Close(ctx context.Context) OutboxFeedStats {
	f.mu.Lock()
	first := !f.closed
	last := f.pending
	if first {
		f.closed, f.pending = true, nil
		f.ticker.Stop()
	}
	f.mu.Unlock()
	if first {
		// The last batch waits for room (not under f.mu: the worker's
		// ticker takes it); no one else sends once closed is set.
		if len(last) > 0 {
			select {
			case f.ch <- last:
			case <-ctx.Done():
				f.fail(int64(len(last)), fmt.Errorf("feed: %d items abandoned at the end: %w", len(last), ctx.Err()))
			}
		}
		close(f.ch)
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		f.cancel()
		<-f.done
	}
	f.cancel()
	f.errMu.Lock()
	defer f.errMu.Unlock()
	return OutboxFeedStats{Fed: f.fed.Load(), Failed: f.failed.Load(), FirstError: f.firstErr}
}
