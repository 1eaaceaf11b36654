package traffic

import (
	"math/bits"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/crowdfed/crowd/internal/schedpolicy"
)

// backgroundThread pins the calling goroutine to its own OS thread, binds
// that thread to one CPU, the slot-th (wrapping) of those it may run on
// (signer i to CPU i), and sets its nice value to nice: 0 leaves the
// crowd's own priority, 1…19 lowers it; anything else changes nothing.
// Pipeline signers call it with the value their pipeline asks for now
// (PipelineOptions.Nice, or under NiceAuto the dispatcher's). Lowered, on
// a machine whose cores they fill, they let the kernel run the dispatcher
// and the senders as soon as they wake, instead of after a signer's time
// slice. The price: every other process on the machine, a SUT beside the
// crowd included, also runs before them.
//
// At 19, the lowest, the thread also takes the SCHED_IDLE policy. Nice
// alone does not make a waking thread run at once: the kernel lets the
// thread it picked keep the core for a protected slice (about 1.4 ms on
// two cores), whatever its nice value, and the dispatcher's wake-ups
// landed there (its sleeps overran by 1-4 ms a few times a second at
// 1 500/s). A SCHED_IDLE thread is preempted by any other thread that wakes.
//
// Why bound: the kernel balances runnable threads across CPUs by weight,
// and by default moves none that ran in the last half millisecond (it
// counts it cache-hot), as a signer always has. A lowered thread weighs
// next to nothing (3 against a normal thread's 1 024 under SCHED_IDLE, 15
// at nice 19), and it left both signers queued on one CPU a third of the
// time while the other sat idle: on two cores at 3 000/s, 0.3 cores idle
// with both signers runnable. At the crowd's priority beside a real-time
// dispatcher, which preempts the signer on its CPU at each send, the
// machine still idled 36-48 µs a send at 3 600-3 750/s with two unbound
// signers, under 1 µs with two bound ones (and no yield: see
// signerYields). Bound, each signer takes what its own CPU leaves. The
// price, where CPU is not short: a pinned signer waiting on a full buffer
// is woken on its own thread (the flood took 4-11 % more CPU an activity
// at 500-1 000/s).
//
// The returned func restores the thread's policy, priority and CPUs and
// unpins it, so the thread goes back to the runtime's pool instead of
// exiting with the goroutine: a thread that exits would fire the
// parent-death signal of any child process it happened to start. It
// reports whether it did. Without the privilege to raise a priority again
// (CAP_SYS_NICE), or when any of them cannot be restored, the thread stays
// pinned (to exit with its goroutine) and, the CPUs restored last, as low
// and as bound as it was.
//
// pinned reports whether the goroutine is pinned to the thread now: a
// pinned goroutine that yields hands its P to another thread and waits to
// be handed back, two thread wake-ups a yield (see signerYields). idle
// reports whether the SCHED_IDLE policy took.
func backgroundThread(nice, slot int) (restore func() (ok bool), pinned, idle bool) {
	if nice < 0 || nice > 19 {
		return func() bool { return true }, false, false
	}
	runtime.LockOSThread()
	tid := syscall.Gettid()
	// Bound first, at the thread's own priority: binding moves the thread
	// to its CPU, which a thread already lowered might wait long for.
	cpus, err := getAffinity(tid)
	bound := false
	if one, ok := cpus.nth(slot); err == nil && ok {
		bound = setAffinity(tid, &one) == nil
	}
	unbind := func() bool {
		if !bound || setAffinity(tid, &cpus) == nil {
			runtime.UnlockOSThread()
			return true
		}
		return false // still bound: the thread stays pinned and exits
	}
	if nice == 0 {
		if !bound {
			runtime.UnlockOSThread()
			return func() bool { return true }, false, false
		}
		return unbind, true, false
	}
	// The raw getpriority returns 20 − nice.
	prev, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil || syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice) != nil {
		if unbind() {
			return func() bool { return true }, false, false
		}
		return unbind, true, false // still bound: tried again at restore
	}
	idle = nice == 19 && schedpolicy.Set(tid, schedpolicy.Idle, 0) == nil
	return func() bool {
		if idle && schedpolicy.Set(tid, schedpolicy.Other, 0) != nil {
			return false // still idle: the thread must not serve anyone else
		}
		if syscall.Setpriority(syscall.PRIO_PROCESS, tid, 20-prev) != nil {
			return false // still low
		}
		return unbind()
	}, true, idle
}

// cpuMask is a CPU affinity mask of sched_setaffinity(2), for up to 1 024
// CPUs (the kernel's CPU_SETSIZE).
type cpuMask [16]uint64

// getAffinity is the set of CPUs thread tid may run on.
func getAffinity(tid int) (cpuMask, error) {
	var m cpuMask
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, uintptr(tid), unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m)))
	if errno != 0 {
		return m, errno
	}
	return m, nil
}

// setAffinity lets thread tid run on the CPUs of m only. It may wait for
// the thread to move, so the runtime is told it is in a system call.
func setAffinity(tid int, m *cpuMask) error {
	_, _, errno := syscall.Syscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m)))
	if errno != 0 {
		return errno
	}
	return nil
}

// nth is the mask of the n-th CPU of m, counting from the lowest and
// wrapping past the last (n ≥ 0); false when m holds none.
func (m *cpuMask) nth(n int) (cpuMask, bool) {
	count := 0
	for _, w := range m {
		count += bits.OnesCount64(w)
	}
	if count == 0 || n < 0 {
		return cpuMask{}, false
	}
	n %= count
	for i, w := range m {
		if c := bits.OnesCount64(w); n >= c {
			n -= c
			continue
		}
		for ; ; w &= w - 1 { // drop the lowest CPU until the n-th is lowest
			if n == 0 {
				var one cpuMask
				one[i] = w & -w
				return one, true
			}
			n--
		}
	}
	return cpuMask{}, false
}
