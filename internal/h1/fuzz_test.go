package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"testing"
)

// h1Answer reads raw as h1 reads an answer to a POST: its final status
// and its body.
func h1Answer(t *Transport, raw []byte) (int, []byte, error) {
	status, body, _, err := readRaw(t, raw)
	return status, body, err
}

// readRaw reads raw as h1 reads an answer to a POST, its body to the end,
// and returns its final status, its body and how many of raw's bytes
// were left unread.
func readRaw(t *Transport, raw []byte) (status int, got []byte, rest int, err error) {
	a, b := net.Pipe() // what the connection closes when the answer ends
	defer b.Close()
	src := bytes.NewReader(raw)
	c := &conn{raw: a, nc: a, r: bufio.NewReader(src)}
	req, _ := http.NewRequest(http.MethodPost, "http://sut.test/inbox", nil)
	resp, err := c.readAnswer(askedOf(req))
	if err != nil {
		c.close()
		return 0, nil, 0, err
	}
	bd := resp.Body.(*body)
	bd.t, bd.key, bd.stop, bd.ctx = t, poolKey{"http", "sut.test:80"}, func() bool { return true }, context.Background()
	if bd.done {
		bd.finish()
	}
	got, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, got, src.Len() + c.r.Buffered(), err
}

// netHTTPAnswer reads raw as net/http's transport reads an answer to a
// POST: http.ReadResponse past at most five interim (1xx) answers.
func netHTTPAnswer(raw []byte) (int, []byte, error) {
	br := bufio.NewReader(bytes.NewReader(raw))
	req, _ := http.NewRequest(http.MethodPost, "http://sut.test/inbox", nil)
	for n := 0; ; n++ {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return 0, nil, err
		}
		if code := resp.StatusCode; code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
			if n >= max1xx {
				return 0, nil, errors.New("too many 1xx")
			}
			continue
		}
		got, err := io.ReadAll(resp.Body)
		return resp.StatusCode, got, err
	}
}

// FuzzAnswerMatchesNetHTTP keeps h1's reading of answers equal to
// net/http's, the library it replaces on the send path: whatever h1 reads
// without error, net/http reads too, with the same status and body (h1
// may refuse what net/http would take, such as a version other than
// HTTP/1.x or a status under 100; it never reads an answer otherwise).
func FuzzAnswerMatchesNetHTTP(f *testing.F) {
	for _, s := range []string{
		ok2,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nto the end",
		"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabcdef",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 204 No Content\r\nContent-Length: 4\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n1\r\nx\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	tr := NewTransport(Options{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		status, got, err := h1Answer(tr, raw)
		if err != nil {
			return
		}
		wantStatus, want, werr := netHTTPAnswer(raw)
		if werr != nil || status != wantStatus || !bytes.Equal(got, want) {
			t.Errorf("%q: h1 read %d %q; net/http %d %q, %v", raw, status, got, wantStatus, want, werr)
		}
	})
}

// FuzzParseArrived: of an answer Arrived finds whole, parseArrived reads
// what Read reads (the status, the fields kept, the body's length,
// whether the connection is kept) and refuses what Read refuses, or
// leaves it to Read (ErrNotPlain).
func FuzzParseArrived(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nX-RateLimit-Remaining: 3\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 429 Too Many Requests\r\nretry-after: 2\r\nRetry-After: 3\r\nContent-Length: 1\r\n\r\n!",
		"HTTP/1.1 202 Accepted\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 202 Accepted\r\nX-A: 1\r\n folded: 2\r\nContent-Length: 0\r\n\r\n",
	} {
		f.Add([]byte(seed), false, false)
	}
	keep := func(name []byte) bool {
		return bytes.EqualFold(name, []byte("Retry-After")) || bytes.HasPrefix(bytes.ToLower(name), []byte("x-ratelimit-"))
	}
	f.Fuzz(func(t *testing.T, got []byte, head, closeAsked bool) {
		if arrival(got, false, head) != ArrivedWhole {
			return
		}
		a := asked{head: head, close: closeAsked}
		ans, keepAlive, err := parseArrived(got, a, keep)
		if err == ErrNotPlain {
			// Only for a folded line, which Read reads.
			head, _, _ := bytes.Cut(got, []byte("\r\n\r\n"))
			if !bytes.Contains(head, []byte("\r\n ")) && !bytes.Contains(head, []byte("\r\n\t")) {
				t.Fatalf("parseArrived left %q to Read, which has no folded line", got)
			}
			return
		}
		c := &conn{r: bufio.NewReader(bytes.NewReader(got))}
		resp, rerr := c.readAnswer(a)
		if (err != nil) != (rerr != nil) {
			t.Fatalf("parseArrived: %v; Read: %v", err, rerr)
		}
		if err != nil {
			return
		}
		want := Answer{Status: resp.StatusCode, BodyLen: max(resp.ContentLength, 0)}
		for k, v := range resp.Header {
			if keep([]byte(k)) {
				if want.Header == nil {
					want.Header = http.Header{}
				}
				want.Header[k] = v
			}
		}
		if !reflect.DeepEqual(ans, want) {
			t.Errorf("parseArrived read %+v, Read %+v", ans, want)
		}
		if keepAlive == resp.Close {
			t.Errorf("parseArrived keeps the connection %v, Read %v", keepAlive, !resp.Close)
		}
	})
}
