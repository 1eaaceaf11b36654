// One connection: the request written as it is, the answer's head read.

package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// max1xx bounds the interim answers read past before the final one, as
// net/http does, so a server cannot keep a request waiting with them.
const max1xx = 5

// maxHeadBytes bounds an answer's status line and header section; net/http's
// default bound is 10 MB, but no answer a federating server gives comes near
// 1 MB, and the flood keeps a thousand connections.
const maxHeadBytes = 1 << 20

// conn is a pooled connection: raw is the TCP connection (peeked at while
// it rests; on Linux a plain one is a *socket), nc what requests go over
// (raw, or TLS over raw).
type conn struct {
	raw, nc   net.Conn
	r         *bufio.Reader
	w         *bufio.Writer
	idleSince time.Time
	lane      int         // the lane of the last Write on it (takeIdle); anyLane before the first
	deadline  time.Time   // the connection's, as last set by setDeadline
	keys      []string    // reused to sort a request's header names
	head      []byte      // reused to gather an answer's head (readHead)
	peek      *peeker     // the peek of a TCP connection that is no *socket, made at the first (alive)
	one       [1]byte     // what alive's peek looks into
	holder    *Aborter    // the Aborter of the last request that had one
	unhold    func() bool // releases holder (watch's stop), made at the first
}

// setDeadline bounds the connection's reads and writes by t (zero: none),
// touching the poller's timers only when the bound changes (a request
// without a deadline on a connection that had none costs nothing).
func (c *conn) setDeadline(t time.Time) {
	if !t.Equal(c.deadline) {
		c.nc.SetDeadline(t)
		c.deadline = t
	}
}

// expire makes every pending and later read and write fail: the request's
// context is done.
func (c *conn) expire() { c.nc.SetDeadline(time.Unix(1, 0)) }

func (c *conn) close() { c.nc.Close() }

// exchange writes req and reads the head of its final answer; the answer's
// Body is a *body not yet attached to the pool.
func (c *conn) exchange(req *http.Request) (*http.Response, error) {
	if err := c.writeRequest(req); err != nil {
		return nil, err
	}
	resp, err := c.readAnswer(askedOf(req))
	if err != nil {
		return nil, err
	}
	resp.Request = req
	return resp, nil
}

// asked is what reading an answer needs of the request it answers, apart
// from the request, so that a request written by Transport.Write (or
// made a Head) may be reused before its answer comes.
type asked struct {
	head  bool // a HEAD: the answer has no body, whatever its fields say
	close bool // the request asked for the connection to be closed
}

func askedOf(req *http.Request) asked {
	return asked{head: req.Method == http.MethodHead, close: req.Close || hasToken(req.Header["Connection"], "close")}
}

// readAnswer reads the head of the final answer to a request, past interim
// ones.
func (c *conn) readAnswer(a asked) (*http.Response, error) {
	for n := 0; ; n++ {
		resp, err := c.readHead()
		if err != nil {
			return nil, err
		}
		switch code := resp.StatusCode; {
		case code == http.StatusSwitchingProtocols:
			return nil, errors.New("h1: server switched protocols (101), which this client never asks for")
		case code >= 100 && code < 200:
			if n >= max1xx {
				return nil, fmt.Errorf("h1: more than %d interim (1xx) answers", max1xx)
			}
			// An interim answer has no body, but net/http refuses one
			// whose framing fields it would refuse on a final answer.
			if _, _, _, err := framingFields(resp); err != nil {
				return nil, err
			}
			continue
		}
		if err := frame(a, resp, c); err != nil {
			return nil, err
		}
		return resp, nil
	}
}

// skipped reports whether header name k is written otherwise than from
// req.Header: Host from req.Host, the body's length from
// req.ContentLength. net/http ignores the same ones.
func skipped(k string) bool {
	switch k {
	case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
		return true
	}
	return false
}

// writeRequest writes req's head (appendHead) and body and flushes them,
// in one write when they fit the buffer. A request appendHead refuses
// writes nothing.
func (c *conn) writeRequest(req *http.Request) error {
	hasBody := req.Body != nil && req.Body != http.NoBody
	// The head is made in the buffer's free space, so that writing it is
	// no copy when it fits.
	head, err := appendHead(c.w.AvailableBuffer(), req, hasBody, &c.keys)
	if err != nil {
		return err
	}
	w := c.w
	w.Write(head)
	if hasBody {
		n, err := copyBody(w, req.Body, req.ContentLength)
		if err != nil {
			return fmt.Errorf("h1: request body: ContentLength %d, wrote %d: %w", req.ContentLength, n, err)
		}
	}
	return w.Flush()
}

// appendHead appends req's head to dst and returns it: the request line,
// Host, the header fields sorted by name, each value trimmed of
// surrounding blanks, as net/http writes them, then Content-Length where
// a body follows (hasBody; req.ContentLength bytes) or the method is one
// that carries one, and the blank line. A method, host, field name or
// value that would not go on the wire as it is gets an error, and dst
// back as it was. keys is scratch for sorting the names.
func appendHead(dst []byte, req *http.Request, hasBody bool, keys *[]string) ([]byte, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !isToken(method) {
		return dst, fmt.Errorf("h1: invalid method %q", method)
	}
	if !validValue(host) || strings.ContainsAny(host, " /") {
		return dst, fmt.Errorf("h1: invalid host %q", host)
	}
	b := append(dst, method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	ks := (*keys)[:0]
	for k := range req.Header {
		if !skipped(k) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	*keys = ks
	for _, k := range ks {
		if !isToken(k) {
			return dst, fmt.Errorf("h1: invalid header name %q", k)
		}
		for _, v := range req.Header[k] {
			if !validValue(v) {
				return dst, fmt.Errorf("h1: invalid value of header %s", k)
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, strings.Trim(v, " \t")...)
			b = append(b, "\r\n"...)
		}
	}
	if hasBody || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, max(req.ContentLength, 0), 10)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...), nil
}

// copyBody copies the first n bytes of r into w, as io.CopyN does (io.EOF
// when r has fewer), reading straight into w's buffer: io.CopyN's
// LimitReader was an allocation a send.
func copyBody(w *bufio.Writer, r io.Reader, n int64) (int64, error) {
	var written int64
	empty := 0 // reads in a row that gave nothing and no error
	for written < n {
		if w.Available() == 0 {
			if err := w.Flush(); err != nil {
				return written, err
			}
		}
		buf := w.AvailableBuffer()
		buf = buf[:min(int64(cap(buf)), n-written)]
		k, err := r.Read(buf)
		if k < 0 || k > len(buf) {
			return written, fmt.Errorf("h1: the body's reader returned %d bytes for a %d-byte read", k, len(buf))
		}
		w.Write(buf[:k])
		written += int64(k)
		if k == 0 && err == nil {
			// As bufio.Writer.ReadFrom, under io.CopyN, gives up.
			if empty++; empty >= maxEmptyReads {
				return written, io.ErrNoProgress
			}
			continue
		}
		empty = 0
		if written == n {
			break // what it says after the last byte does not matter, as for io.CopyN
		}
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// maxEmptyReads is how many reads in a row may give nothing before copyBody
// stops with io.ErrNoProgress, as bufio's.
const maxEmptyReads = 100

// isToken reports whether s is an RFC 9110 token (a method or field name).
func isToken[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b <= ' ' || b >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, b) >= 0 {
			return false
		}
	}
	return true
}

// validValue reports whether s may be a field value: no control bytes but
// horizontal tabs (above all no CR or LF, which would split the head), and
// no DEL. Every value of every request is checked on every send, and a
// signed request's Signature and Digest are most of its head: eight bytes
// are tested at once, and only eight that hold a byte below a space or a
// DEL (a tab, most likely) are looked at one by one.
func validValue[T string | []byte](s T) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		del := x ^ (ones * 0x7f) // a zero byte where x holds a DEL
		// Any byte below ' ', any zero byte of del: exact as to whether there is one
		// (a borrow only ever follows a byte that is one).
		if (x-ones*' ')&^x&highs != 0 || (del-ones)&^del&highs != 0 {
			if !validBytes(s[i : i+8]) {
				return false
			}
		}
	}
	return validBytes(s[i:])
}

// validBytes is validValue one byte at a time.
func validBytes[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// readHead reads an answer's status line and header fields. Each line is
// checked as it arrives, so that a peer that is not an HTTP server, or
// sends a malformed field, fails the request at once. The status line is
// made a string of its own; the header section is gathered and made one
// string, which every name and value is a part of: one allocation for all
// of them, where a string per name and value was most of a send's
// allocations.
func (c *conn) readHead() (*http.Response, error) {
	budget := maxHeadBytes
	line, err := c.readLine(&budget)
	if err != nil {
		return nil, err
	}
	resp := &http.Response{}
	if err := parseStatus(string(line), resp); err != nil {
		return nil, err
	}
	buf, fields := c.head[:0], 0
	for {
		line, err := c.readLine(&budget)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			break
		}
		if err := checkField(line, fields == 0); err != nil {
			return nil, err
		}
		buf = append(append(buf, line...), '\n')
		fields++
	}
	if cap(buf) <= maxKeptHead {
		c.head = buf
	}
	head := string(buf)
	resp.Header = make(http.Header, min(fields, 8))
	// The values' slices share one backing array, as net/textproto's do.
	values := make([]string, fields)
	var last string // the field an obsolete folded line continues
	for head != "" {
		var line string
		line, head, _ = strings.Cut(head, "\n")
		if line[0] == ' ' || line[0] == '\t' {
			vs := resp.Header[last]
			vs[len(vs)-1] += " " + strings.Trim(line, " \t")
			continue
		}
		i := strings.IndexByte(line, ':')
		last = http.CanonicalHeaderKey(line[:i])
		v := strings.Trim(line[i+1:], " \t")
		if vs, ok := resp.Header[last]; ok {
			resp.Header[last] = append(vs, v)
			continue
		}
		values[0] = v
		resp.Header[last], values = values[:1:1], values[1:]
	}
	return resp, nil
}

// checkField refuses a header line readHead could not read: a name that
// is not a token before its colon, a value with control bytes, or a folded
// line (obsolete, but read) that continues no field (first: it would be
// the section's first).
func checkField(line []byte, first bool) error {
	if line[0] == ' ' || line[0] == '\t' {
		if first || !validValue(line) {
			return fmt.Errorf("h1: malformed folded header line %q", truncate(line))
		}
		return nil
	}
	i := bytes.IndexByte(line, ':')
	if i <= 0 || !isToken(line[:i]) || !validValue(line[i+1:]) {
		return fmt.Errorf("h1: malformed header line %q", truncate(line))
	}
	return nil
}

// maxKeptHead bounds the buffer a connection keeps for the next answer's
// head: an answer with a huge head does not make every later one hold it.
const maxKeptHead = 16 << 10

// parseStatus reads "HTTP/1.x NNN reason" into resp.
func parseStatus(s string, resp *http.Response) error {
	minor, code, ok := statusLine(s)
	if !ok {
		return fmt.Errorf("h1: malformed status line %q", truncate(s))
	}
	resp.Status = s[len("HTTP/1.x "):]
	resp.StatusCode = code
	resp.Proto = s[:len("HTTP/1.x")]
	resp.ProtoMajor, resp.ProtoMinor = 1, minor
	return nil
}

// statusLine reads "HTTP/1.x NNN reason" (the reason may be missing, or
// empty after its space): the minor version, 0 or 1, and the three-digit
// code, at least 100. Generic so that Arrived reads the bytes it looked
// at without a string made of them.
func statusLine[T string | []byte](s T) (minor, code int, ok bool) {
	if len(s) < len("HTTP/1.x NNN") || string(s[:len("HTTP/1.")]) != "HTTP/1." || s[7] != '0' && s[7] != '1' ||
		s[8] != ' ' || len(s) > 12 && s[12] != ' ' {
		return 0, 0, false
	}
	for i := 9; i < 12; i++ {
		d := s[i]
		if d < '0' || d > '9' {
			return 0, 0, false
		}
		code = 10*code + int(d-'0')
	}
	return int(s[7] - '0'), code, code >= 100
}

// readLine reads one line of an answer's head, without its CRLF (or bare
// LF), spending budget; the slice is valid until the next read.
func (c *conn) readLine(budget *int) ([]byte, error) {
	line, _, err := c.readLineEnd(budget)
	return line, err
}

// readLineEnd is readLine, also saying whether the line ended in CRLF.
func (c *conn) readLineEnd(budget *int) (line []byte, crlf bool, err error) {
	line, err = c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// Longer than the buffer: gather it, still within the budget.
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= *budget {
			line, err = c.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	*budget -= len(line)
	if *budget < 0 {
		return nil, false, fmt.Errorf("h1: a line of the answer is over its bound (%d bytes)", len(line))
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, false, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1], true, nil
	}
	return line, false, nil
}

// truncate is a bad line as an error quotes it.
func truncate[T string | []byte](line T) string {
	if len(line) > 80 {
		return string(line[:80]) + "…"
	}
	return string(line)
}
