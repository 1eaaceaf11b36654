package loadrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/livemetrics"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
)

// metricsAddr checks --metrics-addr: host:port, a missing host meaning
// loopback (the metrics are the operator's, not the SUT's to read).
func (c Config) metricsAddr() (string, error) {
	if c.Metrics.Linger < 0 {
		return "", fmt.Errorf("--metrics-linger %v is negative", c.Metrics.Linger)
	}
	if c.Metrics.Addr == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(c.Metrics.Addr)
	if err != nil {
		return "", fmt.Errorf("--metrics-addr %q: want host:port (or :port for loopback): %v", c.Metrics.Addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("--metrics-addr %q: the port is not a number from 0 to 65535", c.Metrics.Addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// live is a run's live metrics: served on --metrics-addr when set, and
// pushed once a second to the crowd's admin API when there is one (the
// serve shows them on its admin page and its /metrics). Pushes happen on
// their own goroutine, the latest state replacing one not yet sent, so a
// slow serve never holds the engine's tick.
type live struct {
	m      *livemetrics.Metrics
	run    adminapi.FloodRun
	log    *zap.Logger
	admin  *adminapi.Client
	srv    *http.Server
	addr   string          // where the metrics are served ("" none)
	linger time.Duration   // how long they stay served after the run
	ctx    context.Context // the run's: an interruption cuts the linger short

	mu       sync.Mutex
	rate     float64
	fetchWin string // the current run's fetch-back window in the crowd pushed to ("" none)
	verdict  *adminapi.FloodVerdict
	pending  *adminapi.FloodLive // the latest push not yet taken
	last     *adminapi.FloodLive // the latest push queued
	wake     chan struct{}
	done     chan struct{}
	warned   bool
}

// startLive starts the run's live metrics; stop serves and pushes the
// last state (up to a few seconds), then closes the listener.
func (r *runner) startLive(ctx context.Context) (*live, error) {
	c := LiveMetricsConfig{Run: adminapi.FloodRun{Label: r.c.Label, Scenario: r.p.scenarioName(), Seed: strconv.FormatUint(r.seed, 10), Shard: r.env.Shard},
		Admin: r.env.Admin, Addr: r.p.metricsAddr, Linger: r.c.Metrics.Linger, Log: r.log}
	if pl, ok := r.shared.(*traffic.Pipeline); ok {
		c.Buffer = pl
	}
	l, err := newLive(ctx, c)
	if err == nil && l.addr != "" {
		r.c.Show.note(r.c.Stderr, "metrics: http://%s/metrics", l.addr)
	}
	return l, err
}

// newLive starts live metrics as c says: the listener, the push loop.
func newLive(ctx context.Context, c LiveMetricsConfig) (*live, error) {
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	l := &live{m: livemetrics.New(livemetrics.Options{Labels: livemetrics.Labels(c.Run), Buffer: c.Buffer}), run: c.Run, log: c.Log, admin: c.Admin, linger: c.Linger, ctx: ctx,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if c.Addr != "" {
		ln, err := net.Listen("tcp", c.Addr)
		if err != nil {
			return nil, fmt.Errorf("--metrics-addr %s: %w", c.Addr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", l.m.Handler())
		l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		l.addr = ln.Addr().String()
		go l.srv.Serve(ln)
		if c.Stderr != nil {
			fmt.Fprintf(c.Stderr, "metrics: http://%s/metrics\n", l.addr)
		}
	}
	go l.pushLoop()
	return l, nil
}

// watch readies the live metrics for a run at rate: the collector that
// hears its every send, and its once-a-second progress (after tick, the
// live line).
func (l *live) watch(rate float64, tick func(record.Progress)) (flood.Collector, func(record.Progress)) {
	l.m.SetRate(rate)
	l.mu.Lock()
	l.rate, l.verdict = rate, nil
	l.mu.Unlock()
	return l.m, func(p record.Progress) {
		tick(p)
		l.m.Progress(p)
		l.queue(p)
	}
}

// fetchback names the run's fetch-back window (nil: none), so the serve
// shows its counts beside the pushed state.
func (l *live) fetchback(w *fetchbackWindow) {
	id := ""
	if w != nil {
		id = w.id
	}
	l.mu.Lock()
	l.fetchWin = id
	l.mu.Unlock()
}

// checkpoint takes the bottleneck verdict of the run so far.
func (l *live) checkpoint(rec *record.Record, at time.Duration) {
	d := rec.Bottleneck
	v := &adminapi.FloodVerdict{Generator: d.Generator, Reasons: d.Reasons, Notes: d.Notes, AtElapsed: at.Seconds()}
	l.mu.Lock()
	l.verdict = v
	l.mu.Unlock()
}

// queue makes p the next push, replacing one not yet sent.
func (l *live) queue(p record.Progress) {
	if l.admin == nil {
		return
	}
	metrics, err := l.m.Encode()
	if err != nil {
		l.log.Warn("encoding the live metrics", zap.Error(err))
		return
	}
	t := p.Tick
	push := &adminapi.FloodLive{
		FloodState: adminapi.FloodState{Run: l.run, Elapsed: p.Elapsed.Seconds(), Total: p.Total.Seconds(),
			Warmup: p.Warmup, Final: p.Final, Classes: l.m.Classes(),
			Totals: adminapi.FloodTotals{Offered: p.Offered, Sent: p.Sent, Dropped: p.Dropped, Starved: p.Starved,
				Completed: p.Completed, OK: p.OK, Errors: p.Errors, Status429: p.Status429}},
		Tick: adminapi.FloodTick{Elapsed: p.Elapsed.Seconds(), Span: t.Span, Warmup: t.Warmup, Offered: t.Offered, Sent: t.Sent,
			Dropped: t.Dropped, Starved: t.Starved, Completed: t.Completed, OK: t.OK, Errors: t.Errors, Status429: t.Status429,
			Inflight: t.Inflight, LatencyP50Us: t.LatencyP50, LatencyP99Us: t.LatencyP99, LatencyMaxUs: t.LatencyMax,
			LatenessP50Us: t.LatenessP50, LatenessP99Us: t.LatenessP99},
		Metrics: metrics,
	}
	l.mu.Lock()
	push.Rate, push.Bottleneck, push.FetchbackWindow = l.rate, l.verdict, l.fetchWin
	l.pending, l.last = push, push
	l.mu.Unlock()
	l.poke()
}

// final pushes the run's last state again with the verdict of its whole
// record (the checkpoints' verdicts are of the run so far).
func (l *live) final(rec *record.Record, at time.Duration) {
	if l.admin == nil {
		return
	}
	l.checkpoint(rec, at)
	l.mu.Lock()
	if l.last != nil {
		p := *l.last
		p.Bottleneck = l.verdict
		l.pending = &p
	}
	l.mu.Unlock()
	l.poke()
}

// poke wakes the push loop.
func (l *live) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// pushLoop sends the pending push whenever there is one, until stop.
func (l *live) pushLoop() {
	defer close(l.done)
	for range l.wake {
		l.mu.Lock()
		p := l.pending
		l.pending = nil
		l.mu.Unlock()
		if p == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := l.admin.PushFloodLive(ctx, *p)
		cancel()
		if err != nil && !l.warned {
			// Once: a crowd too old for the route, or one gone, must not
			// fill the log every second.
			l.warned = true
			l.log.Warn("pushing the live state to the crowd's admin API", zap.Error(err))
		}
	}
}

// stop sends what is pending and closes the metrics listener after the
// linger.
func (l *live) stop() {
	close(l.wake)
	select {
	case <-l.done:
	case <-time.After(6 * time.Second):
	}
	if l.srv != nil {
		select {
		case <-time.After(l.linger):
		case <-l.ctx.Done():
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := l.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			l.log.Debug("closing the metrics listener", zap.Error(err))
		}
	}
}

// LiveMetrics is a flood's live metrics wired as Run wires them for
// --metrics-addr and an attached serve: the engine's Watch on every send,
// and each tick the metrics' Progress, their encoding, the status classes
// and the push built and sent to the serve. It is for a flood run outside
// Run: the bench prices the live metrics with it.
type LiveMetrics struct{ l *live }

// LiveMetricsConfig says what a run's live metrics label and where they go;
// Run's and StartLiveMetrics's alike.
type LiveMetricsConfig struct {
	Run    adminapi.FloodRun
	Buffer livemetrics.Buffer // the signing pipeline's buffer (nil: none)
	Admin  *adminapi.Client   // the serve pushed to once a second (nil: none)
	Addr   string             // host:port to serve /metrics on ("": none)
	Linger time.Duration      // how long /metrics stays served after the run
	Log    *zap.Logger        // nil: none
	Stderr io.Writer          // where the address served is told (nil: nowhere)
}

// StartLiveMetrics starts serving and pushing as c says; Stop ends both.
func StartLiveMetrics(ctx context.Context, c LiveMetricsConfig) (*LiveMetrics, error) {
	l, err := newLive(ctx, c)
	if err != nil {
		return nil, err
	}
	return &LiveMetrics{l: l}, nil
}

// Watch readies the metrics for a run at rate: the collector to feed
// (beside the run's record.Recorder) and the progress to give that
// Recorder, which calls tick (nil: none) first.
func (m *LiveMetrics) Watch(rate float64, tick func(record.Progress)) (flood.Collector, func(record.Progress)) {
	if tick == nil {
		tick = func(record.Progress) {}
	}
	return m.l.watch(rate, tick)
}

// Addr is where /metrics is served ("" when it is not).
func (m *LiveMetrics) Addr() string { return m.l.addr }

// Stop sends the pending push and closes the listener.
func (m *LiveMetrics) Stop() { m.l.stop() }
