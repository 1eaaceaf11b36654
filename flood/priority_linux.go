package flood

import (
	"runtime"
	"syscall"
)

// backgroundThread pins the calling goroutine to its own OS thread and
// lowers that thread's CPU priority (nice 19). Pipeline signers call it:
// on a machine whose cores they fill, the kernel then runs the dispatcher
// and the senders as soon as they wake, instead of after a signer's
// time slice, so signing keeps the spare CPU without making sends late.
// The thread ends with the goroutine (a locked thread is not reused).
func backgroundThread() {
	runtime.LockOSThread()
	// Best effort: a refused setpriority leaves the thread at normal priority.
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19)
}
