package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxAnswerHead bounds an answer's head for the open-loop client: a null
// sink's is under a hundred bytes.
const maxAnswerHead = 64 << 10

// answer is what the open-loop client needs of an HTTP/1.1 answer.
type answer struct {
	status int
	size   int  // the whole answer's length in bytes; 0 = not all there yet
	close  bool // the server will close the connection after it
}

// parseAnswer frames the answer at the start of b: its status, and its
// length once b holds all of it (size 0 until then). It frames only what
// a null sink sends (a final answer whose body is delimited by
// Content-Length, or has none), and refuses every other framing (1xx,
// Transfer-Encoding, no Content-Length where a body may follow,
// conflicting lengths, a line ended by a bare LF) as an error rather than
// guess: the open-loop reference never counts an answer it could have
// misread, nor waits for more of one that another client would have read
// whole.
func parseAnswer(b []byte) (answer, error) {
	var a answer
	end := bytes.Index(b, []byte("\r\n\r\n"))
	head, bound := b, maxAnswerHead+3 // an unended head may hold the first three bytes of its end
	if end >= 0 {
		head, bound = b[:end], maxAnswerHead
	}
	if len(head) > bound {
		return a, fmt.Errorf("answer head over %d bytes", maxAnswerHead)
	}
	for i, c := range head {
		if c == '\n' && (i == 0 || head[i-1] != '\r') {
			return a, errors.New("a line of the answer's head ends in a bare LF")
		}
	}
	if end < 0 {
		return a, nil // not all there yet
	}
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	proto, code, ok := bytes.Cut(line, []byte(" "))
	http10 := string(proto) == "HTTP/1.0"
	if !ok || !fieldValue(line) || !http10 && string(proto) != "HTTP/1.1" ||
		len(code) < 3 || len(code) > 3 && code[3] != ' ' {
		return a, fmt.Errorf("bad status line %q", line)
	}
	for _, d := range code[:3] {
		if d < '0' || d > '9' {
			return a, fmt.Errorf("bad status line %q", line)
		}
		a.status = 10*a.status + int(d-'0')
	}
	if a.status < 200 {
		return a, fmt.Errorf("status %d: interim or invalid answers are not framed here", a.status)
	}
	length := -1
	var lengthText []byte
	hasClose, hasKeepAlive := false, false
	for len(rest) > 0 {
		var field []byte
		field, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(field, []byte(":"))
		value = bytes.Trim(value, " \t")
		if !ok || !isToken(name) || !fieldValue(value) {
			return a, fmt.Errorf("bad header line %q", field)
		}
		switch {
		case asciiEqualFold(name, "Content-Length"):
			// Several fields must say the same, as text (net/http's rule).
			if lengthText != nil {
				if !bytes.Equal(value, lengthText) {
					return a, errors.New("conflicting Content-Length fields")
				}
				continue
			}
			n, err := strconv.ParseUint(string(value), 10, strconv.IntSize-1) // an int, on every architecture
			if err != nil {
				return a, fmt.Errorf("bad Content-Length %q", value)
			}
			length, lengthText = int(n), value
		case asciiEqualFold(name, "Transfer-Encoding"):
			return a, errors.New("a Transfer-Encoding answer is not framed here")
		case asciiEqualFold(name, "Connection"):
			for _, tok := range bytes.Split(value, []byte(",")) {
				tok = bytes.Trim(tok, " \t")
				hasClose = hasClose || asciiEqualFold(tok, "close")
				hasKeepAlive = hasKeepAlive || asciiEqualFold(tok, "keep-alive")
			}
		}
	}
	// HTTP/1.0 closes unless it says keep-alive; a close anywhere wins.
	a.close = hasClose || http10 && !hasKeepAlive
	switch {
	case a.status == 204 && length > 0:
		return a, errors.New("a 204 answer with a Content-Length") // RFC 9110 §8.6 forbids it
	case a.status == 204 || a.status == 304:
		length = 0 // a 304's Content-Length is the representation's, not a body's
	case length < 0:
		return a, errors.New("no Content-Length: an answer delimited by the close is not framed here")
	}
	// Compared so, a length near the largest int cannot overflow the sum.
	if length <= len(b)-end-4 {
		a.size = end + 4 + length
	}
	return a, nil
}

// asciiEqualFold reports whether b is s, ASCII case folded.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// isToken reports whether b is an HTTP token (RFC 9110 §5.6.2), what a
// field's name must be.
func isToken(b []byte) bool {
	for _, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return len(b) > 0
}

// fieldValue reports whether b may be a field's value: no control
// character but the tab.
func fieldValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
