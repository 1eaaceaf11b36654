// An answer's body: its framing (RFC 9112 §6.3) and the reader that
// gives the connection back to the pool once the body is read.

package h1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// framing is how an answer's body ends.
type framing int

const (
	byLength  framing = iota // after Content-Length bytes (none: no body)
	byChunks                 // at the last chunk (Transfer-Encoding: chunked)
	byClosing                // when the server closes the connection
)

// errClosed is a read of a body already closed.
var errClosed = errors.New("h1: read on closed answer body")

// body reads an answer's body from its connection. Once the body has been
// read to its end the connection goes back to the pool, when both sides
// keep it alive and the request's context did not end meanwhile; closed
// before, it closes the connection.
type body struct {
	mu     sync.Mutex
	c      *conn // nil once the body is over, read or closed
	mode   framing
	remain int64 // bytes left: of the body (byLength) or of the current chunk
	keep   bool  // the connection may carry another request
	done   bool  // read to its end
	err    error // what every later Read returns

	// Attached by RoundTrip: where the connection goes back, and the
	// context watch to stop first.
	t    *Transport
	key  poolKey
	stop func() bool
	ctx  context.Context
}

// frame sets resp's body (resp.Body a *body over c), its length and
// whether the connection may be kept, from the request and the answer's
// head.
func frame(req *http.Request, resp *http.Response, c *conn) error {
	b := &body{c: c, keep: keepAlive(req, resp)}
	resp.Body, resp.ContentLength = b, -1
	te, hasTE := resp.Header["Transfer-Encoding"]
	cl, hasCL := resp.Header["Content-Length"]
	switch {
	case req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified:
		b.done, resp.ContentLength = true, 0
	case hasTE:
		// Transfer-Encoding overrides Content-Length; a connection that
		// had both is not trusted with another request.
		b.keep = b.keep && !hasCL
		codings := strings.Split(strings.Join(te, ","), ",")
		if strings.EqualFold(strings.TrimSpace(codings[len(codings)-1]), "chunked") {
			b.mode = byChunks
		} else {
			b.mode, b.keep = byClosing, false
		}
	case hasCL:
		n, err := contentLength(cl)
		if err != nil {
			return err
		}
		b.remain, resp.ContentLength = n, n
		b.done = n == 0
	default:
		b.mode, b.keep = byClosing, false
	}
	resp.Close = !b.keep
	return nil
}

// keepAlive says whether the connection may carry another request after
// this answer: HTTP/1.1 unless either side said close, HTTP/1.0 only when
// the server said keep-alive.
func keepAlive(req *http.Request, resp *http.Response) bool {
	if req.Close || hasToken(req.Header["Connection"], "close") || hasToken(resp.Header["Connection"], "close") {
		return false
	}
	if resp.ProtoMinor == 0 {
		return hasToken(resp.Header["Connection"], "keep-alive")
	}
	return true
}

// hasToken reports whether a comma-separated field holds token (any case).
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// contentLength reads Content-Length: every value the same decimal number.
func contentLength(values []string) (int64, error) {
	var n int64 = -1
	for _, v := range values {
		for f := range strings.SplitSeq(v, ",") {
			f = strings.TrimSpace(f)
			m, err := strconv.ParseUint(f, 10, 62)
			if err != nil || f[0] == '+' || n >= 0 && int64(m) != n {
				return 0, fmt.Errorf("h1: bad Content-Length %q", strings.Join(values, ", "))
			}
			n = int64(m)
		}
	}
	return n, nil
}

// Read reads the body; io.EOF at its end.
func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.err != nil:
		return 0, b.err
	case b.done:
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	}
	n, err := b.read(p)
	switch {
	case err == io.EOF:
		b.done, b.err = true, io.EOF
		b.release()
	case err != nil:
		b.fail(err)
	}
	return n, b.err
}

// read reads by the body's framing; io.EOF means the body ended where it
// should.
func (b *body) read(p []byte) (int, error) {
	r := b.c.r
	switch b.mode {
	case byClosing:
		return r.Read(p)
	case byChunks:
		if b.remain == 0 {
			size, err := b.chunkSize()
			if err != nil || size == 0 {
				return 0, err
			}
			b.remain = size
		}
	}
	n, err := r.Read(p[:min(int64(len(p)), b.remain)])
	b.remain -= int64(n)
	if err == io.EOF && b.remain > 0 || err == nil && n == 0 {
		return n, io.ErrUnexpectedEOF
	}
	if err != nil || b.remain > 0 {
		return n, err
	}
	if b.mode == byChunks {
		return n, b.chunkEnd()
	}
	return n, io.EOF
}

// chunkSize reads a chunk's size line (extensions ignored); at the last
// chunk (size 0) it reads the trailer section past and returns io.EOF.
func (b *body) chunkSize() (int64, error) {
	budget := maxHeadBytes
	line, err := b.c.readLine(&budget)
	if err != nil {
		return 0, err
	}
	hex, _, _ := strings.Cut(string(line), ";")
	hex = strings.TrimSpace(hex)
	size, err := strconv.ParseUint(hex, 16, 62)
	if err != nil || hex == "" || hex[0] == '+' {
		return 0, fmt.Errorf("h1: bad chunk size line %q", truncate(line))
	}
	if size > 0 {
		return int64(size), nil
	}
	for {
		trailer, err := b.c.readLine(&budget)
		if err != nil {
			return 0, err
		}
		if len(trailer) == 0 {
			return 0, io.EOF
		}
	}
}

// chunkEnd reads the CRLF that ends a chunk's data.
func (b *body) chunkEnd() error {
	budget := 2
	line, err := b.c.readLine(&budget)
	if err != nil || len(line) != 0 {
		return fmt.Errorf("h1: chunk data not followed by CRLF")
	}
	return nil
}

// release gives the connection back to the pool when it may be kept (and
// the context's watch did not fire), else closes it.
func (b *body) release() {
	c := b.c
	if c == nil || b.stop == nil {
		return // RoundTrip attaches the pool, then releases a done body
	}
	b.c = nil
	if b.stop() && b.keep {
		b.t.putIdle(b.key, c)
		return
	}
	c.close()
}

// fail ends the body with err (the context's, once done) and closes the
// connection.
func (b *body) fail(err error) {
	b.err = ctxErr(b.ctx, err)
	if c := b.c; c != nil {
		b.c = nil
		b.stop()
		c.close()
	}
}

// Close ends the body: the connection is closed unless the body was read
// to its end.
func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.c != nil {
		b.fail(errClosed)
		b.err = errClosed
	}
	if !b.done {
		b.err = errClosed
	}
	return nil
}

// finish releases a body that had nothing to read (called by RoundTrip
// once the pool is attached).
func (b *body) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.err = io.EOF
	b.release()
}
