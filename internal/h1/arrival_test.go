package h1

import (
	"errors"
	"io"
	"testing"
)

// TestArrival: the dispatcher reads an answer itself only when arrival
// says the bytes there are exactly one answer, framed so plainly that Read
// needs nothing more; what more bytes would complete is a part, and
// anything else is Read's to tell (on a worker, which may wait).
func TestArrival(t *testing.T) {
	for _, c := range []struct {
		name string
		got  string
		full bool // the bytes filled the caller's buffer
		head bool // the answer is to a HEAD
		want Arrival
	}{
		// The answer a federating server gives an inbox POST.
		{"202 with a body", "HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok", false, false, ArrivedWhole},
		// Mastodon's: nothing in the body.
		{"202 empty", "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nDate: x\r\n\r\n", false, false, ArrivedWhole},
		// Field names in any case, the value with blanks around it.
		{"lower-case length", "HTTP/1.1 202 \r\ncontent-length:  2 \r\n\r\nok", false, false, ArrivedWhole},
		// No reason phrase at all.
		{"no reason", "HTTP/1.1 401\r\nContent-Length: 0\r\n\r\n", false, false, ArrivedWhole},
		// A 204 has no body whatever it says.
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", false, false, ArrivedWhole},
		// Nor has an answer to a HEAD.
		{"HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", false, true, ArrivedWhole},
		// Nothing of the head's end yet.
		{"head short", "HTTP/1.1 202 Accepted\r\nContent-Len", false, false, ArrivedPart},
		// The head, not all the body.
		{"body short", "HTTP/1.1 202 Accepted\r\nContent-Length: 5\r\n\r\nok", false, false, ArrivedPart},
		// A head longer than the caller's buffer.
		{"head fills the buffer", "HTTP/1.1 202 Accepted\r\nX: yyyyy", true, false, ArrivedUnsure},
		// A body that would not fit it.
		{"body past the buffer", "HTTP/1.1 202 Accepted\r\nContent-Length: 500\r\n\r\nok", true, false, ArrivedUnsure},
		// Bytes past the answer: Read's to refuse or not.
		{"bytes after", "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\nHTTP", false, false, ArrivedUnsure},
		// A chunked body.
		{"chunked", "HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false, false, ArrivedUnsure},
		// A body the server's close ends.
		{"close-delimited", "HTTP/1.1 200 OK\r\n\r\nok", false, false, ArrivedUnsure},
		// An interim answer before the final one.
		{"100 Continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", false, false, ArrivedUnsure},
		// Two lengths, even equal ones.
		{"two lengths", "HTTP/1.1 202 A\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n", false, false, ArrivedUnsure},
		// A length that is no number.
		{"bad length", "HTTP/1.1 202 A\r\nContent-Length: 0, 0\r\n\r\n", false, false, ArrivedUnsure},
		// A field line with no colon.
		{"no colon", "HTTP/1.1 202 A\r\nContent-Length 0\r\n\r\n", false, false, ArrivedUnsure},
		// A line ended by a bare LF, which Read takes as an end too.
		{"bare LF", "HTTP/1.0 200 \n\n", false, false, ArrivedUnsure},
		// Not an HTTP/1.x status line.
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", false, false, ArrivedUnsure},
		// A version Read refuses: not whole, though framed as one.
		{"HTTP/1.2", "HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n", false, false, ArrivedUnsure},
		// A status that is no number.
		{"bad status", "HTTP/1.1 2x2 A\r\nContent-Length: 0\r\n\r\n", false, false, ArrivedUnsure},
	} {
		if got := arrival([]byte(c.got), c.full, c.head); got != c.want {
			t.Errorf("%s: arrival(%q) = %d, want %d", c.name, c.got, got, c.want)
		}
	}
}

// FuzzArrivalNeverWaits holds arrival to Read: bytes it calls one whole
// answer, Read reads from them alone, to their last byte, without asking
// for more; and bytes it calls a part are not yet an answer Read could
// read (so the dispatcher waits for more rather than handing it over).
func FuzzArrivalNeverWaits(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 202 Accepted\r\nContent-Length: 5\r\n\r\nok",
		"HTTP/1.1 202 \r\nContent-Length: 0\r\n X: folded\r\n\r\n",
		"HTTP/1.0 202 A\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx",
	} {
		f.Add([]byte(s))
	}
	tr := NewTransport(Options{})
	f.Fuzz(func(t *testing.T, got []byte) {
		switch arrival(got, false, false) {
		case ArrivedWhole:
			rest, err := readsWhole(tr, got)
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("arrival called %q whole, but Read wanted more: %v", got, err)
			}
			if err == nil && rest != 0 {
				t.Fatalf("arrival called %q whole, but Read left %d bytes of it", got, rest)
			}
		case ArrivedPart:
			if _, err := readsWhole(tr, got); err == nil {
				t.Fatalf("arrival called %q a part, but Read read an answer from it", got)
			}
		}
	})
}

// readsWhole reads got as Read reads an answer to a POST, body and all,
// and returns how many of its bytes were left unread.
func readsWhole(tr *Transport, got []byte) (int, error) {
	_, _, rest, err := readRaw(tr, got)
	return rest, err
}
