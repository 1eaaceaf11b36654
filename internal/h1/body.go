// An answer's body: its framing (RFC 9112 §6.3) and the reader that
// gives the connection back to the pool once the body is read.

package h1

import (
	"bufio"
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
// whether the connection may be kept, from what the request asked and the
// answer's head.
func frame(a asked, resp *http.Response, c *conn) error {
	n, hasCL, hasTE, err := framingFields(resp)
	if err != nil {
		return err
	}
	b := &body{c: c, keep: keepAlive(a, resp)}
	resp.Body, resp.ContentLength = b, -1
	switch {
	case a.head || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified:
		b.done, resp.ContentLength = true, 0
	case hasTE:
		// It overrides Content-Length, and a connection that had both is
		// not trusted with another request.
		b.mode, b.keep = byChunks, b.keep && !hasCL
	case hasCL:
		b.remain, resp.ContentLength = n, n
		b.done = n == 0
	default:
		b.mode, b.keep = byClosing, false
	}
	resp.Close = !b.keep
	return nil
}

// framingFields reads an answer's Content-Length (n, when hasCL) and whether
// it is chunked (hasTE), refusing either field, or a trailer field a chunked
// answer announces, when net/http does: whatever the status, interim answers
// included, and whatever the request's method; Content-Length even when a
// transfer coding overrides it. Only chunked is a transfer coding this client
// reads, as net/http, and an HTTP/1.0 answer has none (net/http ignores the
// field there).
func framingFields(resp *http.Response) (n int64, hasCL, hasTE bool, err error) {
	te, hasTE := resp.Header["Transfer-Encoding"]
	cl, hasCL := resp.Header["Content-Length"]
	hasTE = hasTE && resp.ProtoMinor > 0
	if hasCL {
		if n, err = contentLength(cl); err != nil {
			return 0, false, false, err
		}
	}
	if !hasTE {
		return n, hasCL, false, nil
	}
	if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
		return 0, false, false, fmt.Errorf("h1: unsupported Transfer-Encoding %q", strings.Join(te, ", "))
	}
	// A chunked answer may announce trailer fields, but not these: net/http
	// refuses them there (and ignores Trailer otherwise).
	for _, v := range resp.Header["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			switch name = strings.Trim(name, " \t"); http.CanonicalHeaderKey(name) {
			case "Content-Length", "Transfer-Encoding", "Trailer":
				return 0, false, false, fmt.Errorf("h1: bad trailer field %q", name)
			}
		}
	}
	return n, hasCL, true, nil
}

// keepAlive says whether the connection may carry another request after
// this answer: HTTP/1.1 unless either side said close, HTTP/1.0 only when
// the server said keep-alive.
func keepAlive(a asked, resp *http.Response) bool {
	if a.close || hasToken(resp.Header["Connection"], "close") {
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

// contentLength reads Content-Length: every value the same decimal
// number, as net/http requires.
func contentLength(values []string) (int64, error) {
	first := strings.Trim(values[0], " \t")
	n, err := strconv.ParseUint(first, 10, 62)
	if err != nil || first[0] == '+' {
		return 0, fmt.Errorf("h1: bad Content-Length %q", values[0])
	}
	for _, v := range values[1:] {
		if strings.Trim(v, " \t") != first {
			return 0, fmt.Errorf("h1: differing Content-Lengths %q", strings.Join(values, ", "))
		}
	}
	return int64(n), nil
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

// maxChunkLine bounds a chunk's size line, as net/http's does.
const maxChunkLine = 4096

// chunkSize reads a chunk's size line (extensions ignored); at the last
// chunk (size 0) it reads the trailer section past and returns io.EOF.
func (b *body) chunkSize() (int64, error) {
	budget := maxChunkLine
	line, crlf, err := b.c.readLineEnd(&budget)
	if err != nil {
		return 0, err
	}
	if !crlf {
		// net/http refuses a bare LF here: a proxy reading the chunks
		// otherwise could be smuggled a request.
		return 0, fmt.Errorf("h1: chunk size line %q does not end in CRLF", truncate(line))
	}
	hex, _, _ := strings.Cut(string(line), ";")
	hex = strings.TrimRight(hex, " \t")
	size, err := strconv.ParseUint(hex, 16, 62)
	if err != nil || hex == "" || hex[0] == '+' {
		return 0, fmt.Errorf("h1: bad chunk size line %q", truncate(line))
	}
	if size > 0 {
		return int64(size), nil
	}
	// The trailer section, read as net/http reads it: a CRLF at once, or
	// fields up to an empty line (two bytes at least either way).
	if end, err := b.c.r.Peek(2); err != nil {
		return 0, io.ErrUnexpectedEOF
	} else if string(end) == "\r\n" {
		b.c.r.Discard(2)
		return 0, io.EOF
	}
	if !doubleCRLFAhead(b.c.r) {
		return 0, errors.New("h1: trailer section not ended by CRLF CRLF within the read buffer")
	}
	budget = maxHeadBytes
	for {
		trailer, err := b.c.readLine(&budget)
		if err != nil {
			return 0, err
		}
		if len(trailer) == 0 {
			return 0, io.EOF
		}
		if i := strings.IndexByte(string(trailer), ':'); i <= 0 || !isToken(string(trailer[:i])) || !validValue(string(trailer[i+1:])) {
			return 0, fmt.Errorf("h1: malformed trailer line %q", truncate(trailer))
		}
	}
}

// doubleCRLFAhead reports whether r holds a CRLF CRLF within its buffer,
// peeking one byte further at a time (so it waits for no byte past it):
// net/http bounds a trailer section so.
func doubleCRLFAhead(r *bufio.Reader) bool {
	for n := 4; n <= r.Size(); n++ {
		buf, err := r.Peek(n)
		if strings.HasSuffix(string(buf), "\r\n\r\n") {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

// chunkEnd reads the CRLF that ends a chunk's data.
func (b *body) chunkEnd() error {
	var crlf [2]byte
	if _, err := io.ReadFull(b.c.r, crlf[:]); err != nil || crlf != [2]byte{'\r', '\n'} {
		return errors.New("h1: chunk data not followed by CRLF")
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
