package flood

import (
	"runtime"
	"syscall"
)

// backgroundThread pins the calling goroutine to its own OS thread and
// lowers that thread's CPU priority (nice 19). Pipeline signers call it:
// on a machine whose cores they fill, the kernel then runs the dispatcher
// and the senders as soon as they wake, instead of after a signer's time
// slice, so signing keeps the spare CPU without making sends late.
//
// The returned func restores the thread's priority and unpins it, so the
// thread goes back to the runtime's pool instead of exiting with the
// goroutine: a thread that exits would fire the parent-death signal of
// any child process it happened to start. Without the privilege to raise
// a priority again (CAP_SYS_NICE), the thread stays pinned and exits.
func backgroundThread() (restore func()) {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	// The raw getpriority returns 20 − nice.
	prev, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil || syscall.Setpriority(syscall.PRIO_PROCESS, tid, 19) != nil {
		runtime.UnlockOSThread()
		return func() {}
	}
	return func() {
		if syscall.Setpriority(syscall.PRIO_PROCESS, tid, 20-prev) == nil {
			runtime.UnlockOSThread()
		}
	}
}
