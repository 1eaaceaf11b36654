// A request's head made once, before its send: a request made long before
// it is sent (a presigned flood's) carries its head as the wire will hold
// it, checked when it was made, so that writing it is a copy.

package h1

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Head is a request's head (request line, Host, header fields,
// Content-Length, blank line) exactly as Write would write it for the
// request with a body of its ContentLength bytes, made and checked once
// by NewHead, with what writing it and reading its answer need of the
// request besides. A Head is read-only: any number of
// goroutines may write it at once.
type Head struct {
	wire    []byte
	key     poolKey
	a       asked
	bodyLen int64 // the body's length the head announces, 0 for none
}

// NewHead makes req's head for a body of req.ContentLength bytes (none
// when it is 0 or less) given to WriteHead: req.Body is not read, and
// may be nil. It refuses, as Write would, a request that cannot go on
// the wire as it is. req is not kept.
func NewHead(req *http.Request) (*Head, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	var keys []string
	wire, err := appendHead(make([]byte, 0, headCap(req)), req, req.ContentLength > 0, &keys)
	if err != nil {
		return nil, err
	}
	return &Head{
		wire:    wire,
		key:     poolKey{scheme: req.URL.Scheme, addr: hostPort(req.URL)},
		a:       askedOf(req),
		bodyLen: max(req.ContentLength, 0),
	}, nil
}

// headCap is at least the length of the head appendHead writes for req,
// unless escaping lengthens its path, so that the head is made in one
// allocation rather than grown through about ten: a pipeline makes one a
// send (in a CPU profile of one at 3 000/s the growths' clearing took 12
// µs a send). It is a close bound, not a padded one (a Content-Length of
// 20 digits, both Hosts): a presigned pool keeps every head it made.
func headCap(req *http.Request) int {
	n := max(len(req.Method), len(http.MethodGet)) + len(" ") + len(req.URL.RawPath) + len(req.URL.Path) +
		len("?") + len(req.URL.RawQuery) + len(" HTTP/1.1\r\nHost: ") + len(req.Host) + len(req.URL.Host) + len("\r\n") +
		len("Content-Length: ") + 20 + len("\r\n\r\n")
	for k, vs := range req.Header {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}

// errNoHead is WriteHead's error for a nil Head.
var errNoHead = errors.New("h1: WriteHead of no Head")

// WriteHead is Write for the request h was made of, with body as its
// body: it writes h and body on a connection resting in the pool, on
// Write's terms (lane, deadline, ok, err, and the Read it owes). body
// must be as long as h announces, or nothing is written; it is not kept
// once WriteHead returns.
func (t *Transport) WriteHead(h *Head, body []byte, lane int, deadline time.Time) (w Written, ok bool, err error) {
	switch {
	case h == nil:
		return Written{}, true, errNoHead
	case int64(len(body)) != h.bodyLen:
		return Written{}, true, fmt.Errorf("h1: a body of %d bytes for a head that announces %d", len(body), h.bodyLen)
	}
	c := t.takeAlive(h.key, lane)
	if c == nil {
		return Written{}, false, nil
	}
	c.setDeadline(deadline)
	c.w.Write(h.wire)
	c.w.Write(body)
	if err := c.w.Flush(); err != nil {
		c.close()
		return Written{}, true, err
	}
	return Written{c: c, key: h.key, a: h.a}, true, nil
}
