package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestArrivedOnASocket: on a real connection, Arrived sees a part while
// the server has sent half its answer and the whole once it has sent the
// rest, taking what it saw off the socket for the connection to hold:
// Read then reads the whole answer, after a whole or after a part, but
// not once the send's deadline has passed; a TLS connection has no
// Socket to watch.
func TestArrivedOnASocket(t *testing.T) {
	sent, next := make(chan string, 2), make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			for i, part := range strings.Split(strings.ReplaceAll(req.Header.Get("X-Parts"), "~", "\r\n"), "|") {
				if i > 0 {
					<-next // the test has seen the part before
				}
				_, _ = io.WriteString(c, part)
				sent <- part
			}
		}
	}()
	tr := NewTransport(Options{})
	defer tr.CloseIdleConnections()
	post := func(parts string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/inbox", strings.NewReader("{}"))
		req.Header.Set("X-Parts", strings.ReplaceAll(parts, "\r\n", "~")) // a field value holds no CRLF
		return req
	}
	// The first request dials, so that a connection rests for Write.
	resp, err := tr.RoundTrip(post("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	<-sent
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	w, ok, err := tr.Write(post("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\no|k"), 0, time.Now().Add(5*time.Second))
	if !ok || err != nil {
		t.Fatalf("Write on the resting connection: ok %v, %v", ok, err)
	}
	s, ok := w.Socket()
	if !ok || s.FD < 0 {
		t.Fatalf("a plain connection has no socket: %+v %v", s, ok)
	}
	buf := make([]byte, 4096)
	<-sent
	// The part is in the socket before Arrived looks: nothing at all
	// would say a part too.
	head := len("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\no")
	for deadline := time.Now().Add(time.Second); peekLen(s.FD, buf) < head && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got, _ := w.Arrived(buf); got != ArrivedPart {
		t.Fatalf("half an answer arrived: %d, want a part", got)
	}
	next <- struct{}{}
	<-sent
	if got := waitArrival(w, buf, ArrivedWhole); got != ArrivedWhole {
		t.Fatalf("the whole answer arrived: %d, want whole", got)
	}
	// Arrived took the answer off the socket (one system call, where a
	// peek and a read made two); the connection holds it for Read.
	if n := peekLen(s.FD, buf); n != 0 {
		t.Fatalf("%d bytes of the answer left on the socket after Arrived, want them held", n)
	}
	readsOK := func(w Written, what string) {
		t.Helper()
		resp, err := tr.Read(context.Background(), w)
		if err != nil {
			t.Fatalf("Read %s: %v", what, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || string(body) != "ok" {
			t.Fatalf("Read %s: %d %q, want 202 \"ok\"", what, resp.StatusCode, body)
		}
	}
	readsOK(w, "after Arrived saw the whole")

	// The next request on the rested connection, once the server has sent
	// the first part of its answer.
	writeRested := func(parts string) Written {
		t.Helper()
		w, ok, err := tr.Write(post(parts), 0, time.Now().Add(5*time.Second))
		if !ok || err != nil {
			t.Fatalf("Write on the rested connection: ok %v, %v", ok, err)
		}
		if _, ok := w.Socket(); !ok {
			t.Fatal("no socket")
		}
		<-sent
		return w
	}

	// A part Arrived took, then left to Read: Read reads it first and
	// waits for the rest.
	w = writeRested("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\no|k")
	for deadline := time.Now().Add(time.Second); peekLen(s.FD, buf) < head && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got, n := w.Arrived(buf); got != ArrivedPart || n != head {
		t.Fatalf("half an answer arrived: %d (%d bytes looked at), want a part of %d", got, n, head)
	}
	if n := peekLen(s.FD, buf); n != 0 {
		t.Fatalf("%d bytes of the part left on the socket after Arrived, want them held", n)
	}
	next <- struct{}{}
	readsOK(w, "after Arrived saw a part")
	<-sent

	// A part, then the rest a while after: ArrivedAt is the rest's
	// arrival, the last bytes', not the part's.
	w = writeRested("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\no|k")
	for deadline := time.Now().Add(time.Second); peekLen(s.FD, buf) < head && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got, _ := w.Arrived(buf); got != ArrivedPart {
		t.Fatalf("half an answer arrived: %d, want a part", got)
	}
	partAt, _ := w.ArrivedAt()
	const between = 30 * time.Millisecond
	time.Sleep(between)
	restSent := time.Now()
	next <- struct{}{}
	<-sent
	if got := waitArrival(w, buf, ArrivedWhole); got != ArrivedWhole {
		t.Fatalf("the whole answer arrived: %d, want whole", got)
	}
	if at, ok := w.ArrivedAt(); !ok || at.Before(restSent.Add(-time.Millisecond)) || at.Sub(partAt) < between {
		t.Fatalf("the answer's last bytes received at %v (%v after its part), want after the rest was sent at %v",
			at.Format(time.StampMicro), at.Sub(partAt), restSent.Format(time.StampMicro))
	}
	readsOK(w, "after a part and the rest")

	// An answer looked at well after it arrived: ArrivedAt is when the
	// kernel received it (the server's write on the loopback delivers it
	// before the write returns), not when Arrived looked; once Read has
	// taken the bytes, it tells nothing.
	if !s.Stamped() {
		t.Fatal("the kernel does not stamp a plain TCP socket's arrivals")
	}
	before := time.Now()
	w = writeRested("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok")
	written := time.Now()
	const aside = 50 * time.Millisecond
	time.Sleep(aside)
	if got := waitArrival(w, buf, ArrivedWhole); got != ArrivedWhole {
		t.Fatalf("the whole answer arrived: %d, want whole", got)
	}
	looked := time.Now()
	at, ok := w.ArrivedAt()
	switch {
	case !ok:
		t.Fatal("no receive stamp for an answer Arrived took")
	case at.Before(before.Add(-time.Millisecond)) || at.After(written.Add(20*time.Millisecond)):
		t.Fatalf("received at %v, want between the request's write %v and the server's write returning %v",
			at.Format(time.StampMicro), before.Format(time.StampMicro), written.Format(time.StampMicro))
	case looked.Sub(at) < aside:
		t.Fatalf("received %v before Arrived looked, want at least %v", looked.Sub(at), aside)
	}
	readsOK(w, "after Arrived stamped it")
	if at, ok := w.ArrivedAt(); ok {
		t.Fatalf("ArrivedAt after Read took the answer = %v, want none", at)
	}

	// A whole answer held past the send's deadline: Read tells the
	// timeout, as it would with the answer still on the socket.
	w = writeRested("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok")
	if got := waitArrival(w, buf, ArrivedWhole); got != ArrivedWhole {
		t.Fatalf("the whole answer arrived: %d, want whole", got)
	}
	// The flood's reading context: an Aborter, and a deadline no timer
	// enforces (the connection's does), passed.
	late := untimed{WithAborter(context.Background(), &Aborter{}), time.Now().Add(-time.Second)}
	if resp, err := tr.Read(late, w); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			resp.Body.Close()
		}
		t.Fatalf("Read of an answer held past its deadline: %v, want the deadline exceeded", err)
	}

	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer srv.Close()
	ttr := NewTransport(Options{TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	defer ttr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/inbox", strings.NewReader("{}"))
	if resp, err = ttr.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/inbox", strings.NewReader("{}"))
	tw, ok, err := ttr.Write(req, 0, time.Now().Add(5*time.Second))
	if !ok || err != nil {
		t.Fatalf("Write on the resting TLS connection: ok %v, %v", ok, err)
	}
	if _, ok := tw.Socket(); ok {
		t.Error("a TLS connection has a socket whose bytes are TLS records")
	}
	if got, _ := tw.Arrived(buf); got != ArrivedUnsure {
		t.Errorf("Arrived on a TLS connection = %d, want unsure", got)
	}
	if resp, err := ttr.Read(context.Background(), tw); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// peekLen is how many bytes have arrived on socket fd, up to len(buf).
func peekLen(fd int, buf []byte) int {
	n, _, err := syscall.Recvfrom(fd, buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if err != nil {
		return 0
	}
	return n
}

// waitArrival is w's Arrived once it says want, or after a second what it
// says then: the loopback delivers within microseconds, but not at once.
func waitArrival(w Written, buf []byte, want Arrival) Arrival {
	deadline := time.Now().Add(time.Second)
	for {
		got, _ := w.Arrived(buf)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReadArrivedReadsAsRead: ReadArrived reads an answer Arrived found
// whole as Read reads it (the status, the fields kept, the body's length,
// a refusal, whether the connection rests after), or leaves it to Read
// untouched (ErrNotPlain). Each row's answer comes from a real listener,
// once for each of the two.
func TestReadArrivedReadsAsRead(t *testing.T) {
	for _, c := range []struct {
		name     string
		answer   string
		reqClose bool // the request says Connection: close
		notPlain bool // ReadArrived leaves it to Read
		head     bool // the request is a HEAD
	}{
		// The common answer: a 202 with a short body.
		{"202 with a body", "HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok", false, false, false},
		// No body, by its length or by its status, or as a HEAD's.
		{"empty body", "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", false, false, false},
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", false, false, false},
		{"304 with a length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false, false, false},
		{"HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", false, false, true},
		// Rate-limit fields are kept (in the server's case), others not.
		{"fields kept", "HTTP/1.1 429 Too Many Requests\r\nx-ratelimit-remaining: 0\r\nRetry-After: 2\r\nRetry-After: 3\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nslow", false, false, false},
		// The server closes after it: the connection does not rest.
		{"server says close", "HTTP/1.1 202 Accepted\r\nConnection: keep-alive, Close\r\nContent-Length: 2\r\n\r\nok", false, false, false},
		// The request said close.
		{"request said close", "HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok", true, false, false},
		// HTTP/1.0 rests only when the server says keep-alive.
		{"HTTP/1.0", "HTTP/1.0 202 Accepted\r\nContent-Length: 2\r\n\r\nok", false, false, false},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 202 Accepted\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok", false, false, false},
		// A field Read refuses: refused, the connection closed.
		{"malformed field", "HTTP/1.1 202 Accepted\r\nBad Name: x\r\nContent-Length: 2\r\n\r\nok", false, false, false},
		// A folded line: Read's to read.
		{"folded line", "HTTP/1.1 202 Accepted\r\nX-RateLimit-Remaining: 1\r\n  more: 2\r\nContent-Length: 2\r\n\r\nok", false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each reading's request comes after a plain round trip that
			// leaves a connection resting for it to be written on.
			plain := answer{raw: "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"}
			srv := startRaw(t, plain, answer{raw: c.answer}, plain, answer{raw: c.answer}, plain)
			tr := NewTransport(Options{})
			defer tr.CloseIdleConnections()
			key := poolKey{"http", srv.ln.Addr().String()}
			post := func(close, head bool) *http.Request {
				req, _ := http.NewRequest(http.MethodPost, srv.url(), strings.NewReader("{}"))
				if head {
					req, _ = http.NewRequest(http.MethodHead, srv.url(), nil)
				}
				req.Close = close
				return req
			}
			buf := make([]byte, 4096)
			written := func() (Written, int) {
				t.Helper()
				tr.CloseIdleConnections()
				resp, err := tr.RoundTrip(post(false, false))
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				w, ok, err := tr.Write(post(c.reqClose, c.head), 0, time.Now().Add(5*time.Second))
				if !ok || err != nil {
					t.Fatalf("Write on the resting connection: ok %v, %v", ok, err)
				}
				// A test that fails before the answer is read leaves no
				// connection open for the server to wait on.
				t.Cleanup(func() { w.c.close() })
				if _, ok := w.Socket(); !ok {
					t.Fatal("no socket")
				}
				if got := waitArrival(w, buf, ArrivedWhole); got != ArrivedWhole {
					t.Fatalf("the answer arrived %d, want whole", got)
				}
				_, n := w.Arrived(buf)
				return w, n
			}
			keep := func(name []byte) bool {
				return bytes.EqualFold(name, []byte("Retry-After")) || bytes.HasPrefix(bytes.ToLower(name), []byte("x-ratelimit-"))
			}

			// Read's reading.
			w, _ := written()
			want, wantErr := Answer{}, error(nil)
			resp, err := tr.Read(context.Background(), w)
			if wantErr = err; err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want = Answer{Status: resp.StatusCode, BodyLen: int64(len(body))}
				for k, v := range resp.Header {
					if keep([]byte(k)) {
						if want.Header == nil {
							want.Header = http.Header{}
						}
						want.Header[k] = v
					}
				}
			}
			wantRests := len(tr.idle[key]) == 1

			// ReadArrived's.
			w, n := written()
			got, err := tr.ReadArrived(w, buf[:n], keep)
			if c.notPlain {
				if err != ErrNotPlain {
					t.Fatalf("ReadArrived: %+v, %v; want it left to Read", got, err)
				}
				// Nothing taken: Read reads the whole answer.
				if resp, err := tr.Read(context.Background(), w); err != nil || resp.StatusCode != want.Status {
					t.Fatalf("Read after ErrNotPlain: %v, want status %d", err, want.Status)
				} else {
					resp.Body.Close()
				}
				return
			}
			if err == ErrNotPlain || (err != nil) != (wantErr != nil) {
				t.Fatalf("ReadArrived's error %v, Read's %v", err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ReadArrived read %+v, Read %+v", got, want)
			}
			if rests := len(tr.idle[key]) == 1; rests != wantRests {
				t.Fatalf("the connection rests after ReadArrived: %v, after Read: %v", rests, wantRests)
			}
			if !wantRests {
				return
			}
			// What rests carries the next request: nothing of the answer
			// was left on it.
			accepts := srv.accepts.Load()
			resp, err = tr.RoundTrip(post(false, false))
			if err != nil {
				t.Fatalf("the next request on the rested connection: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted || srv.accepts.Load() != accepts {
				t.Errorf("the next request: %d, on a new connection %v; want 202 on the rested one", resp.StatusCode, srv.accepts.Load() != accepts)
			}
		})
	}
}
