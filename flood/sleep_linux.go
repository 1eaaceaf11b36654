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
// dispatcher under SCHED_FIFO: the lowest, above every thread of the
// normal policy and below every real-time thread the machine already has.
const dispatcherRealtimePriority = 1

// A deadline dispatcher may run dispatcherDeadlineRuntime in every
// dispatcherDeadlinePeriod: 90 % of a CPU, which a dispatcher that also
// signs (--signing jit) may use, as SCHED_FIFO's throttling left it 95 %.
// The kernel admits a reservation only while the machine's deadline
// threads ask less than its real-time bandwidth (by default 95 % of each
// CPU), counted whether they sleep or not: where it is refused (EBUSY:
// other floods hold it), dispatcherDeadlineRuntimeLeast is asked for,
// which a dispatcher that only times sends never used up in the trials
// (its worst lateness beside busy CPUs was the same at 300 µs as at
// 900 µs).
const (
	dispatcherDeadlineRuntime      = 900 * time.Microsecond
	dispatcherDeadlineRuntimeLeast = 300 * time.Microsecond
	dispatcherDeadlinePeriod       = time.Millisecond
)

// Why the dispatcher's real-time policy is SCHED_DEADLINE, and SCHED_FIFO
// only where that is refused: the Go runtime makes a thread wait for
// another by spinning and yielding its CPU (a goroutine the GC is
// scanning cannot be woken, run, or leave a system call until the scan
// ends). A SCHED_FIFO thread's yield gives its CPU to no thread of the
// normal policy, so a FIFO dispatcher that had preempted the scanning
// thread on its CPU spun until that thread moved to another CPU or the
// kernel's real-time throttling (by default 950 ms of each second)
// stopped it. A SCHED_DEADLINE thread's yield gives up the rest of its
// period, so the scanning thread runs within a millisecond. In a scratch
// trial at 1 000/s with the GC running back to back and a busy loop on
// each of two CPUs (six 3 s floods each): FIFO sent up to 1.07 and 1.14 s
// late in two floods and 51-116 ms in the others, deadline 10-33 ms, the
// normal policy 22-34 ms; without the busy loops and the forced GC, at
// 3 000/s, deadline's p99 lateness was 58-78 µs, FIFO's 65 µs-6.8 ms,
// the normal policy's 102-252 µs.

// oneCPURefusal is why a dispatcher refused SCHED_DEADLINE (which the
// kernel refuses to a thread that may not run on every CPU of its
// domain) stays under the normal policy where it may run on one CPU only:
// with one CPU the scanning thread a FIFO dispatcher preempted had
// nowhere else to run, and the bench's one-core pipeline sent up to a
// second late in two or three 3 s trials of nine, the dispatcher's thread
// spinning in the runtime (casgstatus, from exitsyscall or ready) for a
// third of the core; TestRealtimeDispatcherNeverWaitsOnTheGC would show it
// again, a second late in every run, were this check removed. There the
// normal policy kept the same p99 lateness (0.05-0.3 ms at 1 400-2 000/s,
// nine trials twice).
const oneCPURefusal = "the dispatcher may run on one CPU only, where SCHED_DEADLINE is refused and a SCHED_FIFO thread can wait up to a second for the garbage collector's thread it preempted"

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
// With realtime, the thread also takes SCHED_DEADLINE
// (dispatcherDeadlineRuntime a dispatcherDeadlinePeriod) where the process
// may (CAP_SYS_NICE, as root has, and bandwidth left), else SCHED_FIFO at
// dispatcherRealtimePriority where it may raise that (CAP_SYS_NICE or an
// RLIMIT_RTPRIO of 1 or more, in a cgroup that allows real-time threads)
// and the thread may run on more than one CPU (see oneCPURefusal): the
// kernel then runs the woken dispatcher at once instead of after
// whichever thread holds the core. Under the normal policy the woken
// dispatcher was seen runnable and not running for 1-5 ms at a time on a
// two-core machine whose CPUs were a third idle, and those stalls were
// the pipeline's p99 lateness. Where both are refused, the run goes on
// under the normal one and the returned Dispatcher says why. A thread
// started under another policy (the crowd run under chrt) keeps it, and
// its slack (a real-time thread has none).
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
	d := record.Dispatcher{Policy: was.String(), CPUs: threadCPUs()}
	if base := was.Base(); base != schedpolicy.Other {
		if realtime && base != schedpolicy.FIFO && base != schedpolicy.RR && base != schedpolicy.Deadline {
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
	if realtime {
		raised, d.Policy, d.Refused = raiseDispatcher(kernelPolicy())
		if !raised {
			d.Policy = was.String()
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

// policyCalls are the kernel calls raiseDispatcher makes on the calling
// thread: a value, so that its fallbacks (EBUSY, EPERM, one CPU) are
// specified by a test that sets each refusal, which no machine gives at
// will.
type policyCalls struct {
	setDeadline func(budget, period time.Duration) error // schedpolicy.SetDeadline on the calling thread
	setFIFO     func(priority int) error                 // schedpolicy.Set of FIFO (reset-on-fork) on it
	cpus        func() int                               // threadCPUs
}

// kernelPolicy is the kernel's calls, which a dispatcher's thread is
// raised with.
func kernelPolicy() policyCalls {
	return policyCalls{
		setDeadline: func(budget, period time.Duration) error { return schedpolicy.SetDeadline(0, budget, period) },
		setFIFO: func(priority int) error {
			return schedpolicy.Set(0, schedpolicy.FIFO|schedpolicy.ResetOnFork, priority)
		},
		cpus: threadCPUs,
	}
}

// raiseDispatcher puts the calling thread under SCHED_DEADLINE, else
// SCHED_FIFO (see preciseThread), and says which; refused says why
// deadline was not set (with FIFO standing in, why that is the policy
// the record names), or why neither was.
func raiseDispatcher(k policyCalls) (raised bool, policy, refused string) {
	var dlErr error
	for _, budget := range []time.Duration{dispatcherDeadlineRuntime, dispatcherDeadlineRuntimeLeast} {
		if dlErr = k.setDeadline(budget, dispatcherDeadlinePeriod); !errors.Is(dlErr, syscall.EBUSY) {
			break
		}
	}
	if dlErr == nil {
		return true, schedpolicy.Deadline.String(), ""
	}
	why := "SCHED_DEADLINE: " + dlErr.Error()
	switch {
	case errors.Is(dlErr, syscall.EBUSY):
		why += " (other deadline threads hold the machine's real-time bandwidth)"
	case errors.Is(dlErr, syscall.EPERM):
		why += " (it needs CAP_SYS_NICE and a thread that may run on every CPU of its scheduling domain: not under taskset or a cpuset of some CPUs)"
	}
	if k.cpus() == 1 {
		return false, "", oneCPURefusal
	}
	if err := k.setFIFO(dispatcherRealtimePriority); err != nil {
		refused = why + "; SCHED_FIFO: " + err.Error()
		if errors.Is(err, syscall.EPERM) {
			refused += " (they need CAP_SYS_NICE, as root has, or for SCHED_FIFO an RLIMIT_RTPRIO of 1 or more, and a cgroup that allows real-time threads)"
		}
		return false, "", refused
	}
	return true, schedpolicy.FIFO.String(), why + "; SCHED_FIFO instead"
}
