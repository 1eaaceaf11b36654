package schedpolicy

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Policy is a scheduling policy of sched(7), with the ResetOnFork flag
// when it is set.
type Policy int

// The policies, and the flag that keeps a real-time policy from passing
// to a thread or process the thread creates.
const (
	Other       Policy = 0 // SCHED_OTHER: the normal policy
	FIFO        Policy = 1 // SCHED_FIFO: real-time, first in first out
	RR          Policy = 2 // SCHED_RR: real-time, round robin
	Batch       Policy = 3 // SCHED_BATCH
	Idle        Policy = 5 // SCHED_IDLE: preempted by any other thread that wakes
	Deadline    Policy = 6 // SCHED_DEADLINE
	ResetOnFork Policy = 0x40000000
)

// Of is thread tid's policy (0: the calling thread), its ResetOnFork flag
// included.
func Of(tid int) (Policy, error) {
	p, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return Policy(p), nil
}

// Set sets thread tid's policy (0: the calling thread), flag included, and
// its static priority: 1-99 for FIFO and RR, 0 for the others. Clearing
// ResetOnFork, or raising a thread to a real-time policy, needs
// CAP_SYS_NICE (or, for the raise, an RLIMIT_RTPRIO at least priority).
func Set(tid int, p Policy, priority int) error {
	param := struct{ priority int32 }{int32(priority)}
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(p), uintptr(unsafe.Pointer(&param)))
	if errno != 0 {
		return errno
	}
	return nil
}

// SetDeadline puts thread tid (0: the calling thread) under
// SCHED_DEADLINE: runtime of CPU in every period, each period's share due
// by its end, with ResetOnFork (the kernel creates no thread from a
// deadline thread without it; with it, a new thread starts under the
// normal policy). Such a thread runs before every real-time and normal
// one while it has budget, and a sched_yield(2) gives up the rest of its
// period's. It needs CAP_SYS_NICE; the kernel refuses it with EBUSY when
// the machine's deadline threads would ask more than its real-time
// bandwidth (by default 95 % of each CPU) and with EPERM for a thread
// that may not run on every CPU of its scheduling domain. Set puts the
// thread back under another policy.
func SetDeadline(tid int, runtime, period time.Duration) error {
	return unix.SchedSetAttr(tid, &unix.SchedAttr{
		Size:     unix.SizeofSchedAttr,
		Policy:   uint32(Deadline),
		Flags:    unix.SCHED_FLAG_RESET_ON_FORK,
		Runtime:  uint64(runtime),
		Deadline: uint64(period),
		Period:   uint64(period),
	}, 0)
}

// Base is p without the ResetOnFork flag.
func (p Policy) Base() Policy { return p &^ ResetOnFork }

// String is the policy's name, as a run record keeps it: "other", "fifo",
// "rr", "batch", "idle", "deadline" (the flag not named), else "unknown".
func (p Policy) String() string {
	switch p.Base() {
	case Other:
		return "other"
	case FIFO:
		return "fifo"
	case RR:
		return "rr"
	case Batch:
		return "batch"
	case Idle:
		return "idle"
	case Deadline:
		return "deadline"
	}
	return "unknown"
}
