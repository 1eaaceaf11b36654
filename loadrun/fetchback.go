package loadrun

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/pasture/fetchback"
)

// FetchbackConfig says whether and how a run counts what the SUT fetches
// back from the crowd's origins (the record's fetchback section).
type FetchbackConfig struct {
	// Off leaves the section out (--fetchback=false).
	Off bool
	// Grace is how long the window keeps counting after the run's last
	// answer (--fetchback-grace): a SUT fetches some documents from a queue,
	// after it answered the delivery.
	Grace time.Duration
}

// validate says what is wrong with f, naming the flag.
func (f FetchbackConfig) validate() error {
	if f.Grace < 0 || f.Grace > 10*time.Minute {
		return fmt.Errorf("--fetchback-grace %v: want 0 to 10m", f.Grace)
	}
	return nil
}

// FetchbackCounter opens, ends and closes a run's fetch-back window in
// the crowd that serves the origins: through its admin API (attached), or
// directly (the in-process crowd of a standalone run).
type FetchbackCounter interface {
	Open(ctx context.Context, label string) (id string, err error)
	End(ctx context.Context, id string) error
	Close(ctx context.Context, id string) (adminapi.FetchbackTally, error)
}

// adminFetchbacks counts in the crowd at the other end of an admin API.
type adminFetchbacks struct{ c *adminapi.Client }

func (a adminFetchbacks) Open(ctx context.Context, label string) (string, error) {
	w, err := a.c.OpenFetchback(ctx, label)
	return w.ID, err
}

func (a adminFetchbacks) End(ctx context.Context, id string) error {
	_, err := a.c.EndFetchback(ctx, id)
	return err
}

func (a adminFetchbacks) Close(ctx context.Context, id string) (adminapi.FetchbackTally, error) {
	return a.c.CloseFetchback(ctx, id)
}

// localFetchbacks counts in the crowd of this process.
type localFetchbacks struct{ f *fetchback.Windows }

func (l localFetchbacks) Open(_ context.Context, label string) (string, error) {
	w, err := l.f.Open(label)
	return w.ID, err
}

func (l localFetchbacks) End(_ context.Context, id string) error {
	if _, ok := l.f.End(id); !ok {
		return fmt.Errorf("fetch-back window %s is not open", id)
	}
	return nil
}

func (l localFetchbacks) Close(_ context.Context, id string) (adminapi.FetchbackTally, error) {
	t, ok := l.f.Close(id)
	if !ok {
		return t, fmt.Errorf("fetch-back window %s is not open", id)
	}
	return t, nil
}

// fetchbackWindow is one run's open window; a nil one counts nothing.
type fetchbackWindow struct {
	counter FetchbackCounter
	id      string
	grace   time.Duration
	log     *zap.Logger
}

// openFetchback opens the run's window, or says why it cannot and returns
// nil: a crowd without the routes (an older one) still floods.
func (r *runner) openFetchback(ctx context.Context, label string) *fetchbackWindow {
	if r.c.Fetchback.Off || r.env.Fetchbacks == nil {
		return nil
	}
	id, err := r.env.Fetchbacks.Open(ctx, label)
	if err != nil {
		r.log.Warn("the crowd cannot count what the SUT fetches back: the record has no fetchback section", zap.Error(err))
		return nil
	}
	return &fetchbackWindow{counter: r.env.Fetchbacks, id: id, grace: r.c.Fetchback.Grace, log: r.log}
}

// finish ends the window at the run's end, waits the grace (cut short when
// ctx ends), closes it and puts its tally in rec.
func (w *fetchbackWindow) finish(ctx context.Context, rec *record.Record) {
	if w == nil {
		return
	}
	// The window is ended and closed even when ctx ended (an interrupted
	// run), or it would stay open in the crowd; each call has its own
	// bound, so a grace of any length leaves the close its whole bound.
	if err := w.call(ctx, func(cctx context.Context) error { return w.counter.End(cctx, w.id) }); err != nil {
		w.log.Warn("ending the fetch-back window", zap.Error(err))
	}
	grace := time.NewTimer(w.grace)
	select {
	case <-grace.C:
	case <-ctx.Done():
		grace.Stop()
	}
	var t adminapi.FetchbackTally
	err := w.call(ctx, func(cctx context.Context) (err error) {
		t, err = w.counter.Close(cctx, w.id)
		return err
	})
	if err != nil {
		w.log.Warn("reading the fetch-back window: the record has no fetchback section", zap.Error(err))
		return
	}
	if rec == nil {
		return
	}
	kinds := make(map[string]record.FetchKindTally, len(t.Kinds))
	for name, k := range t.Kinds {
		kinds[name] = record.FetchKindTally{Fetches: k.Fetches, AfterEnd: k.AfterEnd, Signed: k.Signed, Status: k.Status, LatencyHDR: k.Latency}
	}
	fb, err := record.NewFetchback(kinds, t.Objects, t.Credits, w.grace)
	if err != nil {
		w.log.Warn("the crowd's fetch-back tally: the record has no fetchback section", zap.Error(err))
		return
	}
	rec.SetFetchback(fb)
}

// callBound bounds one call to the crowd's fetch-back routes.
const callBound = 10 * time.Second

// call runs f with a context of its own bound, not cancelled with ctx.
func (w *fetchbackWindow) call(ctx context.Context, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callBound)
	defer cancel()
	return f(cctx)
}
