// The client the flood sends with (--client): net/http's transport, or
// internal/h1's, which writes and reads on the worker's own goroutine, or
// takes the dispatcher's own write on a resting connection.

package flood

import (
	"cmp"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/crowdfed/crowd/internal/h1"
)

// Client is the HTTP client of a flood's sends (--client). Parse it once
// with ParseClient; NewClientTransport takes the parsed value.
type Client string

const (
	// ClientNetHTTP is net/http's transport (NewTransport).
	ClientNetHTTP Client = "nethttp"
	// ClientFast is internal/h1's transport: HTTP/1.1, the request's bytes
	// as they are, written and read on the sending worker's goroutine, or
	// written by the dispatcher on a resting connection and read by the
	// worker.
	ClientFast Client = "fast"
	// DefaultClient is the client of an empty --client: the fast one, as
	// every e2e verifier (Fedify, the four signature libraries, RFC 9421,
	// the double knock, the origins' own addresses) passes with it.
	DefaultClient = ClientFast
)

// ParseClient reads --client: nethttp or fast, in any case; "" is
// DefaultClient. Errors are *record.UsageError naming the flag.
func ParseClient(s string) (Client, error) {
	switch c := Client(strings.ToLower(strings.TrimSpace(s))); c {
	case "":
		return DefaultClient, nil
	case ClientNetHTTP, ClientFast:
		return c, nil
	}
	return "", usage(s, "--client: want nethttp or fast")
}

// SendingTransport is the transport a flood sends with: an
// http.RoundTripper whose idle connections can be closed when the run
// ends.
type SendingTransport interface {
	http.RoundTripper
	CloseIdleConnections()
}

// DialFunc dials a network address, as net.Dialer.DialContext does.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// TransportOptions say what NewClientTransport makes.
type TransportOptions struct {
	Client      Client        // "" is DefaultClient
	MaxInflight int           // concurrent sends the pool serves; ≤ 0 is DefaultMaxInflight
	Timeout     time.Duration // the run's per-send timeout; ≤ 0 is DefaultTimeout
	TLS         *tls.Config   // https targets' configuration (nil: system roots)
	Dial        DialFunc      // nil: a 5 s dial with 30 s TCP keep-alive
}

// NewClientTransport returns the transport of o.Client with the flood's
// settings, the same whichever client: HTTP/1.1 only, a keep-alive pool
// for o.MaxInflight sends, idle connections closed after idleConnTimeout,
// the dial bounded by 5 s and a TLS handshake by max(5 s, o.Timeout) (see
// NewTransport), no proxy and no compression. An unknown client is
// DefaultClient (ParseClient refuses one).
func NewClientTransport(o TransportOptions) SendingTransport {
	maxInflight, timeout := o.MaxInflight, o.Timeout
	if maxInflight <= 0 {
		maxInflight = DefaultMaxInflight
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if cmp.Or(o.Client, DefaultClient) == ClientFast {
		return h1.NewTransport(h1.Options{Dial: o.Dial, TLS: o.TLS, HandshakeTimeout: max(connectTimeout, timeout),
			IdleTimeout: idleConnTimeout, MaxIdlePerHost: maxInflight})
	}
	tr := NewTransport(maxInflight, timeout, o.TLS)
	if o.Dial != nil {
		tr.DialContext = o.Dial
	}
	return tr
}
