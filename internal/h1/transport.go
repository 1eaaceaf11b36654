// Package h1 is a minimal HTTP/1.1 client transport for the flood: it
// writes a request and reads its answer on the calling goroutine (or, with
// Write and Read, writes it on one and reads the answer on another, which
// may watch the connection's Socket and read once Arrived says the whole
// answer is there, with Read or, from the bytes Arrived looked at, with
// ReadArrived; WriteHead writes a request whose head NewHead made before
// its send, a copy), over a keep-alive pool of plain or TLS connections,
// where net/http's transport hands every request to a writer and a reader
// goroutine of the connection's and back. It speaks HTTP/1.1 only (no h2, no pipelining,
// no proxy, no compression, no redirect, no retry) and sends the request
// as it is: its headers' names and values byte for byte, nothing added but
// Host and Content-Length, which net/http adds too, so a signature over
// them holds.
//
// It replaces a library for the bench rows presigned_vs_wrk_fast and
// _nethttp (go run ./bench -only presigned): with net/http's transport the
// presigned flood reached 0.37 × wrk replaying the same requests, the
// crowd's client being the bottleneck. FuzzAnswerMatchesNetHTTP keeps its
// reading of answers to net/http's: it never reads one otherwise, and
// refuses only what net/http also refuses or a federating server never
// sends; FuzzParseArrived keeps ReadArrived's to Read's.
package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// DialFunc dials a network address, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Options configure a Transport. Zero values read as documented.
type Options struct {
	// Dial makes the TCP connections; nil is a net.Dialer with a 5 s
	// timeout and 30 s TCP keep-alive.
	Dial DialFunc
	// TLS is the configuration of https connections (nil: system roots).
	// Its NextProtos are replaced by http/1.1 alone (a copy is used), and
	// its ServerName, when empty, is the URL's host.
	TLS *tls.Config
	// DialTimeout bounds the TCP connect; 0 is 5 s.
	DialTimeout time.Duration
	// HandshakeTimeout bounds a TLS handshake; 0 is 10 s.
	HandshakeTimeout time.Duration
	// IdleTimeout is how long a connection may rest in the pool before it
	// is closed rather than used; 0 is 90 s, as net/http's default.
	IdleTimeout time.Duration
	// MaxIdlePerHost bounds the idle connections kept per host; 0 is 100.
	MaxIdlePerHost int
}

// Transport is an http.RoundTripper for HTTP/1.1 over a keep-alive pool
// per scheme and host:port. The request's context bounds the request (the
// wait for a connection, the write, the answer and its body): when it is
// done, the connection is closed and the call, or the body's Read, fails
// with the context's error; a dial it started goes on within its own
// bounds, and its connection rests in the pool. A context that holds an
// Aborter bounds it by its deadline and by the Aborter instead (see
// Aborter). It reports the connection it got to an
// httptrace.ClientTrace's GotConn in the context, after the dial and the
// handshake, as net/http does. Safe for concurrent use.
type Transport struct {
	o   Options
	tls *tls.Config

	mu      sync.Mutex
	idle    map[poolKey][]*conn      // resting connections, the most recent last
	waiting map[poolKey][]chan *conn // requests dialling, first come first served
}

type poolKey struct{ scheme, addr string }

// NewTransport returns a Transport configured by o.
func NewTransport(o Options) *Transport {
	if o.Dial == nil {
		d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
		o.Dial = d.DialContext
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 90 * time.Second
	}
	if o.MaxIdlePerHost <= 0 {
		o.MaxIdlePerHost = 100
	}
	cfg := &tls.Config{}
	if o.TLS != nil {
		cfg = o.TLS.Clone()
	}
	cfg.NextProtos = []string{"http/1.1"}
	return &Transport{o: o, tls: cfg, idle: map[poolKey][]*conn{}, waiting: map[poolKey][]chan *conn{}}
}

// RoundTrip sends req and returns its answer, whose Body reads from the
// connection: read it to its end (the connection then goes back to the
// pool) or close it (the connection is closed). A status other than 101
// below 200 is read past, as net/http does. req.Body is closed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.roundTrip(req)
	if req.Body != nil {
		req.Body.Close()
	}
	return resp, err
}

func (t *Transport) roundTrip(req *http.Request) (*http.Response, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	ctx := req.Context()
	key := poolKey{scheme: req.URL.Scheme, addr: hostPort(req.URL)}
	c, err := t.get(ctx, key, req.URL.Hostname())
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	// Closing the connection's deadline when the context is done (or when
	// its Aborter aborts) is what bounds every read and write below, and
	// the body's.
	stop, err := c.watch(ctx)
	if err != nil {
		t.putIdle(key, c)
		return nil, err
	}
	resp, err := c.exchange(req)
	if err != nil {
		stop()
		c.close()
		return nil, ctxErr(ctx, err)
	}
	b := resp.Body.(*body)
	b.t, b.key, b.stop, b.ctx = t, key, stop, ctx
	if b.done {
		b.finish()
	}
	return resp, nil
}

// checkRequest refuses what this transport cannot send as asked.
func checkRequest(req *http.Request) error {
	switch {
	case req.URL == nil:
		return errors.New("h1: request has no URL")
	case req.URL.Scheme != "http" && req.URL.Scheme != "https":
		return fmt.Errorf("h1: unsupported scheme %q (want http or https)", req.URL.Scheme)
	case req.URL.Host == "":
		return errors.New("h1: request URL has no host")
	case req.Body != nil && req.Body != http.NoBody && req.ContentLength <= 0:
		return errors.New("h1: request body without a known length (set ContentLength)")
	}
	return nil
}

// hostPort is u's host with the scheme's default port when it names none.
// A host that names its port, and brackets an IPv6 address, is that
// already: it is returned as it is, so that a send allocates no key.
func hostPort(u *url.URL) string {
	host, port := u.Hostname(), u.Port()
	if port != "" && (strings.HasPrefix(u.Host, "[") || !strings.Contains(host, ":")) {
		return u.Host
	}
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(host, port)
}

// ctxErr is the context's error once it is done, context.Canceled once
// its Aborter aborted (what failed then is the closed connection, not its
// cause), else err.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if a := aborterOf(ctx); a != nil && a.hasAborted() {
		return context.Canceled
	}
	return err
}

// dial connects to key, with a TLS handshake offering http/1.1 alone for
// https, each within its own bound.
func (t *Transport) dial(ctx context.Context, key poolKey, host string) (*conn, error) {
	cctx, cancel := context.WithTimeout(ctx, t.o.DialTimeout)
	raw, err := t.o.Dial(cctx, "tcp", key.addr)
	cancel()
	if err != nil {
		return nil, err
	}
	if key.scheme != "https" {
		raw = adoptSocket(raw)
	}
	nc := raw
	if key.scheme == "https" {
		cfg := t.tls
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(raw, cfg)
		hctx, cancel := context.WithTimeout(ctx, t.o.HandshakeTimeout)
		err = tc.HandshakeContext(hctx)
		cancel()
		if err == nil {
			if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
				err = fmt.Errorf("h1: server at %s chose protocol %q, not http/1.1", key.addr, p)
			}
		}
		if err != nil {
			raw.Close()
			return nil, err
		}
		nc = tc
	}
	return &conn{raw: raw, nc: nc, lane: anyLane, r: bufio.NewReaderSize(nc, 4096), w: bufio.NewWriterSize(nc, 4096)}, nil
}
