package flood

import (
	"errors"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"github.com/crowdfed/crowd/flood/record"
)

// preciseSleep sleeps d with nanosleep(2): the kernel wakes the thread
// within its timer slack (50 µs by default; see preciseThread), where a
// runtime timer in an idle process waits for the netpoller's next whole
// millisecond. The thread is held for at most coarseMargin, and the
// scheduler hands its P to other goroutines if they need it.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}

// prctl(2) options for a thread's timer slack.
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// dispatcherTimerSlack is the timer slack of the dispatcher's thread: the
// least the kernel allows (0 would mean the default).
const dispatcherTimerSlack = 1 // ns

// The scheduling policies of sched(7) the dispatcher's thread moves
// between, and the flag that keeps a real-time policy from passing to any
// thread or process the thread creates.
const (
	schedOther       = 0
	schedFIFO        = 1
	schedResetOnFork = 0x40000000
)

// dispatcherRealtimePriority is the static priority of a real-time
// dispatcher: the lowest, above every thread of the normal policy and
// below every real-time thread the machine already has.
const dispatcherRealtimePriority = 1

// preciseThread locks the calling goroutine (the dispatcher) to its OS
// thread and sets that thread's timer slack to dispatcherTimerSlack, so
// that preciseSleep wakes it when asked: the default slack of 50 µs is
// how late the kernel may wake a sleeping thread, to group wake-ups
// (BenchmarkEngine/loopback-fast/rate=2000, old and new alternated three
// times: late-p50-µs 114-157 with it, 80-117 without).
//
// With realtime, the thread also takes SCHED_FIFO at
// dispatcherRealtimePriority where the process may raise it (root,
// CAP_SYS_NICE or an RLIMIT_RTPRIO of 1 or more): the kernel then runs the
// woken dispatcher at once instead of after whichever thread holds the
// core. Under the normal policy the woken dispatcher was seen runnable
// and not running for 1-5 ms at a time on a two-core machine whose CPUs
// were a third idle, and those stalls were the pipeline's p99 lateness.
// Where the policy is refused, the run goes on under the normal one and
// the returned Dispatcher says why. A thread already under a policy other
// than the normal one (the crowd started under chrt) keeps it.
//
// The returned func restores the policy, then the slack, and unlocks the
// thread; if either cannot be restored, the goroutine stays locked to the
// thread, which then exits with it rather than serve another goroutine
// so set. A thread that has no slack to restore (a real-time one reads 0,
// which would set the default) is left as it is.
func preciseThread(realtime bool) (record.Dispatcher, func()) {
	runtime.LockOSThread()
	policy := threadPolicy()
	prev, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno != 0 || prev == 0 {
		runtime.UnlockOSThread()
		return record.Dispatcher{Policy: policyName(policy)}, func() {}
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, dispatcherTimerSlack, 0); errno != 0 {
		runtime.UnlockOSThread()
		return record.Dispatcher{Policy: policyName(policy)}, func() {}
	}
	d := record.Dispatcher{TimerSlackNs: dispatcherTimerSlack, Policy: policyName(policy)}
	raised := false
	if realtime && policy == schedOther {
		if err := setPolicy(schedFIFO|schedResetOnFork, dispatcherRealtimePriority); err != nil {
			d.Refused = "SCHED_FIFO: " + err.Error()
			if errors.Is(err, syscall.EPERM) {
				d.Refused += " (needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of 1 or more)"
			}
		} else {
			raised = true
			d.Policy = policyName(schedFIFO)
		}
	}
	return d, func() {
		if raised && setPolicy(schedOther, 0) != nil {
			return // still real-time: the thread must not serve anyone else
		}
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, prev, 0); errno == 0 {
			runtime.UnlockOSThread()
		}
	}
}

// threadPolicy is the calling thread's scheduling policy, without the
// reset-on-fork flag; -1 when it cannot be read.
func threadPolicy() int {
	p, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	if errno != 0 {
		return -1
	}
	return int(p) &^ schedResetOnFork
}

// setPolicy sets the calling thread's scheduling policy and static
// priority (0 for the normal policy).
func setPolicy(policy, priority int) error {
	param := struct{ priority int32 }{int32(priority)}
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, uintptr(policy), uintptr(unsafe.Pointer(&param)))
	if errno != 0 {
		return errno
	}
	return nil
}

// policyName is the record's name of a scheduling policy of sched(7).
func policyName(p int) string {
	switch p {
	case schedOther:
		return "other"
	case schedFIFO:
		return "fifo"
	case 2:
		return "rr"
	case 3:
		return "batch"
	case 5:
		return "idle"
	case 6:
		return "deadline"
	}
	return "unknown"
}
