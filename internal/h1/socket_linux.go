package h1

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// socket is a plain TCP connection whose descriptor the Go runtime's
// poller may stop watching (unpoll), so that an event loop of the
// caller's (Written.Socket) is the only one woken when an answer arrives.
// Watched by both, every answer the loop read had also woken the
// runtime's poller, blocked in epoll_wait with nothing waiting on that
// descriptor: against the bench's null sink, the flood's builds before
// and after alternated three times, a send cost the flood process
// 75-90 µs of CPU unpolled against 84-104 polled at 5 000/s, and
// 91-124 against 114-148 at 2 000/s.
//
// Unpolled, reads and writes go straight to the descriptor without
// waiting; the first that would wait polls the socket again through a
// duplicate descriptor the runtime watches (an *os.File), which blocks
// and keeps the deadline as a dialled connection does. It stays polled
// until a loop next asks for the socket: a worker's next request on it
// may wait too, and the loop's thread closes the duplicate when it needs
// to. One goroutine at a time uses a socket, as a connection; only
// SetDeadline may come from another (an Aborter's expire), and the mutex
// orders it with a change of poller.
type socket struct {
	mu sync.Mutex
	// polled is what reads and writes go through while the runtime's
	// poller watches the socket: the dialled connection, then a
	// duplicate; nil while unpolled, and once closed.
	polled atomic.Pointer[polledConn]
	// fd is the descriptor no poller of the runtime's watches: -1 until
	// first unpolled, and once closed. Closed is both nil and -1.
	fd int
	// deadline is the connection's, as an offset from born (0: none;
	// passed already: 1), kept to check an unpolled read or write and to
	// set on the next poll. An offset from a monotonic reading, so a step
	// of the wall clock moves it no more than a dialled connection's.
	deadline    atomic.Int64
	born        time.Time
	local, peer net.Addr
	peeker      *peeker // the peek of the polled connection, made once for each
	// held is what arrived took off the descriptor ahead of the
	// connection's reads, which read it first: the answer the flood's
	// dispatcher looked at, so that reading it after takes no second
	// system call. Only the goroutine using the connection touches it.
	held []byte
	// stamped: the kernel stamps what arrives on the descriptor with the
	// wall-clock time it received it (SO_TIMESTAMPNS, asked for at the
	// dial: adoptSocket), and arrived reads the stamps. heldAt is the stamp of the
	// last bytes arrived took (Unix nanoseconds; 0: none given), and
	// control the buffer its stamp comes in. Only the goroutine using
	// the connection touches them.
	stamped bool
	heldAt  int64
	control [stampControlLen]byte
}

// stampControlLen holds one SCM_TIMESTAMPNS control message (a header and
// a timespec) with room to spare: the kernel truncates, never overflows.
const stampControlLen = 64

// polledConn is the connection the runtime's poller watches: the dialled
// one, or an *os.File over a duplicate of the socket's descriptor.
type polledConn interface {
	io.ReadWriteCloser
	SetDeadline(time.Time) error
	syscall.Conn
}

// lowestDup is the least descriptor a duplicate takes: never standard
// output or error, on which the runtime makes a broken pipe fatal.
const lowestDup = 3

// adoptSocket is raw as the connection's socket: a *socket when raw is a
// *net.TCPConn (not a dialler's wrapper, whose own Read and Close an
// unpolled socket would pass by), else raw itself. The socket is the
// connection the request's trace hears of (GotConnInfo.Conn).
func adoptSocket(raw net.Conn) net.Conn {
	tc, ok := raw.(*net.TCPConn)
	if !ok {
		return raw
	}
	s := &socket{fd: -1, born: time.Now(), local: raw.LocalAddr(), peer: raw.RemoteAddr()}
	// Stamped from the dial, not from the first unpoll: the kernel
	// switches its stamping on a moment after the first socket asks, and
	// a connection's first answer is a worker's, read before any loop
	// looks at the socket. A socket the kernel will not stamp is read as
	// before; only its answers' times are the reader's own.
	if rc, err := tc.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			s.stamped = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) == nil
		})
	}
	var pc polledConn = tc
	s.polled.Store(&pc)
	return s
}

// unpoll takes the socket out of the runtime's poller: its own
// descriptor, duplicated from the polled connection the first time, stays,
// and the polled connection is closed (which takes its descriptor out of
// the poller; the socket lives on in its own). Only the goroutine using
// the connection calls it.
func (s *socket) unpoll() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.polled.Load()
	switch {
	case p == nil && s.fd < 0:
		return net.ErrClosed
	case p == nil:
		return nil
	}
	if s.fd < 0 {
		rc, err := (*p).SyscallConn()
		if err != nil {
			return err
		}
		fd, dupErr := -1, error(nil)
		if err := rc.Control(func(d uintptr) { fd, dupErr = unix.FcntlInt(d, unix.F_DUPFD_CLOEXEC, lowestDup) }); err != nil {
			return err
		}
		if dupErr != nil {
			return os.NewSyscallError("fcntl", dupErr)
		}
		s.fd = fd
	}
	s.polled.Store(nil)
	s.peeker = nil
	return (*p).Close()
}

// poll has the runtime's poller watch the socket again, for a read or a
// write that must wait: through a duplicate of its descriptor, with the
// connection's deadline.
func (s *socket) poll() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.polled.Load() != nil:
		return nil
	case s.fd < 0:
		return net.ErrClosed
	}
	dup, err := unix.FcntlInt(uintptr(s.fd), unix.F_DUPFD_CLOEXEC, lowestDup)
	if err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	// Non-blocking, as the socket is: NewFile has the poller watch it.
	var pc polledConn = os.NewFile(uintptr(dup), "")
	if d := s.deadline.Load(); d != 0 {
		if err := pc.SetDeadline(s.born.Add(time.Duration(d))); err != nil {
			pc.Close()
			return err
		}
	}
	s.polled.Store(&pc)
	return nil
}

// expired reports whether the connection's deadline has passed.
func (s *socket) expired() bool {
	d := s.deadline.Load()
	return d != 0 && time.Since(s.born) >= time.Duration(d)
}

// Read reads from the socket: what arrived holds first, then without
// waiting while unpolled, else (or when nothing has arrived) through the
// runtime's poller. The deadline goes before held bytes, as it goes
// before bytes waiting on the descriptor: an answer whole only after its
// send's deadline is a timeout, whoever looked at it first.
func (s *socket) Read(b []byte) (int, error) {
	if len(s.held) > 0 && len(b) > 0 {
		if s.expired() {
			return 0, s.opError("read", os.ErrDeadlineExceeded)
		}
		n := copy(b, s.held)
		s.held = s.held[:copy(s.held, s.held[n:])]
		return n, nil
	}
	for {
		if p := s.polled.Load(); p != nil {
			n, err := (*p).Read(b)
			return n, s.opError("read", err)
		}
		if s.fd < 0 {
			return 0, s.opError("read", net.ErrClosed)
		}
		if s.expired() {
			return 0, s.opError("read", os.ErrDeadlineExceeded)
		}
		n, err := unix.Read(s.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if err := s.poll(); err != nil {
				return 0, s.opError("read", err)
			}
			continue
		case err != nil:
			return 0, s.opError("read", os.NewSyscallError("read", err))
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes b to the socket, as Read reads.
func (s *socket) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		if p := s.polled.Load(); p != nil {
			n, err := (*p).Write(b[written:])
			return written + n, s.opError("write", err)
		}
		if s.fd < 0 {
			return written, s.opError("write", net.ErrClosed)
		}
		if s.expired() {
			return written, s.opError("write", os.ErrDeadlineExceeded)
		}
		n, err := unix.Write(s.fd, b[written:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if err := s.poll(); err != nil {
				return written, s.opError("write", err)
			}
			continue
		case err != nil:
			return written, s.opError("write", os.NewSyscallError("write", err))
		case n <= 0:
			// As the runtime's own write: no progress and no error
			// would loop for ever.
			return written, s.opError("write", io.ErrUnexpectedEOF)
		}
		written += n
	}
	return written, nil
}

// opError is err as a dialled connection's would read: a *net.OpError
// naming the socket's ends (io.EOF and nil as they are, a closed file as
// net.ErrClosed).
func (s *socket) opError(op string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	if pe, ok := err.(*os.PathError); ok { // an *os.File's
		err = pe.Err
		if errno, ok := err.(syscall.Errno); ok {
			err = os.NewSyscallError(op, errno)
		}
	}
	if errors.Is(err, os.ErrClosed) {
		err = net.ErrClosed
	}
	return &net.OpError{Op: op, Net: "tcp", Source: s.local, Addr: s.peer, Err: err}
}

// Close closes the socket: its polled connection and its own descriptor.
func (s *socket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.polled.Swap(nil)
	if p == nil && s.fd < 0 {
		return s.opError("close", net.ErrClosed)
	}
	var err error
	if p != nil {
		err = (*p).Close()
	}
	s.held = s.held[:0]
	if s.fd >= 0 {
		if e := unix.Close(s.fd); err == nil && e != nil {
			err = os.NewSyscallError("close", e)
		}
		s.fd = -1
	}
	return s.opError("close", err)
}

// SetDeadline bounds the socket's reads and writes, as net.Conn's.
func (s *socket) SetDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.IsZero() {
		s.deadline.Store(0)
	} else {
		s.deadline.Store(int64(max(t.Sub(s.born), 1)))
	}
	if p := s.polled.Load(); p != nil {
		return (*p).SetDeadline(t)
	}
	return nil
}

// SetReadDeadline sets both bounds, as SetDeadline: h1 gives a
// connection's reads and writes one (conn.setDeadline).
func (s *socket) SetReadDeadline(t time.Time) error { return s.SetDeadline(t) }

// SetWriteDeadline sets both bounds, as SetReadDeadline.
func (s *socket) SetWriteDeadline(t time.Time) error { return s.SetDeadline(t) }

// LocalAddr is the dialled connection's local address.
func (s *socket) LocalAddr() net.Addr { return s.local }

// RemoteAddr is the dialled connection's remote address.
func (s *socket) RemoteAddr() net.Addr { return s.peer }

// peek looks into buf as conn.look does: what arrived holds counts as
// arrived (it is copied into buf first, and then nothing more).
func (s *socket) peek(buf []byte) (int, error) {
	if len(s.held) > 0 {
		return copy(buf, s.held), nil
	}
	p := s.polled.Load()
	if p == nil {
		if s.fd < 0 {
			return 0, net.ErrClosed
		}
		n, _, err := syscall.Recvfrom(s.fd, buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return n, err
	}
	if s.peeker == nil {
		rc, err := (*p).SyscallConn()
		if err != nil {
			return 0, err
		}
		s.peeker = newPeeker(rc)
	}
	return s.peeker.peek(buf)
}

// arrived looks into buf at what has arrived on the unpolled socket, as
// peek does, but takes it off the descriptor into held (where the
// connection's next reads, and take, find it): one system call where a
// peek and then a read made two. What held already has comes first in
// buf; a buf it fills is looked at no further. A close (0 bytes) and an
// error are told only when nothing is held: the held bytes come first.
// A close is there again for the next read; an error (a reset) the
// kernel reports once, so the next read finds the end instead, which the
// flood counts as it counts a reset (a connection's failure).
func (s *socket) arrived(buf []byte) (int, error) {
	n := copy(buf, s.held)
	if n == len(buf) {
		return n, nil
	}
	for {
		m, stamp, err := s.recvStamped(buf[n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil && n > 0:
			return n, nil
		case err != nil:
			return 0, err
		}
		if m > 0 {
			s.heldAt = stamp
		}
		s.held = append(s.held, buf[n:n+m]...)
		return n + m, nil
	}
}

// recvStamped reads into buf without waiting, as recvfrom does, and
// returns the kernel's receive stamp of the last bytes read (Unix
// nanoseconds), or 0 when the socket is not stamped or the kernel gave
// none.
func (s *socket) recvStamped(buf []byte) (int, int64, error) {
	if !s.stamped {
		n, _, err := syscall.Recvfrom(s.fd, buf, syscall.MSG_DONTWAIT)
		return n, 0, err
	}
	if len(buf) == 0 {
		return 0, 0, nil
	}
	// recvmsg by hand: unix.Recvmsg allocates on every call, and the
	// dispatcher's loop reads every answer it reads through here.
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	msg := unix.Msghdr{Iov: &iov, Control: &s.control[0]}
	msg.SetIovlen(1)
	msg.SetControllen(len(s.control))
	n, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT)
	if errno != 0 {
		return 0, 0, errno
	}
	return int(n), receiveStamp(s.control[:msg.Controllen]), nil
}

// timespecOf reads a struct timespec as this machine's kernel lays it
// out for SCM_TIMESTAMPNS: two 64-bit fields, or two 32-bit ones on a
// 32-bit machine.
func timespecOf(data []byte) (sec, nsec int64, ok bool) {
	switch {
	case unsafe.Sizeof(unix.Timespec{}) == 16 && len(data) >= 16:
		return int64(binary.NativeEndian.Uint64(data)), int64(binary.NativeEndian.Uint64(data[8:])), true
	case unsafe.Sizeof(unix.Timespec{}) == 8 && len(data) >= 8:
		return int64(int32(binary.NativeEndian.Uint32(data))), int64(int32(binary.NativeEndian.Uint32(data[4:]))), true
	}
	return 0, 0, false
}

// receiveStamp is the SCM_TIMESTAMPNS stamp among the control messages in
// oob, as Unix nanoseconds, or 0 when none is there whole.
func receiveStamp(oob []byte) int64 {
	for len(oob) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS {
			sec, nsec, ok := timespecOf(data)
			if !ok || sec <= 0 || nsec < 0 || nsec >= 1e9 || sec >= math.MaxInt64/1_000_000_000 {
				return 0
			}
			return sec*1e9 + nsec
		}
		oob = rest
	}
	return 0
}

// take reads len(got) bytes, which have arrived, into got, without
// waiting: the socket is unpolled (ReadArrived saw to it). held's come
// first: those arrived took. Bytes that were not there after all (a read
// that would wait, or the end) are the answer cut short, a connection's
// failure, not a timeout.
func (s *socket) take(got []byte) error {
	n := copy(got, s.held)
	s.held = s.held[:copy(s.held, s.held[n:])]
	got = got[n:]
	for len(got) > 0 {
		if s.fd < 0 {
			return s.opError("read", net.ErrClosed)
		}
		n, _, err := syscall.Recvfrom(s.fd, got, syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == nil && n == 0:
			return s.opError("read", io.ErrUnexpectedEOF)
		case err != nil:
			return s.opError("read", os.NewSyscallError("recvfrom", err))
		}
		got = got[n:]
	}
	return nil
}
