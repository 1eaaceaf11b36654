package flood

import (
	"runtime"
	"syscall"
	"time"
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

// preciseThread locks the calling goroutine (the dispatcher) to its OS
// thread and sets that thread's timer slack to dispatcherTimerSlack, so
// that preciseSleep wakes it when asked: the default slack of 50 µs is
// how late the kernel may wake a sleeping thread, to group wake-ups
// (BenchmarkEngine/loopback-fast/rate=2000, old and new alternated three
// times: late-p50-µs 114-157 with it, 80-117 without). The returned func
// restores the slack and unlocks the thread; if the slack cannot be
// restored, the goroutine stays locked to the thread, which then exits
// with it rather than serve another goroutine with no slack. A thread
// that has none to restore (a real-time one reads 0, which would set the
// default) is left as it is.
func preciseThread() (restore func()) {
	runtime.LockOSThread()
	prev, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno != 0 || prev == 0 {
		runtime.UnlockOSThread()
		return func() {}
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, dispatcherTimerSlack, 0); errno != 0 {
		runtime.UnlockOSThread()
		return func() {}
	}
	return func() {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, prev, 0); errno == 0 {
			runtime.UnlockOSThread()
		}
	}
}
