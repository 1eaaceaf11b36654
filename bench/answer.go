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
// conflicting lengths) as an error rather than guess: the open-loop
// reference never counts an answer it could have misread.
func parseAnswer(b []byte) (answer, error) {
	var a answer
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) > maxAnswerHead {
			return a, fmt.Errorf("answer head over %d bytes", maxAnswerHead)
		}
		return a, nil
	}
	head := b[:end]
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	proto, code, ok := bytes.Cut(line, []byte(" "))
	switch {
	case !ok || !fieldValue(line):
		return a, fmt.Errorf("bad status line %q", line)
	case string(proto) == "HTTP/1.0":
		a.close = true
	case string(proto) != "HTTP/1.1":
		return a, fmt.Errorf("bad status line %q", line)
	}
	if len(code) < 3 || (len(code) > 3 && code[3] != ' ') {
		return a, fmt.Errorf("bad status line %q", line)
	}
	for _, d := range code[:3] {
		if d < '0' || d > '9' {
			return a, fmt.Errorf("bad status line %q", line)
		}
		a.status = 10*a.status + int(d-'0')
	}
	if a.status < 200 || a.status > 999 {
		return a, fmt.Errorf("status %d: interim or invalid answers are not framed here", a.status)
	}
	length := -1
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
			n, err := strconv.ParseUint(string(value), 10, 63)
			if err != nil || len(value) == 0 || value[0] == '+' {
				return a, fmt.Errorf("bad Content-Length %q", value)
			}
			if length >= 0 && int(n) != length {
				return a, errors.New("conflicting Content-Length fields")
			}
			length = int(n)
		case asciiEqualFold(name, "Transfer-Encoding"):
			return a, errors.New("a Transfer-Encoding answer is not framed here")
		case asciiEqualFold(name, "Connection"):
			for _, tok := range bytes.Split(value, []byte(",")) {
				tok = bytes.Trim(tok, " \t")
				switch {
				case asciiEqualFold(tok, "close"):
					a.close = true
				case asciiEqualFold(tok, "keep-alive") && string(proto) == "HTTP/1.0":
					a.close = false
				}
			}
		}
	}
	switch {
	case a.status == 204 || a.status == 304:
		if length > 0 {
			return a, fmt.Errorf("a %d answer with a body", a.status)
		}
		length = 0
	case length < 0:
		return a, errors.New("no Content-Length: an answer delimited by the close is not framed here")
	}
	if total := end + 4 + length; len(b) >= total {
		a.size = total
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
