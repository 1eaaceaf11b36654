package traffic

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/actors"
)

// FollowRegistration is a Follow the flood sent, to be recorded as pending
// in the crowd's follow graph, so that the SUT's Accept finds it. Its JSON
// is the body of the admin API's POST /api/following.
type FollowRegistration struct {
	Local    string `json:"local"`     // the crowd actor that follows
	Remote   string `json:"remote"`    // the persona's actor id
	FollowID string `json:"follow_id"` // the Follow's id
}

// RegistrarOptions configures a Registrar.
type RegistrarOptions struct {
	// Queue bounds the registrations waiting; beyond it they are dropped
	// (and counted failed) rather than slow the sends. Default 10000.
	Queue int
	// Workers register concurrently; default 4.
	Workers int
	// Timeout bounds one registration; default 10 s.
	Timeout time.Duration
}

// RegistrarStats counts what a Registrar did.
type RegistrarStats struct {
	Registered int64 // recorded by the crowd
	Failed     int64 // refused, failed, or dropped from a full queue
	FirstError string
}

// Registrar records the flood's Follows in the crowd's follow graph off
// the send path: Add only queues, and workers call the register function
// (GraphRegister when the world runs in-process, AdminRegister when a
// running crowd is driven through its admin API).
type Registrar struct {
	register func(context.Context, FollowRegistration) error
	timeout  time.Duration
	ch       chan FollowRegistration
	wg       sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc

	closeMu sync.RWMutex // Add holds it shared, Close exclusively: no send on a closed channel
	closed  bool

	ok, failed atomic.Int64
	mu         sync.Mutex
	firstErr   string
}

// NewRegistrar starts the workers of a Registrar calling register.
func NewRegistrar(register func(context.Context, FollowRegistration) error, o RegistrarOptions) *Registrar {
	if o.Queue <= 0 {
		o.Queue = 10000
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	r := &Registrar{register: register, timeout: o.Timeout, ch: make(chan FollowRegistration, o.Queue)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for range o.Workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for f := range r.ch {
				r.do(f)
			}
		}()
	}
	return r
}

func (r *Registrar) do(f FollowRegistration) {
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	if err := r.register(ctx, f); err != nil {
		r.fail(fmt.Errorf("register %s: %w", f.FollowID, err))
		return
	}
	r.ok.Add(1)
}

func (r *Registrar) fail(err error) {
	r.failed.Add(1)
	r.mu.Lock()
	if r.firstErr == "" {
		r.firstErr = err.Error()
	}
	r.mu.Unlock()
}

// Add queues f without ever blocking: with the queue full, f is dropped
// and counted failed. Add after Close is a failure too.
func (r *Registrar) Add(f FollowRegistration) {
	r.closeMu.RLock()
	defer r.closeMu.RUnlock()
	if r.closed {
		r.fail(fmt.Errorf("register %s: registrar closed", f.FollowID))
		return
	}
	select {
	case r.ch <- f:
	default:
		r.fail(fmt.Errorf("register %s: queue full, dropped", f.FollowID))
	}
}

// Close stops taking registrations and waits for the queued ones until ctx
// is done (those left then are abandoned, and counted failed). It may be
// called more than once.
func (r *Registrar) Close(ctx context.Context) RegistrarStats {
	r.closeMu.Lock()
	if !r.closed {
		r.closed = true
		close(r.ch)
	}
	r.closeMu.Unlock()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		r.cancel()
		<-done
	}
	r.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	return RegistrarStats{Registered: r.ok.Load(), Failed: r.failed.Load(), FirstError: r.firstErr}
}

// GraphRegister registers Follows directly in a follow graph (the world
// runs in this process).
func GraphRegister(g *actors.Graph) func(context.Context, FollowRegistration) error {
	return func(_ context.Context, f FollowRegistration) error {
		return g.AddFollowing(f.Local, f.Remote, f.FollowID)
	}
}
