package traffic

import (
	"runtime"
	"syscall"
	"unsafe"
)

// backgroundThread pins the calling goroutine to its own OS thread and
// sets that thread's nice value to nice (1…19; anything else changes
// nothing). Pipeline signers call it with PipelineOptions.Nice: on a
// machine whose cores they fill, the kernel then runs the dispatcher and
// the senders as soon as they wake, instead of after a signer's time
// slice. The price: every other process on the machine, a SUT beside
// the crowd included, also runs before them.
//
// At 19, the lowest, the thread also takes the SCHED_IDLE policy. Nice
// alone does not make a waking thread run at once: the kernel lets the
// thread it picked keep the core for a protected slice (about 1.4 ms on
// two cores), whatever its nice value, and the dispatcher's wake-ups
// landed there (its sleeps overran by 1-4 ms a few times a second at
// 1 500/s). A SCHED_IDLE thread is preempted by any other thread that wakes.
//
// The returned func restores the thread's policy and priority and unpins
// it, so the thread goes back to the runtime's pool instead of exiting
// with the goroutine: a thread that exits would fire the parent-death
// signal of any child process it happened to start. Without the privilege
// to raise a priority again (CAP_SYS_NICE), the thread stays pinned and
// exits.
func backgroundThread(nice int) (restore func()) {
	if nice < 1 || nice > 19 {
		return func() {}
	}
	runtime.LockOSThread()
	tid := syscall.Gettid()
	// The raw getpriority returns 20 − nice.
	prev, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil || syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice) != nil {
		runtime.UnlockOSThread()
		return func() {}
	}
	idle := nice == 19 && setPolicy(tid, schedIdle) == nil
	return func() {
		if idle && setPolicy(tid, schedOther) != nil {
			return // still idle: the thread must not serve anyone else
		}
		if syscall.Setpriority(syscall.PRIO_PROCESS, tid, 20-prev) == nil {
			runtime.UnlockOSThread()
		}
	}
}

// The scheduling policies of sched(7) the signers move between.
const (
	schedOther = 0
	schedIdle  = 5
)

// setPolicy sets thread tid's scheduling policy (with static priority 0,
// the only one these policies take).
func setPolicy(tid, policy int) error {
	var param struct{ priority int32 }
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(policy), uintptr(unsafe.Pointer(&param)))
	if errno != 0 {
		return errno
	}
	return nil
}
