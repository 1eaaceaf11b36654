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
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/flood/record"
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

// worker sends jobs one at a time. Each has its own recorder shard (shared
// only when there are more workers than shards), its own reusable request
// template and trace hooks, so the hot path takes no lock shared with other
// workers except the job channel itself.
type worker struct {
	e       *engine
	rec     *recorder
	ctx     context.Context // the run's context with this worker's trace hooks
	base    http.Request
	gotConn atomic.Int64 // offset when the connection was obtained; -1 = not yet
}

func (e *engine) startWorker() {
	w := &worker{e: e, rec: e.recs[e.nworkers%len(e.recs)]}
	// The trace is attached once: a worker makes one send at a time, and
	// WithClientTrace per send would allocate (and compose with a caller's
	// trace again each time).
	w.ctx = httptrace.WithClientTrace(e.ctx, &httptrace.ClientTrace{GotConn: w.onGotConn})
	e.nworkers++
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		var o outcome
		for j := range e.jobs {
			w.send(&j, &o)
			w.rec.record(&o)
			if e.p.Watch != nil {
				e.p.Watch.Completed(o.completion())
			}
			e.settle(j.prep, Delivery{Sent: true, Aborted: o.aborted, Class: o.class, Status: o.status})
			e.inflight.Add(-1)
		}
	}()
}

func (w *worker) onGotConn(httptrace.GotConnInfo) {
	w.gotConn.Store(int64(time.Since(w.e.start)))
}

// send makes one request and fills o. The actual send time is when the
// request got its connection (httptrace GotConn): waiting for a pooled
// connection is lateness, not service time. A RoundTripper that never reports
// GotConn is taken to send when it is called.
func (w *worker) send(j *job, o *outcome) {
	e := w.e
	p := j.prep
	o.typ, o.measured, o.intended = j.typ, j.measured, j.intended
	o.aborted, o.rl, o.class, o.status = false, record.RateLimitSample{}, record.ClassOther, 0
	o.picked = time.Since(e.start)
	w.gotConn.Store(-1)

	ctx, cancel := context.WithTimeout(w.ctx, e.p.Timeout)
	if ready := p.ready(); ready != nil {
		// Held until the crowd's state says what the request does (a
		// Delete's object gone); a drafted-ahead one has long been.
		select {
		case <-ready:
		case <-ctx.Done():
		}
	}
	var status int
	var rl record.RateLimitSample
	var err error
	if p.Knock != nil {
		status, rl, err = w.knockSend(ctx, p, j.measured)
	} else {
		status, rl, err = w.roundTrip(ctx, p, p.Header)
	}
	o.done = time.Since(e.start)
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()

	if a := w.gotConn.Load(); a >= 0 {
		o.actual = time.Duration(a)
	} else {
		o.actual = o.picked
	}
	switch {
	case err == nil:
		o.class = record.ClassOfStatus(status)
		o.status = status
		o.rl = rl
	case e.ctx.Err() != nil && !timedOut:
		o.aborted = true
	case timedOut || isTimeout(err):
		o.class = record.ClassTimeout
	default:
		o.class = record.ClassConnError
	}
}

// roundTrip sends p with header and drains the answer: its status and
// what it said of the SUT's rate limit (Retry-After included).
func (w *worker) roundTrip(ctx context.Context, p *Prepared, header http.Header) (status int, rl record.RateLimitSample, err error) {
	w.base = http.Request{
		Method:     p.Method,
		URL:        p.URL,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     header,
		Host:       p.Host,
	}
	if len(p.Body) > 0 {
		// A *bytes.Reader (under NopCloser) is what net/http recognises as
		// in-memory: it then writes headers and body in one syscall, where
		// any other reader costs a separate header flush per request.
		w.base.Body = io.NopCloser(bytes.NewReader(p.Body))
		w.base.ContentLength = int64(len(p.Body))
	}
	req := w.base.WithContext(ctx)
	resp, err := w.e.p.Transport.RoundTrip(req)
	if err == nil {
		status = resp.StatusCode
		rl = parseRateLimit(resp.Header, time.Now)
		if resp.Body != nil {
			// Drain so the connection goes back to the keep-alive pool.
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	w.base = http.Request{} // drop references to the send's data
	return status, rl, err
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
