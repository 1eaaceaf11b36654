package flood

import (
	"syscall"
	"time"
)

// preciseSleep sleeps d with nanosleep(2): the kernel wakes the thread
// within its timer slack (50 µs by default), where a runtime timer in an
// idle process waits for the netpoller's next whole millisecond. The thread
// is held for at most coarseMargin, and the scheduler hands its P to other
// goroutines if they need it.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
