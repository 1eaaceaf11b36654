package epoll

import (
	"errors"
	"math"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Set is one epoll instance and the events one of its waits takes. It is
// not safe for concurrent use (Unwatch aside): it belongs to the loop
// that waits on it.
type Set struct {
	fd     int
	fine   bool // epoll_pwait2 is there: waits are kept to the nanosecond
	events []unix.EpollEvent
}

// Open makes a Set whose waits return up to batch events (at least one),
// and finds out whether its waits can be finer than a millisecond. The
// caller closes it.
func Open(batch int) (*Set, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	s := &Set{fd: fd, fine: true, events: make([]unix.EpollEvent, max(batch, 1))}
	switch _, err := s.pwait2(0); {
	case err == nil:
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		// Before Linux 5.11, or refused by a container's seccomp profile.
		s.fine = false
	default:
		unix.Close(fd)
		return nil, err
	}
	return s, nil
}

// Fine reports whether Wait keeps its timeout to the nanosecond
// (epoll_pwait2); when it does not, Wait rounds the timeout up to a
// whole millisecond (epoll_wait).
func (s *Set) Fine() bool { return s.fine }

// Watch has the Set report events (EPOLLIN, EPOLLET, …) on fd, in place
// of what it reported on fd before, if anything. A descriptor leaves the
// Set when the last descriptor of its open file is closed (epoll(7)):
// a watched socket must not be duplicated (dup, a File of it, a fork
// before exec), or its events would go on coming under a number that may
// since name another socket.
func (s *Set) Watch(fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	err := unix.EpollCtl(s.fd, unix.EPOLL_CTL_ADD, fd, &ev)
	if errors.Is(err, unix.EEXIST) {
		err = unix.EpollCtl(s.fd, unix.EPOLL_CTL_MOD, fd, &ev)
	}
	return err
}

// Unwatch has the Set stop reporting events on fd (ENOENT when it
// reported none). Unlike the Set's other methods it may be called from
// any goroutine, while the Set's loop waits on it: the kernel orders the
// two, and an event it reported before is still in that wait's batch.
func (s *Set) Unwatch(fd int) error {
	return unix.EpollCtl(s.fd, unix.EPOLL_CTL_DEL, fd, &unix.EpollEvent{})
}

// Wait waits up to d for events (not at all when d ≤ 0) and returns
// them, in a slice the next Wait reuses. A wait a signal interrupts
// returns none and no error.
func (s *Set) Wait(d time.Duration) ([]unix.EpollEvent, error) {
	d = max(d, 0)
	var n int
	var err error
	if s.fine {
		n, err = s.pwait2(d)
	} else {
		// Whole milliseconds, rounded up, and at most the kernel's int.
		ms := (min(d, math.MaxInt32*time.Millisecond) + time.Millisecond - 1) / time.Millisecond
		n, err = unix.EpollWait(s.fd, s.events, int(ms))
	}
	if errors.Is(err, unix.EINTR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.events[:n], nil
}

// Close closes the epoll instance; the descriptors it watched stay open.
func (s *Set) Close() error { return unix.Close(s.fd) }

// pwait2 is epoll_pwait2 with timeout d, into s.events. x/sys has no
// wrapper for it; unix.SYS_EPOLL_PWAIT2 is its number on each
// architecture. The call is syscall.Syscall6, which the compiler knows
// on every architecture to keep the timespec the pointer names in place
// (unix.Syscall6 is an ordinary function on some).
func (s *Set) pwait2(d time.Duration) (int, error) {
	// The kernel's __kernel_timespec: two 64-bit fields on every
	// architecture, where unix.Timespec's are 32-bit on some.
	ts := struct{ sec, nsec int64 }{int64(d / time.Second), int64(d % time.Second)}
	r, _, errno := syscall.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(s.fd), uintptr(unsafe.Pointer(&s.events[0])),
		uintptr(len(s.events)), uintptr(unsafe.Pointer(&ts)), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
