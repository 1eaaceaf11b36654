package flood

import (
	"errors"
	"runtime"
	"syscall"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/schedpolicy"
	"golang.org/x/sys/unix"
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

// dispatcherRealtimePriority is the static priority of a real-time
// dispatcher: the lowest, above every thread of the normal policy and
// below every real-time thread the machine already has.
const dispatcherRealtimePriority = 1

// oneCPURefusal is why a dispatcher that may run on one CPU only stays
// under the normal policy. The Go runtime makes a thread wait for another
// by spinning and yielding its CPU (a goroutine the GC is scanning cannot
// be woken, run, or leave a system call until the scan ends), and a
// real-time thread's yield gives its CPU to no thread of the normal
// policy. With one CPU, the scanning thread, preempted by the dispatcher's
// own wake-up, had nowhere else to run, and neither moved until the
// kernel's real-time throttling (by default 950 ms of each second)
// stopped the dispatcher: pinned to one core, the bench's pipeline sent up
// to a second late in two or three 3 s trials of nine, the dispatcher's
// thread spinning in the runtime (casgstatus, from exitsyscall or ready)
// for a third of the core; TestRealtimeDispatcherNeverWaitsOnTheGC would
// show it again, a second late in every run, were this check removed.
// There the normal policy kept the same p99 lateness (0.05-0.3 ms at
// 1 400-2 000/s, nine trials twice). With two CPUs or
// more the kernel moves the waiting thread to another CPU, and a
// dispatcher lowered while awake lost its point: the bench's two-core
// pipeline trials had a p99 lateness of 0.4-2 ms against 0.1-0.4 ms.
const oneCPURefusal = "the dispatcher may run on one CPU only, where a real-time thread can wait up to a second for the garbage collector's thread it preempted"

// threadCPUs is how many CPUs the calling thread may run on; 0 when its
// affinity cannot be read, which leaves the policy as asked (as before
// this was read at all).
func threadCPUs() int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return 0
	}
	return set.Count()
}

// preciseThread locks the calling goroutine (the dispatcher's own) to
// its OS thread and sets that thread's timer slack to
// dispatcherTimerSlack, so that preciseSleep wakes it when asked: the
// default slack of 50 µs is how late the kernel may wake a sleeping
// thread, to group wake-ups (BenchmarkEngine/loopback-fast/rate=2000, old
// and new alternated three times: late-p50-µs 114-157 with it, 80-117
// without).
//
// With realtime, the thread also takes SCHED_FIFO at
// dispatcherRealtimePriority where the process may raise it (CAP_SYS_NICE,
// as root has, or an RLIMIT_RTPRIO of 1 or more, in a cgroup that allows
// real-time threads): the kernel then runs the woken dispatcher at once
// instead of after whichever thread holds the core. Under the normal
// policy the woken dispatcher was seen runnable and not running for 1-5 ms
// at a time on a two-core machine whose CPUs were a third idle, and those
// stalls were the pipeline's p99 lateness. Where the policy is refused,
// the run goes on under the normal one and the returned Dispatcher says
// why. A thread started under another policy (the crowd run under chrt)
// keeps it, and its slack (a real-time thread has none).
//
// Not where the thread may run on one CPU only (a cpuset, taskset): see
// oneCPURefusal.
//
// The returned func restores the policy, then the slack (a real-time
// thread's cannot be set), and unlocks the thread; if either cannot be
// restored, it returns with the goroutine still locked, which must then
// end so that the thread exits with it rather than serve another
// goroutine so set.
func preciseThread(realtime bool) (record.Dispatcher, func()) {
	runtime.LockOSThread()
	was, err := schedpolicy.Of(0)
	if err != nil {
		was = -1 // unknown ("unknown"): left as it is
	}
	d := record.Dispatcher{Policy: was.String()}
	if base := was.Base(); base != schedpolicy.Other {
		if realtime && base != schedpolicy.FIFO && base != schedpolicy.RR {
			d.Refused = "the crowd runs under the " + d.Policy + " policy, which it keeps"
		}
		return d, runtime.UnlockOSThread
	}
	prev, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	slack := errno == 0 && prev != 0
	if slack {
		_, _, errno = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, dispatcherTimerSlack, 0)
		slack = errno == 0
	}
	if slack {
		d.TimerSlackNs = dispatcherTimerSlack
	}
	raised := false
	if realtime && threadCPUs() == 1 {
		d.Refused = oneCPURefusal
		realtime = false
	}
	if realtime {
		if err := schedpolicy.Set(0, schedpolicy.FIFO|schedpolicy.ResetOnFork, dispatcherRealtimePriority); err != nil {
			d.Refused = "SCHED_FIFO: " + err.Error()
			if errors.Is(err, syscall.EPERM) {
				d.Refused += " (it needs CAP_SYS_NICE, as root has, or an RLIMIT_RTPRIO of 1 or more, and a cgroup that allows real-time threads)"
			}
		} else {
			raised = true
			d.Policy = schedpolicy.FIFO.String()
		}
	}
	return d, func() {
		// Back to the normal policy as it was; a process without
		// CAP_SYS_NICE may not clear the reset-on-fork flag, which on a
		// thread of the normal policy changes nothing, so it may stay.
		if raised && schedpolicy.Set(0, was, 0) != nil && schedpolicy.Set(0, was|schedpolicy.ResetOnFork, 0) != nil {
			return
		}
		if slack {
			if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, prev, 0); errno != 0 {
				return
			}
		}
		runtime.UnlockOSThread()
	}
}
