package h1

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/crowdfed/crowd/pasture/tlsca"
)

// answer is one scripted answer of rawServer: its bytes as they go on the
// wire, and what the server does after writing them.
type answer struct {
	raw       string
	closeNow  bool          // close the connection at once
	closeIdle time.Duration // close it after resting this long (0: keep)
	hold      bool          // write nothing, and wait for the client to close
	after     chan struct{} // write once this is closed (nil: at once)
}

// rawServer is a real listener that reads each request (head and
// Content-Length body) and writes the script's next answer, whatever the
// connection; it keeps the raw bytes of every request and counts the
// connections it accepted.
type rawServer struct {
	ln      net.Listener
	script  []answer
	next    atomic.Int64
	accepts atomic.Int64

	mu  sync.Mutex
	raw []string // each request's bytes, in order
}

func startRaw(t *testing.T, script ...answer) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, script: script}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepts.Add(1)
			wg.Go(func() { s.serve(c) })
		}
	})
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/inbox" }

func (s *rawServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		c.SetReadDeadline(time.Time{})
		var rec strings.Builder
		req, err := http.ReadRequest(bufio.NewReader(io.TeeReader(r, &rec)))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		s.mu.Lock()
		s.raw = append(s.raw, rec.String())
		s.mu.Unlock()
		n := int(s.next.Add(1) - 1)
		if n >= len(s.script) {
			return
		}
		a := s.script[n]
		if a.hold {
			io.Copy(io.Discard, r)
			return
		}
		if a.after != nil {
			<-a.after
		}
		c.Write([]byte(a.raw))
		if a.closeNow {
			return
		}
		if a.closeIdle > 0 {
			// Rest, then close unless a request came meanwhile.
			c.SetReadDeadline(time.Now().Add(a.closeIdle))
			if _, err := r.Peek(1); err != nil {
				return
			}
		}
	}
}

// send makes one POST through tr and reads its answer; it reports whether
// the connection was reused.
func send(t *testing.T, tr *Transport, url, body string, timeout time.Duration) (status int, got string, reused bool, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, "", reused, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), reused, err
}

const ok2 = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// TestTransportKeepsConnections: two requests in a row, each answer read
// to its end; whether the second reused the first's connection follows
// from how the server framed and ended the first answer.
func TestTransportKeepsConnections(t *testing.T) {
	for _, c := range []struct {
		name   string
		first  answer
		pause  time.Duration // between the two requests
		body   string        // the first answer's body as read
		status int
		dials  int64
	}{
		// Content-Length and keep-alive: one connection carries both.
		{"keep-alive", answer{raw: ok2}, 0, "ok", 200, 1},
		// The server closes the resting connection: the client sees the
		// close before writing and dials again, the request does not fail.
		{"server closes idle", answer{raw: ok2, closeIdle: 50 * time.Millisecond}, 500 * time.Millisecond, "ok", 200, 2},
		// Connection: close: the next request needs a new connection.
		{"connection close", answer{raw: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", closeNow: true}, 0, "ok", 200, 2},
		// Chunked, with an extension and a trailer: the body is the
		// chunks' data, and the connection is kept.
		{"chunked", answer{raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n"}, 0, "abcde", 200, 1},
		// No length: the body ends when the server closes.
		{"until close", answer{raw: "HTTP/1.0 200 OK\r\n\r\nto the end", closeNow: true}, 0, "to the end", 200, 2},
		// Interim answers are read past; 204 has no body whatever it says.
		{"interim then 204", answer{raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"}, 0, "", 204, 1},
		// HTTP/1.0 that asks to keep the connection keeps it.
		{"1.0 keep-alive", answer{raw: "HTTP/1.0 202 Accepted\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"}, 0, "", 202, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startRaw(t, c.first, answer{raw: ok2})
			tr := NewTransport(Options{IdleTimeout: time.Minute})
			defer tr.CloseIdleConnections()
			status, body, _, err := send(t, tr, s.url(), "{}", 10*time.Second)
			if err != nil || status != c.status || body != c.body {
				t.Fatalf("first: %d %q %v, want %d %q", status, body, err, c.status, c.body)
			}
			time.Sleep(c.pause)
			status, body, reused, err := send(t, tr, s.url(), "{}", 10*time.Second)
			if err != nil || status != 200 || body != "ok" {
				t.Fatalf("second: %d %q %v", status, body, err)
			}
			if got := s.accepts.Load(); got != c.dials || reused != (c.dials == 1) {
				t.Errorf("%d connections (second reused: %v), want %d", got, reused, c.dials)
			}
		})
	}
}

// TestTransportIdleTimeout: a connection that rested past the idle timeout
// is not used again, even though the server keeps it.
func TestTransportIdleTimeout(t *testing.T) {
	s := startRaw(t, answer{raw: ok2}, answer{raw: ok2})
	tr := NewTransport(Options{IdleTimeout: 100 * time.Millisecond})
	defer tr.CloseIdleConnections()
	for i := range 2 {
		if _, _, reused, err := send(t, tr, s.url(), "{}", 10*time.Second); err != nil || reused {
			t.Fatalf("send %d: %v (reused %v)", i, err, reused)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if got := s.accepts.Load(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
}

// TestTransportFailures: what fails fails with an error saying so, and a
// timeout is the context's.
func TestTransportFailures(t *testing.T) {
	for _, c := range []struct {
		name    string
		first   answer
		timeout time.Duration
		want    func(error) bool
	}{
		// No answer within the send's timeout: the context's deadline.
		{"slow answer", answer{hold: true}, 300 * time.Millisecond, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		// The server closes without answering.
		{"no answer", answer{closeNow: true}, 10 * time.Second, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		// The body stops short of its Content-Length.
		{"short body", answer{raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", closeNow: true}, 10 * time.Second,
			func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		// Two different lengths: refused, not guessed.
		{"bad length", answer{raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"}, 10 * time.Second,
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "Content-Length") }},
		// Not HTTP at all.
		{"garbage", answer{raw: "SSH-2.0-OpenSSH\r\n\r\n"}, 10 * time.Second,
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "status line") }},
		// A malformed field, the head never ended: refused at that line,
		// not at the send's timeout.
		{"malformed field", answer{raw: "HTTP/1.1 200 OK\r\nno colon here\r\n"}, 10 * time.Second,
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "malformed header line") }},
		// A folded line that continues no field, the head never ended.
		{"folded first line", answer{raw: "HTTP/1.1 200 OK\r\n folded\r\n"}, 10 * time.Second,
			func(err error) bool {
				return err != nil && strings.Contains(err.Error(), "malformed folded header line")
			}},
		// A chunk whose size is not hexadecimal.
		{"bad chunk", answer{raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}, 10 * time.Second,
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "chunk size") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startRaw(t, c.first)
			tr := NewTransport(Options{})
			defer tr.CloseIdleConnections()
			_, _, _, err := send(t, tr, s.url(), "{}", c.timeout)
			if !c.want(err) {
				t.Errorf("error %v", err)
			}
		})
	}
}

// TestTransportRefused: a port nobody listens on fails the dial, as a
// connection error, not a timeout.
func TestTransportRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tr := NewTransport(Options{})
	_, _, _, err = send(t, tr, "http://"+addr+"/inbox", "{}", 10*time.Second)
	var ne net.Error
	if !errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("error %v, want connection refused", err)
	}
}

// TestTransportWire: what goes on the wire is the request: header names
// as given (not canonicalised), values byte for byte, nothing added but
// Host and Content-Length, fields sorted by name.
func TestTransportWire(t *testing.T) {
	s := startRaw(t, answer{raw: ok2})
	tr := NewTransport(Options{})
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, s.url()+"?q=1", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "flood1.test"
	req.Header = http.Header{
		"date":           {"Wed, 02 Dec 2026 16:00:00 GMT"},
		"Digest":         {"SHA-256=abc="},
		"Content-Digest": {"sha-256=:abc=:"},
		"Content-Type":   {`application/activity+json`},
		"Signature":      {`keyId="https://flood1.test/users/a#main-key",headers="(request-target) host date digest"`},
		"User-Agent":     {"crowd/1"},
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	want := "POST /inbox?q=1 HTTP/1.1\r\nHost: flood1.test\r\n" +
		"Content-Digest: sha-256=:abc=:\r\nContent-Type: application/activity+json\r\nDigest: SHA-256=abc=\r\n" +
		"Signature: keyId=\"https://flood1.test/users/a#main-key\",headers=\"(request-target) host date digest\"\r\n" +
		"User-Agent: crowd/1\r\ndate: Wed, 02 Dec 2026 16:00:00 GMT\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.raw) != 1 || s.raw[0] != want {
		t.Errorf("on the wire:\n%q\nwant\n%q", s.raw, want)
	}
}

// TestTransportRefusesBadRequests: a request that cannot go on the wire as
// it is is refused before anything is sent.
func TestTransportRefusesBadRequests(t *testing.T) {
	s := startRaw(t)
	for _, c := range []struct {
		name string
		edit func(*http.Request)
	}{
		// A value with a newline would add a header the signer never saw.
		{"newline in value", func(r *http.Request) { r.Header.Set("Date", "x\r\nX-Evil: 1") }},
		// A name that is no token.
		{"bad name", func(r *http.Request) { r.Header["Bad Name"] = []string{"1"} }},
		// Only http and https.
		{"scheme", func(r *http.Request) { r.URL.Scheme = "ftp" }},
		// A body of unknown length.
		{"unknown length", func(r *http.Request) { r.ContentLength = -1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, s.url(), strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			c.edit(req)
			if _, err := NewTransport(Options{}).RoundTrip(req); err == nil {
				t.Error("sent")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.raw) != 0 {
				t.Errorf("the server received %q", s.raw)
			}
		})
	}
}

// TestTransportTLS: https with the crowd's CA, offering http/1.1 alone
// even when the configuration offers h2, and the connection kept.
func TestTransportTLS(t *testing.T) {
	ca, err := tlsca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srvCfg, err := ca.OnDemandTLSConfig(tlsca.OnDemand{Serves: func(name string) bool { return name == "flood1.test" }})
	if err != nil {
		t.Fatal(err)
	}
	srvCfg.NextProtos = []string{"h2", "http/1.1"}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srvCfg)
	if err != nil {
		t.Fatal(err)
	}
	var protos []string
	var mu sync.Mutex
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		w.Write([]byte("ok"))
	})}
	go srv.Serve(ln)
	defer srv.Close()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, ln.Addr().String())
	}
	tr := NewTransport(Options{Dial: dial, TLS: &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}}})
	defer tr.CloseIdleConnections()
	for i := range 2 {
		status, body, reused, err := send(t, tr, "https://flood1.test/inbox", "{}", 10*time.Second)
		if err != nil || status != 200 || body != "ok" || reused != (i == 1) {
			t.Fatalf("send %d: %d %q reused %v: %v", i, status, body, reused, err)
		}
	}
	// A client that does not trust the crowd's CA fails the handshake.
	strict := NewTransport(Options{Dial: dial})
	if _, _, _, err := send(t, strict, "https://flood1.test/inbox", "{}", 10*time.Second); err == nil {
		t.Error("an untrusted certificate was accepted")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(protos) != 2 || protos[0] != "HTTP/1.1" {
		t.Errorf("protocols %v, want HTTP/1.1 twice", protos)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s (a bound
// on something that must happen, not a timing assumption).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: not within 10 s", what)
}

// TestTransportHandsBackWhileDialling: a request that has to dial takes
// instead the connection another request hands back first, as net/http
// does, so a server slow to accept holds up no request while a connection
// is free; the connection dialled meanwhile then rests in the pool.
func TestTransportHandsBackWhileDialling(t *testing.T) {
	release, dialGate := make(chan struct{}), make(chan struct{})
	s := startRaw(t, answer{raw: ok2, after: release}, answer{raw: ok2})
	var dials atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 2 {
			<-dialGate // the second connection is slow to come
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	tr := NewTransport(Options{Dial: dial})
	defer tr.CloseIdleConnections()
	type result struct {
		reused bool
		err    error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() {
		_, _, reused, err := send(t, tr, s.url(), "{}", 10*time.Second)
		first <- result{reused, err}
	}()
	waitFor(t, "the first request reached the server", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.raw) == 1 })
	go func() {
		_, _, reused, err := send(t, tr, s.url(), "{}", 10*time.Second)
		second <- result{reused, err}
	}()
	waitFor(t, "the second request dials", func() bool { return dials.Load() == 2 })
	close(release)
	for name, ch := range map[string]chan result{"first": first, "second": second} {
		select {
		case r := <-ch:
			if r.err != nil || r.reused != (name == "second") {
				t.Errorf("%s request: reused %v, %v", name, r.reused, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s request did not end while the second dial hung", name)
		}
	}
	close(dialGate)
	idle := func() int {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.idle[poolKey{"http", s.ln.Addr().String()}])
	}
	waitFor(t, "both connections rest in the pool", func() bool { return idle() == 2 })
}

// TestHostPort: the pool's key and the dial's address, the scheme's port
// when the URL names none.
func TestHostPort(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"http://127.0.0.1:8080/inbox", "127.0.0.1:8080"},     // named: as it is
		{"http://flood1.test/inbox", "flood1.test:80"},        // http's port
		{"https://flood1.test/inbox", "flood1.test:443"},      // https's port
		{"https://Flood1.TEST:8443/x", "Flood1.TEST:8443"},    // case kept, as Hostname keeps it
		{"http://[::1]:8080/inbox", "[::1]:8080"},             // IPv6, bracketed already
		{"https://[::1]/inbox", "[::1]:443"},                  // IPv6, bracketed with the port added
		{"http://[fe80::1%25lo]:80/inbox", "[fe80::1%lo]:80"}, // a zone, unescaped as Hostname gives it
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostPort(u); got != c.want {
			t.Errorf("hostPort(%s) = %q, want %q", c.url, got, c.want)
		}
	}
}

// TestRoundTripAllocations: a send on a resting connection, as a flood's
// worker makes it (an Aborter in its context, the answer drained),
// allocates a handful of objects: the answer, its status line, one string
// for its header section, the header map (two), the values' backing
// array, the body reader: seven, where it was twenty-five. The
// server writes a canned answer and allocates nothing, so the count is the
// client's. A string per header name and value, a closure per request, or
// a key per request would each break the bound.
func TestRoundTripAllocations(t *testing.T) {
	const answer = "HTTP/1.1 202 Accepted\r\nDate: Thu, 03 Dec 2026 12:00:00 GMT\r\nContent-Type: text/plain\r\nX-Ratelimit-Remaining: 299\r\nContent-Length: 2\r\n\r\nok"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 512)
	req, err := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/inbox", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"Content-Type": {"application/activity+json"}, "Signature": {strings.Repeat("s", 300)}}
	var wire strings.Builder // what the client writes for req, read back by the server as a whole
	fmt.Fprintf(&wire, "POST /inbox HTTP/1.1\r\nHost: %s\r\nContent-Type: application/activity+json\r\nSignature: %s\r\nContent-Length: %d\r\n\r\n%s",
		ln.Addr(), strings.Repeat("s", 300), len(body), body)
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// A client that wrote other bytes than wire's fails the test
		// within this bound instead of leaving both sides waiting.
		c.SetDeadline(time.Now().Add(10 * time.Second))
		in, out := make([]byte, wire.Len()), []byte(answer)
		for {
			if _, err := io.ReadFull(c, in); err != nil {
				return
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}()
	tr := NewTransport(Options{})
	defer tr.CloseIdleConnections()
	var a Aborter
	ctx := WithAborter(context.Background(), &a)
	rd := new(readCloser) // reused, as a flood's worker reuses its body reader
	req = req.WithContext(ctx)
	sendOne := func() {
		rd.Reset(body)
		req.Body, req.ContentLength = rd, int64(len(body))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Ratelimit-Remaining") != "299" {
			t.Fatalf("answer %d %v", resp.StatusCode, resp.Header)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	sendOne() // the dial, and the connection's buffers
	const bound = 7
	if n := testing.AllocsPerRun(200, sendOne); n > bound {
		t.Errorf("a send on a resting connection allocates %.1f objects, want at most %d", n, bound)
	}
}

// readCloser is a strings.Reader that closes.
type readCloser struct{ strings.Reader }

func (*readCloser) Close() error { return nil }

// TestCopyBody: a request's body goes into the connection's buffer as
// io.CopyN would copy it: n bytes, io.EOF when the body has fewer.
func TestCopyBody(t *testing.T) {
	long := strings.Repeat("0123456789", 5)
	failing := errors.New("disk gone")
	for _, c := range []struct {
		name  string
		body  io.Reader
		n     int64
		wrote string
		err   error
	}{
		{"exactly n", strings.NewReader("hello"), 5, "hello", nil},
		{"longer than n: n bytes", strings.NewReader("hello, world"), 5, "hello", nil},
		{"shorter than n: io.EOF", strings.NewReader("hi"), 5, "hi", io.EOF},
		{"more than the buffer: flushed on the way", strings.NewReader(long), 50, long, nil},
		{"data with io.EOF in one read", iotest.DataErrReader(strings.NewReader("hello")), 5, "hello", nil},
		{"one byte a read", iotest.OneByteReader(strings.NewReader(long)), 50, long, nil},
		{"an error midway: kept", io.MultiReader(strings.NewReader("hel"), iotest.ErrReader(failing)), 5, "hel", failing},
		{"nothing to copy", strings.NewReader("x"), 0, "", nil},
		{"a reader that gives nothing: io.ErrNoProgress", &dataThenError{"", nil}, 5, "", io.ErrNoProgress},
		{"an error with the last byte: ignored, as io.CopyN does", &dataThenError{"hi", failing}, 2, "hi", nil},
		{"an error with bytes short of n: kept", &dataThenError{"hi", failing}, 5, "hi", failing},
	} {
		var out bytes.Buffer
		w := bufio.NewWriterSize(&out, 16)
		n, err := copyBody(w, c.body, c.n)
		w.Flush()
		if n != int64(len(c.wrote)) || out.String() != c.wrote || !errors.Is(err, c.err) {
			t.Errorf("%s: copied %d %q, %v; want %d %q, %v", c.name, n, out.String(), err, len(c.wrote), c.wrote, c.err)
		}
	}
}

// dataThenError reads data and err in one read.
type dataThenError struct {
	data string
	err  error
}

func (r *dataThenError) Read(p []byte) (int, error) {
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, r.err
}
