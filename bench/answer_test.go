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
		want answer // size: of the whole input unless 0 (not all there)
		err  string // a part of the error; "" = none
	}{
		// What the null sink sends: whole, kept alive.
		{"null sink", "HTTP/1.1 202 Accepted\r\nDate: x\r\nContent-Length: 0\r\n\r\n", answer{status: 202, size: -1}, ""},
		// A body is part of the answer; the field's name in any case.
		{"body", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", answer{status: 200, size: -1}, ""},
		// Not all there: the head, then the body, arrives in parts.
		{"head in parts", "HTTP/1.1 202 Accepted\r\nContent-Len", answer{}, ""},
		{"body in parts", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", answer{status: 200}, ""},
		// The server says it will close, in a list, or by speaking 1.0.
		{"close", "HTTP/1.1 503 Busy\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", answer{status: 503, size: -1, close: true}, ""},
		{"1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", answer{status: 200, size: -1, close: true}, ""},
		{"1.0 kept alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", answer{status: 200, size: -1}, ""},
		// 204 and 304 have no body, whatever follows.
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", answer{status: 204, size: -1}, ""},
		// Framings the reference refuses rather than guess.
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", answer{}, "Transfer-Encoding"},
		{"no length", "HTTP/1.1 200 OK\r\n\r\n", answer{}, "no Content-Length"},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", answer{}, "conflicting"},
		{"signed length", "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx", answer{}, "bad Content-Length"},
		{"interim", "HTTP/1.1 100 Continue\r\n\r\n", answer{}, "interim"},
		{"204 with a body", "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc", answer{}, "with a body"},
		// Not HTTP/1.x at all.
		{"status line", "HTTP/2 200\r\n\r\n", answer{}, "bad status line"},
		{"status code", "HTTP/1.1 2x2 Accepted\r\n\r\n", answer{}, "bad status line"},
		{"header line", "HTTP/1.1 200 OK\r\nno colon\r\nContent-Length: 0\r\n\r\n", answer{}, "bad header line"},
		{"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n", answer{}, "bad header line"},
		// A head that never ends is refused once it passes the bound.
		{"endless head", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxAnswerHead), answer{}, "over"},
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
// the same decision to close.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
		"HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabcdef",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseAnswer(b)
		if err != nil || a.size == 0 {
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b[:a.size])), &http.Request{Method: http.MethodPost})
		if err != nil {
			t.Fatalf("framed as %+v, but net/http: %v", a, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("framed as %+v, but net/http reading the body: %v", a, err)
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
