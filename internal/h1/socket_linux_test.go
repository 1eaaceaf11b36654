package h1

import (
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

	"github.com/crowdfed/crowd/internal/epoll"
	"golang.org/x/sys/unix"
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

// openFDs is how many descriptors the process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(fds)
}

// socketPair dials a listener on the loopback and returns the client's
// end as a socket, polled as dialled, and the server's end; both are
// closed when the test ends, and the server's after 10 s, so that a
// read the code under test lets wait for ever ends (and not as a
// timeout).
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
	guard := time.AfterFunc(10*time.Second, func() { server.Close() })
	t.Cleanup(func() { guard.Stop(); s.Close(); server.Close() })
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

// once polled runs f once s is polled again (a read or write of its has
// begun to wait), or after 5 s.
func oncePolled(s *socket, f func()) {
	go func() {
		for deadline := time.Now().Add(5 * time.Second); s.polled.Load() == nil && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		f()
	}()
}

// arrivedAll waits until n bytes have arrived on s (peeked).
func arrivedAll(t *testing.T, s *socket, n int) {
	t.Helper()
	buf := make([]byte, n+1)
	waitFor(t, fmt.Sprintf("%d bytes on the socket", n), func() bool {
		got, _ := s.peek(buf)
		return got >= n
	})
}

// TestSocketLeavesThePoller: an unpolled socket is in no epoll of the
// process while it rests or reads what has arrived; a read that must
// wait has the runtime's poller watch it again (a duplicate), and
// unpolling again closes that, the socket's own descriptor kept
// throughout.
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
	arrivedAll(t, s, 4)
	buf := make([]byte, 16)
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if s.polled.Load() != nil || polledFDs(t)[own] {
		t.Fatal("a read of what had arrived polled the socket")
	}

	// A read that waits polls a duplicate, and gets what comes.
	oncePolled(s, func() { io.WriteString(server, "pong") })
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("waiting read %q, %v", buf[:n], err)
	}
	dup := dialledFD(t, s)
	if dup == own || !polledFDs(t)[dup] || polledFDs(t)[own] {
		t.Fatalf("the waiting read's poll: duplicate %d (own %d), polled %v", dup, own, polledFDs(t))
	}

	if err := s.unpoll(); err != nil {
		t.Fatal(err)
	}
	if w := polledFDs(t); w[dup] || w[own] || s.fd != own || s.polled.Load() != nil {
		t.Fatalf("unpolled again: polled %v, dup %d own %d, fd now %d", w, dup, own, s.fd)
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

// TestSocketWatchedThroughPolls: an epoll watching the socket's own
// descriptor (the flood's loop, edge-triggered) hears of what arrives
// before and after a read polled a duplicate and the socket was
// unpolled again.
func TestSocketWatchedThroughPolls(t *testing.T) {
	s, server := socketPair(t)
	if err := s.unpoll(); err != nil {
		t.Fatal(err)
	}
	set, err := epoll.Open(4)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if err := set.Watch(s.fd, unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLET); err != nil {
		t.Fatal(err)
	}
	heard := func(what string) {
		t.Helper()
		io.WriteString(server, what)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			events, _ := set.Wait(100 * time.Millisecond)
			for _, ev := range events {
				if int(ev.Fd) == s.fd && ev.Events&unix.EPOLLIN != 0 {
					return
				}
			}
		}
		t.Fatalf("the epoll did not hear of %q", what)
	}
	buf := make([]byte, 8)
	heard("a")
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "a" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	oncePolled(s, func() { io.WriteString(server, "b") })
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "b" {
		t.Fatalf("waiting read %q, %v", buf[:n], err)
	}
	set.Wait(0) // what "b" told the epoll
	if err := s.unpoll(); err != nil {
		t.Fatal(err)
	}
	heard("c")
}

// TestSocketWriteThatWaits: an unpolled write that finds the socket's
// buffer full polls and writes the rest as the server reads, reporting
// every byte.
func TestSocketWriteThatWaits(t *testing.T) {
	s, server := socketPair(t)
	if err := s.unpoll(); err != nil {
		t.Fatal(err)
	}
	const size = 8 << 20 // far more than the loopback's buffers hold
	read := make(chan int64, 1)
	oncePolled(s, func() {
		n, _ := io.Copy(io.Discard, server)
		read <- n
	})
	s.SetDeadline(time.Now().Add(10 * time.Second))
	n, err := s.Write(make([]byte, size))
	if n != size || err != nil {
		t.Fatalf("wrote %d of %d: %v", n, size, err)
	}
	if s.polled.Load() == nil {
		t.Fatal("the write never waited: the test proves nothing")
	}
	s.Close()
	if got := <-read; got != size {
		t.Fatalf("the server read %d of %d", got, size)
	}
}

// TestSocketDeadlines: a deadline bounds a socket's reads polled or not,
// as a dialled connection's, and one set from another goroutine ends a
// read that waits (an Aborter's expire).
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
		{"future/unpolled", true, 300 * time.Millisecond, false},
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
				oncePolled(s, func() { s.SetDeadline(deadline) })
			case tc.in <= 0:
				io.WriteString(server, "late") // there, and still not read
				arrivedAll(t, s, 4)
				s.SetDeadline(deadline)
			default:
				s.SetDeadline(deadline)
			}
			n, err := s.Read(make([]byte, 8))
			var ne net.Error
			if n != 0 || !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read %d bytes, %v: not a timeout", n, err)
			}
			var op *net.OpError
			if !errors.As(err, &op) || op.Op != "read" || op.Addr == nil {
				t.Errorf("the timeout is not a dialled connection's: %#v", err)
			}
			if waited := s.polled.Load() != nil; tc.unpolled && waited != (tc.during || tc.in > 0) {
				t.Errorf("the read polled: %v; the case is not what it says", waited)
			}
		})
	}
}

// TestSocketCloses: a server's close reads as io.EOF; a closed socket's
// reads, writes and second close fail as a dialled connection's do; and
// no descriptor outlives the socket, whatever it was when it closed.
func TestSocketCloses(t *testing.T) {
	s, server := socketPair(t)
	if err := s.unpoll(); err != nil {
		t.Fatal(err)
	}
	server.Close()
	if n, err := s.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read %d, %v after the server's close", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after close: %v", err)
	}
	if _, err := s.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
	if err := s.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second close: %v", err)
	}
	if err := s.unpoll(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("unpoll after close: %v", err)
	}

	for _, tc := range []struct {
		name string
		make func(t *testing.T, s *socket, server net.Conn)
	}{
		// Closed as dialled.
		{"polled", func(*testing.T, *socket, net.Conn) {}},
		// Closed unpolled: its own descriptor.
		{"unpolled", func(t *testing.T, s *socket, _ net.Conn) { s.unpoll() }},
		// Closed while a duplicate is polled beside its own.
		{"polled again", func(t *testing.T, s *socket, server net.Conn) {
			s.unpoll()
			oncePolled(s, func() { io.WriteString(server, "x") })
			s.Read(make([]byte, 1))
			if s.polled.Load() == nil {
				t.Fatal("the read did not poll")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := openFDs(t)
			s, server := socketPair(t)
			tc.make(t, s, server)
			s.Close()
			server.Close()
			if after := openFDs(t); after != before {
				t.Fatalf("%d descriptors open before, %d after", before, after)
			}
		})
	}
}

// TestTransportUnpollsWatchedSockets: a connection whose Socket an
// event loop took is out of the runtime's poller; a read of its answer
// that waits polls it again, and it rests so (a worker's next request
// on it may wait too), until the loop next takes its socket, the same
// descriptor; a connection no loop watched stays polled as dialled.
func TestTransportUnpollsWatchedSockets(t *testing.T) {
	later := make(chan struct{}) // the second answer: once its read waits
	srv := startRaw(t,
		answer{raw: "HTTP/1.1 202 Accepted\r\nContent-Length: 1\r\n\r\n0"},
		answer{raw: "HTTP/1.1 202 Accepted\r\nContent-Length: 1\r\n\r\n1", after: later},
		answer{raw: "HTTP/1.1 202 Accepted\r\nContent-Length: 1\r\n\r\n2"},
		answer{raw: "HTTP/1.1 202 Accepted\r\nContent-Length: 1\r\n\r\n3"})
	tr := NewTransport(Options{})
	defer tr.CloseIdleConnections()
	post := func() *http.Request {
		req, _ := http.NewRequest(http.MethodPost, srv.url(), strings.NewReader("{}"))
		return req
	}
	answerOf := func(resp *http.Response, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	resting := func() *socket {
		t.Helper()
		cs := tr.idle[poolKey{scheme: "http", addr: srv.ln.Addr().String()}]
		if len(cs) != 1 {
			t.Fatalf("%d connections rest", len(cs))
		}
		return cs[0].raw.(*socket)
	}
	write := func() Written {
		t.Helper()
		w, ok, err := tr.Write(post(), 0, time.Now().Add(5*time.Second))
		if !ok || err != nil {
			t.Fatalf("Write: %v %v", ok, err)
		}
		return w
	}

	if got := answerOf(tr.RoundTrip(post())); got != "0" { // dials
		t.Fatalf("answer %q", got)
	}
	s := resting()
	if s.polled.Load() == nil || s.fd >= 0 || !polledFDs(t)[dialledFD(t, s)] {
		t.Fatal("a connection no loop watched rests unpolled")
	}
	w := write()
	sock, ok := w.Socket()
	if !ok || sock.FD != s.fd || polledFDs(t)[sock.FD] || s.polled.Load() != nil {
		t.Fatalf("the watched socket %d (%v) is still polled", sock.FD, ok)
	}
	oncePolled(s, func() { close(later) })
	if got := answerOf(tr.Read(t.Context(), w)); got != "1" { // waits: the answer comes once it does
		t.Fatalf("answer %q", got)
	}
	if s := resting(); s.polled.Load() == nil {
		t.Fatal("the read that waited did not poll")
	}
	if got := answerOf(tr.RoundTrip(post())); got != "2" {
		t.Fatalf("answer %q", got)
	}
	w = write()
	again, ok := w.Socket()
	if !ok || again != sock || polledFDs(t)[again.FD] || s.polled.Load() != nil {
		t.Fatalf("taken again: socket %+v (was %+v), polled %v", again, sock, polledFDs(t))
	}
	if got := answerOf(tr.Read(t.Context(), w)); got != "3" {
		t.Fatalf("answer %q", got)
	}
}
