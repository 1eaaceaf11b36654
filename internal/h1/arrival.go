// What has arrived of a written request's answer, seen without waiting
// for it: the flood's dispatcher watches the sockets of the requests it
// wrote and reads an answer itself only once the whole of it is there, so
// that reading it never waits.

package h1

import (
	"bytes"
	"errors"
	"net/http"
)

// Arrival is how much of a written request's answer Arrived saw.
type Arrival int

const (
	// ArrivedPart: not all of the answer is there yet, and it is one that
	// the bytes to come would make whole (a head still short of its end,
	// or a body short of its Content-Length).
	ArrivedPart Arrival = iota
	// ArrivedWhole: exactly one whole answer is there, framed by a
	// Content-Length (or by having no body), so Read, or ReadArrived
	// from the bytes looked at, reads it without waiting on the network.
	ArrivedWhole
	// ArrivedUnsure: anything else: the server closed the connection or
	// the socket failed, an interim (1xx) answer, a chunked or
	// close-delimited body, framing fields Read would refuse, bytes past
	// the answer, or an answer larger than the caller's buffer. Read
	// knows what to make of it, and may wait for it.
	ArrivedUnsure
)

// Socket is the connection of a Written as an event loop watches it: its
// file descriptor (h1's, open until the connection closes; the loop must
// not close it), and a value equal for two Writtens exactly when they
// are on the same connection (a descriptor is reused once its connection
// closes).
type Socket struct {
	FD   int
	conn *conn
}

// arrival judges got, the bytes arrived of an answer to a request (a
// HEAD when head), full when they filled the caller's buffer. It claims
// ArrivedWhole only for the plainest framing, which Read reads exactly as
// net/http does: a final status, at most one Content-Length (or none, on
// a 204, a 304 or an answer to a HEAD), no Transfer-Encoding, and the
// bytes ending exactly where that length does.
func arrival(got []byte, full, head bool) Arrival {
	end := bytes.Index(got, []byte("\r\n\r\n"))
	seen := got
	if end >= 0 {
		seen = got[:end+4]
	}
	if bytes.Count(seen, []byte("\n")) != bytes.Count(seen, []byte("\r\n")) {
		// A line ended by a bare LF, which Read takes as an end too.
		return ArrivedUnsure
	}
	if end < 0 {
		if full || len(got) > maxHeadBytes {
			return ArrivedUnsure
		}
		return ArrivedPart
	}
	headLen := end + 4
	// Line by line with Cut, not Split: the dispatcher looks at every
	// answer it awaits, and Split would allocate each time.
	first, rest, _ := bytes.Cut(got[:end], []byte("\r\n"))
	_, status, ok := statusLine(first)
	if !ok || status < 200 {
		return ArrivedUnsure
	}
	length, lengths := int64(0), 0
	for more := len(rest) > 0; more; {
		var l []byte
		l, rest, more = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			return ArrivedUnsure
		}
		switch {
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return ArrivedUnsure
		case bytes.EqualFold(name, []byte("Content-Length")):
			// Read's own parse, so that a length it would refuse ("+5")
			// is never called whole.
			n, err := contentLength([]string{string(value)})
			if err != nil || lengths > 0 {
				return ArrivedUnsure
			}
			length, lengths = n, 1
		}
	}
	bodyless := head || status == 204 || status == 304
	if lengths == 0 && !bodyless {
		return ArrivedUnsure // delimited by the server's close
	}
	if bodyless {
		length = 0
	}
	switch want := int64(headLen) + length; {
	case int64(len(got)) == want:
		return ArrivedWhole
	case int64(len(got)) > want || full:
		return ArrivedUnsure
	}
	return ArrivedPart
}

// Answer is an answer ReadArrived read: its status, the header fields
// its caller kept (nil when none), and its body's length.
type Answer struct {
	Status  int
	Header  http.Header
	BodyLen int64
}

// ErrNotPlain is ReadArrived's error for an answer it leaves to Read,
// having taken nothing off the connection: one with an obsolete folded
// field line, bytes that are not one whole answer, one on a connection
// that is no socket, that is closed, whose deadline has passed, whose
// buffer holds bytes already, or that a wait put back in the runtime's
// poller, and any off Linux.
var ErrNotPlain = errors.New("h1: an answer Read is to read")

// parseArrived reads got, which arrival calls one whole answer (its
// caller sees to it: the framing is not checked again), to a request
// asked so, as Read reads one: its status, the fields keep keeps, its
// body's length, and whether the connection may carry another request
// after it; or Read's refusal of it; or ErrNotPlain for an obsolete
// folded line, which it leaves to Read.
func parseArrived(got []byte, asked asked, keep func(name []byte) bool) (Answer, bool, error) {
	end := bytes.Index(got, []byte("\r\n\r\n"))
	if end < 0 {
		return Answer{}, false, ErrNotPlain
	}
	first, rest, _ := bytes.Cut(got[:end], []byte("\r\n"))
	minor, status, ok := statusLine(first)
	if !ok || status < 200 {
		return Answer{}, false, ErrNotPlain
	}
	a := Answer{Status: status, BodyLen: int64(len(got) - end - 4)}
	keepAlive, sawKeepAlive := !asked.close, false
	var bad error
	for fields := 0; len(rest) > 0 && bad == nil; fields++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		if line[0] == ' ' || line[0] == '\t' {
			return Answer{}, false, ErrNotPlain
		}
		// What Read refuses is refused here too.
		if bad = checkField(line, fields == 0); bad != nil {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.Trim(value, " \t")
		if bytes.EqualFold(name, []byte("Connection")) {
			for token := range bytes.SplitSeq(value, []byte(",")) {
				switch token = bytes.TrimSpace(token); {
				case bytes.EqualFold(token, []byte("close")):
					keepAlive = false
				case bytes.EqualFold(token, []byte("keep-alive")):
					sawKeepAlive = true
				}
			}
		}
		if keep != nil && keep(name) {
			if a.Header == nil {
				a.Header = http.Header{}
			}
			key := http.CanonicalHeaderKey(string(name))
			a.Header[key] = append(a.Header[key], string(value))
		}
	}
	if minor == 0 && !sawKeepAlive {
		keepAlive = false
	}
	if asked.head || status == http.StatusNoContent || status == http.StatusNotModified {
		a.BodyLen = 0
	}
	if bad != nil {
		return Answer{}, false, bad
	}
	return a, keepAlive, nil
}
