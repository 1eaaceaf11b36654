package traffic

import (
	"runtime"
	"syscall"
)

// backgroundThread pins the calling goroutine to its own OS thread and
// sets that thread's nice value to nice (1…19; anything else changes
// nothing). Pipeline signers call it with PipelineOptions.Nice: on a
// machine whose cores they fill, the kernel then runs the dispatcher and
// the senders as soon as they wake, instead of after a signer's time
// slice. The price: every other process on the machine, a SUT beside
// the crowd included, also runs before them.
//
// The returned func restores the thread's priority and unpins it, so the
// thread goes back to the runtime's pool instead of exiting with the
// goroutine: a thread that exits would fire the parent-death signal of
// any child process it happened to start. Without the privilege to raise
// a priority again (CAP_SYS_NICE), the thread stays pinned and exits.
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
	return func() {
		if syscall.Setpriority(syscall.PRIO_PROCESS, tid, 20-prev) == nil {
			runtime.UnlockOSThread()
		}
	}
}
