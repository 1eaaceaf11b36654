package h1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// polledFDs are the descriptors that any epoll instance of the process
// watches, read from /proc (the runtime's poller is one).
func polledFDs(t *testing.T) map[int]bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	watched := map[int]bool{}
	for _, fd := range fds {
		target, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err != nil || target != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "tfd:" {
				if n, err := strconv.Atoi(f[1]); err == nil {
					watched[n] = true
				}
			}
		}
	}
	return watched
}

// socketPair dials a listener on the loopback and returns the client's
// end as a socket, polled as dialled, and the server's end.
func socketPair(t *testing.T) (*socket, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	s, ok := adoptSocket(raw).(*socket)
	if !ok {
		t.Fatalf("a TCP connection was not adopted: %T", adoptSocket(raw))
	}
	t.Cleanup(func() { s.Close(); server.Close() })
	return s, server
}

// dialledFD is the descriptor of s's polled connection.
func dialledFD(t *testing.T, s *socket) int {
	t.Helper()
	p := s.polled.Load()
	if p == nil {
		t.Fatal("the socket is not polled")
	}
	rc, err := (*p).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	rc.Control(func(d uintptr) { fd = int(d) })
	return fd
}

// TestSocketLeavesThePoller: an unpolled socket is in no epoll of the
// process while it rests or reads what has arrived; a read that must
// wait has the runtime's poller watch it again (a duplicate), and rest
// takes it out again, the socket's own descriptor kept throughout.
func TestSocketLeavesThePoller(t *testing.T) {
	s, server := socketPair(t)
	dialled := dialledFD(t, s)
	if !polledFDs(t)[dialled] {
		t.Fatalf("the dialled descriptor %d is not polled: the check sees nothing", dialled)
	}
	if err := s.unpoll(); err != nil {
		t.Fatal(err)
	}
	own := s.fd
	if w := polledFDs(t); w[dialled] || w[own] {
		t.Fatalf("unpolled, an epoll still watches the socket: dialled %d own %d in %v", dialled, own, w)
	}

	// What has arrived is read without the poller.
	io.WriteString(server, "ping")
	buf := make([]byte, 16)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if n, _ := s.peek(buf); n == 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if s.polled.Load() != nil || polledFDs(t)[own] {
		t.Fatal("a read of what had arrived polled the socket")
	}

	// A read that waits polls a duplicate, and gets what comes.
	go func() {
		time.Sleep(20 * time.Millisecond)
		io.WriteString(server, "pong")
	}()
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("waiting read %q, %v", buf[:n], err)
	}
	dup := dialledFD(t, s)
	if dup == own || !polledFDs(t)[dup] || polledFDs(t)[own] {
		t.Fatalf("the waiting read's poll: duplicate %d (own %d), polled %v", dup, own, polledFDs(t))
	}

	s.rest()
	if w := polledFDs(t); w[dup] || w[own] || s.fd != own || s.polled.Load() != nil {
		t.Fatalf("rested: polled %v, dup %d own %d, fd now %d", w, dup, own, s.fd)
	}
	// And it still carries bytes both ways.
	if _, err := s.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 3)
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(server, got); err != nil || string(got) != "bye" {
		t.Fatalf("server read %q, %v", got, err)
	}
}

// TestSocketDeadlines: a deadline bounds a socket's reads polled or not,
// as a dialled connection's, and one set from another goroutine ends a
// read that waits (an Aborter's expire); a server's close is io.EOF.
func TestSocketDeadlines(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unpolled bool
		// in is how far ahead the deadline is set (≤ 0: long passed),
		// and during whether it is set while the read waits.
		in     time.Duration
		during bool
	}{
		// Passed before the read, unpolled: what has arrived is not read.
		{"passed/unpolled", true, 0, false},
		// Passed before the read, as dialled.
		{"passed/polled", false, 0, false},
		// Set to have passed while an unpolled socket's read waits.
		{"expired during/unpolled", true, 0, true},
		// Set in the near future before an unpolled read that waits: the
		// poll it takes keeps it.
		{"future/unpolled", true, 50 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, server := socketPair(t)
			if tc.unpolled {
				if err := s.unpoll(); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Unix(1, 0)
			if tc.in > 0 {
				deadline = time.Now().Add(tc.in)
			}
			switch {
			case tc.during:
				go func() {
					time.Sleep(30 * time.Millisecond)
					s.SetDeadline(deadline)
				}()
			case tc.in <= 0:
				s.SetDeadline(deadline)
				io.WriteString(server, "late") // there, and still not read
				time.Sleep(10 * time.Millisecond)
			default:
				s.SetDeadline(deadline)
				// Should the poll lose the deadline, the read ends anyway,
				// and not as a timeout.
				defer time.AfterFunc(5*time.Second, func() { server.Close() }).Stop()
			}
			start := time.Now()
			n, err := s.Read(make([]byte, 8))
			var ne net.Error
			if n != 0 || !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read %d bytes, %v: not a timeout", n, err)
			}
			var op *net.OpError
			if !errors.As(err, &op) || op.Op != "read" || op.Addr == nil {
				t.Errorf("the timeout is not a dialled connection's: %#v", err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the read took %v", took)
			}
		})
	}
	t.Run("close is EOF", func(t *testing.T) {
		s, server := socketPair(t)
		if err := s.unpoll(); err != nil {
			t.Fatal(err)
		}
		server.Close()
		s.SetDeadline(time.Now().Add(5 * time.Second))
		if n, err := s.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("read %d, %v after the server's close", n, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("second close: %v", err)
		}
	})
}

// TestTransportRestsWatchedSocketsUnpolled: a connection whose Socket an
// event loop took rests out of the runtime's poller, and a later request
// a worker makes on it (its answer awaited by RoundTrip) is answered and
// leaves it resting unpolled again; a connection no loop watched stays
// polled as dialled.
func TestTransportRestsWatchedSocketsUnpolled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					time.Sleep(10 * time.Millisecond) // so that a read waits
					fmt.Fprintf(c, "HTTP/1.1 202 Accepted\r\nContent-Length: %d\r\n\r\n%d", len(strconv.Itoa(n)), n)
				}
			}()
		}
	}()
	tr := NewTransport(Options{})
	defer tr.CloseIdleConnections()
	url := "http://" + ln.Addr().String() + "/inbox"
	post := func() *http.Request {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
		return req
	}
	roundTrip := func() {
		t.Helper()
		resp, err := tr.RoundTrip(post())
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resting := func() *socket {
		t.Helper()
		cs := tr.idle[poolKey{scheme: "http", addr: ln.Addr().String()}]
		if len(cs) != 1 {
			t.Fatalf("%d connections rest", len(cs))
		}
		return cs[0].raw.(*socket)
	}

	roundTrip() // dials
	if s := resting(); s.polled.Load() == nil || s.fd >= 0 {
		t.Fatal("a connection no loop watched rests unpolled")
	}
	w, ok, err := tr.Write(post(), time.Now().Add(5*time.Second))
	if !ok || err != nil {
		t.Fatalf("Write: %v %v", ok, err)
	}
	sock, ok := w.Socket()
	if !ok || polledFDs(t)[sock.FD] {
		t.Fatalf("the watched socket %d is still polled (%v)", sock.FD, ok)
	}
	resp, err := tr.Read(t.Context(), w) // waits: the answer comes 10 ms later
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "1" {
		t.Fatalf("answer %q", b)
	}
	resp.Body.Close()
	if s := resting(); s.polled.Load() != nil || s.fd != sock.FD || polledFDs(t)[sock.FD] {
		t.Fatal("after a read that waited, the watched socket rests polled")
	}
	roundTrip()
	if s := resting(); s.polled.Load() != nil || s.fd != sock.FD {
		t.Fatal("after a worker's round trip, the watched socket rests polled")
	}
}
