// The sender: the transport the flood sends with, and the workers that send
// one prepared request at a time and time it.

package flood

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/h1"
	"github.com/crowdfed/crowd/internal/originaddr"
)

// Defaults for a Plan's zero fields.
const (
	DefaultMaxInflight = 1024
	DefaultTimeout     = 10 * time.Second
)

// idleConnTimeout closes the flood's idle connections before the servers
// most likely to close them do: Node's http server (Fedify, Misskey) and
// Apache close a connection idle for 5 s, and a POST sent on a connection
// the server is closing at that moment fails without a retry (net/http
// replays only idempotent requests), which the run would count as a
// connection error of the SUT's.
const idleConnTimeout = 4 * time.Second

// connectTimeout bounds a dial, and is the least a TLS handshake gets.
const connectTimeout = 5 * time.Second

// NewTransport returns an HTTP/1.1 transport with a keep-alive pool big
// enough for maxInflight concurrent sends, no proxy, no compression, and
// tlsConfig for https targets (nil = system roots). The dial is bounded by
// 5 s; a TLS handshake may take as long as a whole send, timeout (the
// run's Plan.Timeout; ≤ 0 is DefaultTimeout), and at least those 5 s: an
// overloaded SUT slow to handshake is what a run measures, and a user who
// allowed a minute meant the handshake too.
//
// It offers only http/1.1 in the TLS handshake, whatever tlsConfig's
// NextProtos say (it uses a copy): a transport with HTTP/2 enabled that
// shared the same tls.Config has added "h2" to it, and a server that
// chose h2 from that offer (GoToSocial does) would then answer this
// HTTP/1.1 transport with HTTP/2 frames, failing every send.
func NewTransport(maxInflight int, timeout time.Duration, tlsConfig *tls.Config) *http.Transport {
	if maxInflight <= 0 {
		maxInflight = DefaultMaxInflight
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	} else {
		tlsConfig = tlsConfig.Clone()
	}
	tlsConfig.NextProtos = []string{"http/1.1"}
	d := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:         d.DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: max(connectTimeout, timeout),
		MaxIdleConns:        maxInflight,
		MaxIdleConnsPerHost: maxInflight,
		IdleConnTimeout:     idleConnTimeout,
		DisableCompression:  true,
	}
}

// job is one send handed from the dispatcher to a worker: to make, or,
// when direct, made already by the dispatcher (directWriter), its answer
// to read.
type job struct {
	prep     *Prepared
	typ      string
	intended time.Duration
	measured bool
	starved  bool

	direct   bool          // the dispatcher wrote the first attempt
	written  h1.Written    // on which connection (none when writeErr)
	writeErr error         // the write's failure
	sentAt   time.Duration // when the dispatcher took the connection, from the run's start (the send's bound runs from it)

	resume *resumed // the dispatcher read the first answer, and a Fallback asks for more
}

// resumed is where the dispatcher left a send whose first answer it read
// (answerLoop) and whose Fallback asked for another attempt, which may
// wait on the network and so is a worker's: the attempt to make next, its
// header, and the send's Delivery so far.
type resumed struct {
	n      int
	header http.Header
	d      record.Delivery
}

// crew is what the workers of a run share: the run's context, clock,
// transport and collector, the job queue and the count of sends in flight.
// The dispatchers start workers as the concurrency grows (grow).
type crew struct {
	ctx       context.Context
	c         Collector
	transport http.RoundTripper
	timeout   time.Duration
	start     time.Time

	jobs     chan job
	inflight atomic.Int64
	wg       sync.WaitGroup

	// The workers started on goroutines of their own, started by grow
	// under growing; their shards follow the dispatchers' (one each).
	growing     sync.Mutex
	nworkers    atomic.Int64
	dispatchers int // how many dispatchers run the schedule: shards 0 to dispatchers − 1 are their loops'

	written directTransport // the transport the dispatchers write on; nil when it takes no writes
	awaited atomic.Int64    // the sends whose answers the dispatchers' loops await
	sockets watchers        // which loop's epoll watches each socket

	// halt ends the run for err (the engine's stop): a send that shows
	// the crowd itself cannot send (notTheSUTs).
	halt func(err error)
}

// directTransport is a transport on whose resting connections one
// goroutine may write a request and another read its answer: h1's.
type directTransport interface {
	Write(req *http.Request, lane int, deadline time.Time) (w h1.Written, ok bool, err error)
	WriteHead(h *h1.Head, body []byte, lane int, deadline time.Time) (w h1.Written, ok bool, err error)
	Read(ctx context.Context, w h1.Written) (*http.Response, error)
	ReadArrived(w h1.Written, got []byte, keep func(name []byte) bool) (h1.Answer, error)
}

// directWriter is the dispatcher's side of a direct send: at the send's
// intended time the dispatcher writes the request on a resting connection
// itself, so that the send leaves when it wakes, and the worker it hands
// the job to only reads the answer. Handed to a worker first, a send waited
// for the worker to be woken and scheduled, which was most of its lateness:
// BenchmarkEngine/loopback-fast, old and new alternated three times, gave
// late-p50-µs 71-99 → 41-44 at 2 000/s and 45-54 → 23-29 at 10 000/s, and
// at 20 000/s, past what the in-process sink keeps up with, 4-5 % of the
// sends dropped where 7-9 % had. Its request and body reader are reused:
// Write is done with them when it returns.
type directWriter struct {
	t      directTransport
	lane   int // the dispatcher's: it takes the connections it wrote on before, whose sockets its loop's epoll watches
	req    http.Request
	body   bytes.Reader
	bodyRC io.ReadCloser
}

// newDirectWriter is dispatcher lane's writer for transport tr, nil when
// tr cannot take its writes: not a directTransport, or one that does not
// bound a send by the worker's Aborter and deadline.
func newDirectWriter(tr http.RoundTripper, lane int) *directWriter {
	dt, ok := tr.(directTransport)
	if !ok {
		return nil
	}
	if a, ok := tr.(aborterTransport); !ok || !a.HonoursAborter() {
		return nil
	}
	dw := &directWriter{t: dt, lane: lane}
	dw.bodyRC = io.NopCloser(&dw.body)
	return dw
}

// directMaxBody bounds the body of a request the dispatcher writes. A
// request written on a resting connection goes into an empty socket
// buffer, which holds at least 16 KiB (Linux's default tcp_wmem), so the
// write does not wait for the server to read; a larger one might, and the
// dispatcher would hold every later send while it did.
const directMaxBody = 8 << 10

// leavesAsSigned reports whether p's first attempt may be written by the
// dispatcher: small enough to be written without waiting (directMaxBody),
// and it leaves now and as signed (see AsSigned).
func leavesAsSigned(p *Prepared) bool {
	if len(p.Body) > directMaxBody {
		return false
	}
	if as, ok := p.Token.(AsSigned); ok {
		return as.FirstAsSigned()
	}
	_, holder := p.Token.(Holder)
	_, fallback := p.Token.(Fallback)
	return !holder && !fallback
}

// write tries to write j's request on a resting connection, bounded by the
// run's per-send timeout, and marks j direct when it did (or tried and
// failed); with no connection resting, j is left for its worker, which
// dials.
func (dw *directWriter) write(e *crew, j *job) {
	p := j.prep
	at := time.Since(e.start)
	deadline := e.start.Add(at + e.timeout)
	var w h1.Written
	var ok bool
	var err error
	if p.head != nil {
		w, ok, err = dw.t.WriteHead(p.head, p.Body, dw.lane, deadline)
	} else {
		r := &dw.req
		r.Method, r.URL, r.Header, r.Host = p.Method, p.URL, p.Header, p.Host
		r.Body, r.ContentLength = nil, 0
		if len(p.Body) > 0 {
			dw.body.Reset(p.Body)
			r.Body, r.ContentLength = dw.bodyRC, int64(len(p.Body))
		}
		w, ok, err = dw.t.Write(r, dw.lane, deadline)
		*r = http.Request{}
		dw.body.Reset(nil)
	}
	if ok {
		j.direct, j.written, j.writeErr, j.sentAt = true, w, err, at
	}
}

// worker sends jobs one at a time, with its own reusable request template,
// trace hooks and Delivery, so the hot path takes no lock shared with other
// workers except the job channel itself (its index picks its collector's
// shard).
type worker struct {
	e       *crew
	index   int
	ctx     context.Context // the run's context with this worker's trace hooks (and Aborter)
	abort   *h1.Aborter     // with the fast client: ends the worker's send when the run ends
	base    http.Request
	gotConn atomic.Int64 // offset when the connection was obtained; -1 = not yet

	// inline: the worker is the dispatcher's own (answerLoop), which makes
	// no attempt that may wait: a second one is left to a worker (resumed).
	// arrived is when the answer it reads was whole (the kernel's stamp
	// of its last bytes, or when the loop's wait returned with it: see
	// answeredAt), and whole that answer's bytes, all arrived (h1's
	// ReadArrived reads it from them).
	inline  bool
	arrived time.Duration
	whole   []byte

	// With the fast client, what every send reuses (see sendContext and
	// request): h1 is done with a request's context and body once its
	// answer is read, and a worker makes one send at a time.
	deadline sendDeadline
	req      *http.Request // base with the deadline as its context
	body     bytes.Reader
	bodyRC   io.ReadCloser // body under NopCloser
}

// newWorker makes a worker whose Answered goes to shard index: 0, 1, …
// the dispatchers' own (answerLoop), then those grow runs on goroutines
// of their own.
func (e *crew) newWorker(index int) *worker {
	w := &worker{e: e, index: index}
	// The trace is attached once: a worker makes one send at a time, and
	// WithClientTrace per send would allocate (and compose with a caller's
	// trace again each time).
	w.ctx = httptrace.WithClientTrace(e.ctx, &httptrace.ClientTrace{GotConn: w.onGotConn})
	if a, ok := e.transport.(aborterTransport); ok && a.HonoursAborter() {
		w.abort = &h1.Aborter{}
		w.ctx = h1.WithAborter(w.ctx, w.abort)
		w.deadline.Context = w.ctx
		w.req = w.base.WithContext(&w.deadline)
		w.bodyRC = io.NopCloser(&w.body)
	}
	return w
}

// grow starts workers while more sends are in flight than the loops
// await and the workers take: the dispatchers call it, any of them, when
// they hand a send off.
func (e *crew) grow() {
	e.growing.Lock()
	defer e.growing.Unlock()
	for e.unawaited() > e.nworkers.Load() {
		e.startWorker()
	}
}

// startWorker starts one more worker, on a goroutine of its own. Under
// growing.
func (e *crew) startWorker() {
	w := e.newWorker(e.dispatchers + int(e.nworkers.Add(1)) - 1)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if w.abort != nil {
			// Registered once for all the worker's sends (see sendContext).
			stop := context.AfterFunc(e.ctx, w.abort.Abort)
			defer stop()
		}
		var d record.Delivery
		for j := range e.jobs {
			w.send(&j, &d)
			w.settle(&j, &d)
		}
	}()
}

// settle files j's send, its Delivery d made.
func (w *worker) settle(j *job, d *record.Delivery) {
	e := w.e
	e.c.Answered(w.index, d)
	e.c.Settled(j.prep.Token, record.Outcome{Sent: true, Aborted: d.Aborted, Class: d.Class, Status: d.Status, Delivery: d})
	e.inflight.Add(-1)
}

func (w *worker) onGotConn(httptrace.GotConnInfo) {
	w.gotConn.Store(int64(time.Since(w.e.start)))
}

// send makes one request and fills d, and reports whether it did: false
// only on the dispatcher's own worker (inline), which leaves j to a worker
// (j.resume set) when its Fallback asks for a second attempt. The actual
// send time is when the request got its connection (httptrace GotConn):
// waiting for a pooled connection is lateness, not service time. A
// RoundTripper that never reports GotConn is taken to send when it is
// called.
func (w *worker) send(j *job, d *record.Delivery) bool {
	e := w.e
	p := j.prep
	if j.resume != nil {
		*d = j.resume.d
	} else {
		*d = record.Delivery{Type: j.typ, Measured: j.measured, Starved: j.starved, Written: j.direct, Method: p.Method, URL: p.URL, Intended: j.intended,
			Class: record.ClassOther, SentBytes: int64(len(p.Body))}
		if w.inline {
			// No hand-off: the dispatcher took the send when it wrote it.
			d.Picked = j.sentAt
		} else {
			d.Picked = time.Since(e.start)
		}
	}
	deadline := time.Now().Add(e.timeout)
	if j.direct {
		// Sent by the dispatcher, bounded from then. A worker's Picked
		// stays its own: the hand-off is still the crowd's delay
		// (dispatch), though it now delays the reading of the answer, not
		// the send.
		deadline = e.start.Add(j.sentAt + e.timeout)
	}
	w.gotConn.Store(-1)

	ctx, cancel := w.sendContext(deadline)
	if h, ok := p.Token.(Holder); ok && !j.direct {
		if ready := h.Hold(); ready != nil {
			// Held until the crowd's state says what the request does (a
			// Delete's object gone); a drafted-ahead one has long been.
			// The wait has a timer of its own: the send's context may
			// have none (sendContext).
			// On the worker's context, not ctx: with the fast client ctx
			// is the worker's own, set again for its next send.
			deadline, _ := ctx.Deadline()
			wait, stop := context.WithDeadline(w.ctx, deadline)
			select {
			case <-ready:
			case <-wait.Done():
			}
			stop()
		}
	}
	status, err := w.attempts(ctx, j, d)
	if err == errResume {
		cancel()
		j.resume.d = *d
		return false
	}
	d.Done = time.Since(e.start)
	if w.inline {
		d.Done = w.arrived // it was whole then, read or not
	}
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()

	switch a := w.gotConn.Load(); {
	case j.direct:
		d.Actual = j.sentAt
	case a >= 0:
		d.Actual = time.Duration(a)
	default:
		d.Actual = d.Picked
	}
	switch {
	case err == nil:
		d.Class = record.ClassOfStatus(status)
		d.Status = status
	case notTheSUTs(err):
		// Nothing left: no SUT refused it, and no send from that origin
		// can go better. Counted as a connection error it read as the
		// SUT refusing connections; the run stops saying why, and the
		// send is aborted, as those a stopped run leaves are.
		e.halt(err)
		d.Aborted = true
	case e.ctx.Err() != nil && !timedOut:
		d.Aborted = true
	case timedOut || isTimeout(err):
		d.Class = record.ClassTimeout
		d.NoAnswer = record.NoAnswerTimeout
	default:
		d.Class = record.ClassConnError
		d.NoAnswer = NoAnswerReason(err)
	}
	return true
}

// notTheSUTs reports whether err is the crowd's own set-up failing
// before a byte left: an origin's address this machine cannot bind (the
// advertised range not local), which would fail every send of the run.
func notTheSUTs(err error) bool { return errors.Is(err, originaddr.ErrNotLocal) }

// errResume ends the attempts of the dispatcher's own worker where a
// worker goes on (job.resume).
var errResume = errors.New("flood: the send goes on on a worker")

// aborterTransport is a transport that bounds a request whose context
// holds an h1.Aborter by the context's deadline, and ends it by the
// Aborter, when HonoursAborter says so: h1's, and the per-origin-address
// transport made of h1's.
type aborterTransport interface{ HonoursAborter() bool }

// sendContext is the context of one send: the run's, with the worker's
// trace hooks, bounded by deadline (the run's per-send timeout after the
// send began: when the worker took it, or when the dispatcher wrote it).
// With the fast client (alone or per origin address: aborterTransport)
// the bound is a deadline its transport sets on the connection, and the
// worker's Aborter, registered once with the run's context, ends the send
// when the run does: a context.WithTimeout per send (a timer, and a registration
// with the run's context that every worker contends for) cost about
// 1.5 µs of CPU and seven allocations a send. That context is the
// worker's own, its deadline set again for each send. net/http's
// transport watches only a context's Done, so it gets WithDeadline.
func (w *worker) sendContext(deadline time.Time) (context.Context, context.CancelFunc) {
	if w.abort == nil {
		return context.WithDeadline(w.ctx, deadline)
	}
	w.deadline.deadline = deadline
	return &w.deadline, func() {}
}

// sendDeadline is a context with a deadline that no timer of its own
// enforces (an h1 transport with an Aborter in the context does): Done is
// the parent's, and Err is context.DeadlineExceeded once the deadline has
// passed, else the parent's.
type sendDeadline struct {
	context.Context
	deadline time.Time
}

func (c *sendDeadline) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *sendDeadline) Err() error {
	// The deadline first, as a timer's context would report it once it had
	// fired: a send whose deadline passed is a timeout even if the run was
	// interrupted before its error came back.
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return c.Context.Err()
}

// attempts sends j's request (reads the answer to it, when the dispatcher
// wrote it), and again as long as its token's Fallback asks, and returns
// the last answer's status. The GotConn offset stays the first attempt's.
func (w *worker) attempts(ctx context.Context, j *job, d *record.Delivery) (status int, err error) {
	p := j.prep
	fb, _ := p.Token.(Fallback)
	header := p.Header
	switch {
	case fb == nil || j.resume != nil:
		// No Fallback, or the dispatcher asked it already.
	case j.direct:
		// Attempt 0 went as signed (AsSigned): the Fallback is told, for
		// its bookkeeping (the double knock counts first attempts by
		// scheme), and what it gives is p's header already on the wire.
		fb.Attempt(p, 0, 0, d.Measured)
	default:
		if header, _, err = fb.Attempt(p, 0, 0, d.Measured); err != nil {
			return 0, err
		}
	}
	first, n := int64(-1), 1
	if r := j.resume; r != nil {
		// The dispatcher read the first answer (Actual is when it wrote).
		header, n = r.header, r.n
	}
	for ; ; n++ {
		d.Attempts = n
		if n == 1 && j.direct {
			status, err = w.readWritten(ctx, j, d)
		} else {
			status, err = w.roundTrip(ctx, p, header, d)
		}
		if n == 1 {
			first = w.gotConn.Load()
		} else if first >= 0 {
			w.gotConn.Store(first)
		}
		if err != nil || fb == nil {
			return status, err
		}
		again := false
		if header, again, err = fb.Attempt(p, n, status, d.Measured); err != nil || !again {
			return status, err
		}
		if w.inline {
			j.resume = &resumed{n: n + 1, header: header}
			return status, errResume
		}
	}
}

// roundTrip sends p with header and drains the answer: its status, and
// into d what it said of the SUT's rate limit (Retry-After included) and
// its size.
func (w *worker) roundTrip(ctx context.Context, p *Prepared, header http.Header, d *record.Delivery) (status int, err error) {
	req := w.request(ctx, p, header)
	resp, err := w.e.transport.RoundTrip(req)
	status, err = drain(resp, err, d)
	w.forget(req)
	return status, err
}

// readWritten reads the answer to the request the dispatcher wrote for j,
// as roundTrip reads one.
func (w *worker) readWritten(ctx context.Context, j *job, d *record.Delivery) (status int, err error) {
	if j.writeErr != nil {
		d.RateLimit, d.GotBytes = record.RateLimitSample{}, 0
		return 0, j.writeErr
	}
	if w.whole != nil && ctx.Err() == nil {
		// The loop's: the whole answer is there, and only its status,
		// its size and what it says of the SUT's rate limit are asked
		// for. A Response, its fields and its body cost 1-3 µs of CPU a
		// send more (docs/contributing.md, run AE). Past the send's
		// deadline, or once the run is interrupted, Read tells (a
		// timeout, an abort), as it would have.
		a, err := w.e.written.ReadArrived(j.written, w.whole, rateLimitField)
		if err != h1.ErrNotPlain {
			d.RateLimit, d.GotBytes = record.RateLimitSample{}, 0
			if err != nil {
				return 0, err
			}
			d.RateLimit, d.GotBytes = parseRateLimit(a.Header, time.Now), a.BodyLen
			return a.Status, nil
		}
	}
	resp, err := w.e.written.Read(ctx, j.written)
	return drain(resp, err, d)
}

// drain reads an answer (resp, or the error instead of one) into d: its
// status, what it said of the SUT's rate limit (Retry-After included) and
// its size, its body read to the end.
func drain(resp *http.Response, err error, d *record.Delivery) (status int, _ error) {
	d.RateLimit, d.GotBytes = record.RateLimitSample{}, 0
	if err != nil {
		return 0, err
	}
	status = resp.StatusCode
	d.RateLimit = parseRateLimit(resp.Header, time.Now)
	if resp.Body != nil {
		// Drain so the connection goes back to the keep-alive pool.
		d.GotBytes, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return status, err
}

// request is the request that sends p with header in ctx: with the fast
// client in the worker's own send context, the worker's reused request
// and body reader; otherwise a new one (net/http's transport may still be
// writing the body when the answer has come back).
func (w *worker) request(ctx context.Context, p *Prepared, header http.Header) *http.Request {
	reuse := w.req != nil && ctx == context.Context(&w.deadline)
	r := &w.base
	if reuse {
		r = w.req // its context is set once: only its fields below change
	}
	r.Method, r.URL, r.Header, r.Host = p.Method, p.URL, header, p.Host
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.Body, r.ContentLength = nil, 0
	if len(p.Body) > 0 {
		// A *bytes.Reader (under NopCloser) is what net/http recognises as
		// in-memory: it then writes headers and body in one syscall, where
		// any other reader costs a separate header flush per request.
		if reuse {
			w.body.Reset(p.Body)
			r.Body = w.bodyRC
		} else {
			r.Body = io.NopCloser(bytes.NewReader(p.Body))
		}
		r.ContentLength = int64(len(p.Body))
	}
	if reuse {
		return r
	}
	return r.WithContext(ctx)
}

// forget drops req's references to the send's data, once its answer is
// read.
func (w *worker) forget(req *http.Request) {
	w.base = http.Request{}
	if req == w.req {
		req.URL, req.Header, req.Body, req.Host = nil, nil, nil, ""
		w.body.Reset(nil)
	}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
