package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want answer // size -1: the whole input; 0: not all there yet
		err  string // a part of the error; "" = none
	}{
		// What the null sink sends: whole, kept alive.
		{"null sink", "HTTP/1.1 202 Accepted\r\nDate: x\r\nContent-Length: 0\r\n\r\n", answer{status: 202, size: -1}, ""},
		// A body is part of the answer; the field's name in any case.
		{"body", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", answer{status: 200, size: -1}, ""},
		// The head arrives in parts: wait.
		{"head in parts", "HTTP/1.1 202 Accepted\r\nContent-Len", answer{}, ""},
		// The body arrives in parts: wait.
		{"body in parts", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", answer{status: 200}, ""},
		// A body may hold any byte, line feeds included.
		{"body with lines", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\na\nb", answer{status: 200, size: -1}, ""},
		// A head of exactly the bound is read; one byte more is refused.
		{"head at the bound", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: " + strings.Repeat("a", maxAnswerHead-len("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: ")) + "\r\n\r\n", answer{status: 200, size: -1}, ""},
		{"head past the bound", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: " + strings.Repeat("a", maxAnswerHead+1-len("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: ")) + "\r\n\r\n", answer{}, "over"},
		// A head at the bound, its end not all there yet: wait.
		{"head at the bound, ending", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: " + strings.Repeat("a", maxAnswerHead-len("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: ")) + "\r\n\r", answer{}, ""},
		// A length no answer could reach is waited for, not overflowed.
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nok", answer{status: 200}, ""},
		// Two fields saying the same length are one.
		{"same length twice", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", answer{status: 200, size: -1}, ""},
		// The server says it will close, in a list.
		{"close", "HTTP/1.1 503 Busy\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", answer{status: 503, size: -1, close: true}, ""},
		// HTTP/1.0 closes unless it says keep-alive...
		{"1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", answer{status: 200, size: -1, close: true}, ""},
		{"1.0 kept alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", answer{status: 200, size: -1}, ""},
		// ...and a close beside keep-alive wins, in either order.
		{"1.0 close and keep-alive", "HTTP/1.0 200 OK\r\nConnection: close, keep-alive\r\nContent-Length: 0\r\n\r\n", answer{status: 200, size: -1, close: true}, ""},
		// 204 and 304 have no body; a 304 may name its representation's length.
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", answer{status: 204, size: -1}, ""},
		{"304 with a length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n", answer{status: 304, size: -1}, ""},
		// Framings the reference refuses rather than guess.
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", answer{}, "Transfer-Encoding"},
		{"no length", "HTTP/1.1 200 OK\r\n\r\n", answer{}, "no Content-Length"},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", answer{}, "conflicting"},
		{"one length written twice", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 01\r\n\r\nx", answer{}, "conflicting"},
		{"signed length", "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx", answer{}, "bad Content-Length"},
		{"interim", "HTTP/1.1 100 Continue\r\n\r\n", answer{}, "interim"},
		{"204 with a length", "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc", answer{}, "204 answer with a Content-Length"},
		// A bare LF ends a line for net/http: refused, never waited on.
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", answer{}, "bare LF"},
		// Not HTTP/1.x at all.
		{"status line", "HTTP/2 200\r\n\r\n", answer{}, "bad status line"},
		{"status code", "HTTP/1.1 2x2 Accepted\r\n\r\n", answer{}, "bad status line"},
		{"header line", "HTTP/1.1 200 OK\r\nno colon\r\nContent-Length: 0\r\n\r\n", answer{}, "bad header line"},
		{"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n", answer{}, "bad header line"},
		// A head longer than the bound is refused, ended or not.
		{"endless head", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxAnswerHead), answer{}, "over"},
		{"long head", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxAnswerHead) + "\r\nContent-Length: 0\r\n\r\n", answer{}, "over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAnswer([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want.size < 0 {
				want.size = len(tc.in)
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// FuzzParseAnswer: whatever the open-loop client frames as a whole answer,
// net/http's client reads alike: the same status, the same length, and
// the same decision to close; and whatever it waits on, net/http cannot
// read whole either.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
		"HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabcdef",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok",
		"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseAnswer(b)
		if err != nil {
			return
		}
		whole := b
		if a.size > 0 {
			whole = b[:a.size]
		}
		resp, rerr := http.ReadResponse(bufio.NewReader(bytes.NewReader(whole)), &http.Request{Method: http.MethodPost})
		var body []byte
		if rerr == nil {
			body, rerr = io.ReadAll(resp.Body)
		}
		if a.size == 0 {
			if rerr == nil {
				t.Fatalf("waits for more, but net/http read a whole answer (status %d, %d bytes of body)", resp.StatusCode, len(body))
			}
			return
		}
		if rerr != nil {
			t.Fatalf("framed as %+v, but net/http: %v", a, rerr)
		}
		if resp.StatusCode != a.status {
			t.Errorf("status %d, net/http %d", a.status, resp.StatusCode)
		}
		if head := bytes.Index(b, []byte("\r\n\r\n")) + 4; len(body) != a.size-head {
			t.Errorf("body of %d bytes, net/http %d", a.size-head, len(body))
		}
		if resp.Close != a.close {
			t.Errorf("close %v, net/http %v", a.close, resp.Close)
		}
	})
}
