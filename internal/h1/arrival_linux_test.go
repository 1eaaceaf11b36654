package h1

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestArrivedOnASocket: on a real connection, Arrived sees a part while
// the server has sent half its answer and the whole once it has sent the
// rest, reading nothing (Read then reads the whole answer); a TLS
// connection has no Socket to watch.
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
	if got := w.Arrived(buf); got != ArrivedPart {
		t.Fatalf("half an answer arrived: %d, want a part", got)
	}
	next <- struct{}{}
	<-sent
	if got := waitArrival(w, buf, ArrivedWhole); got != ArrivedWhole {
		t.Fatalf("the whole answer arrived: %d, want whole", got)
	}
	resp, err = tr.Read(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || string(body) != "ok" {
		t.Fatalf("Read after Arrived: %d %q, want 202 \"ok\"", resp.StatusCode, body)
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
	if got := tw.Arrived(buf); got != ArrivedUnsure {
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
		got := w.Arrived(buf)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(time.Millisecond)
	}
}
