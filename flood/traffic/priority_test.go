//go:build linux

package traffic

import (
	"os"
	"syscall"
	"testing"
)

// TestBackgroundThreadRestoresItsPriority: a signer's thread runs at the
// nice value asked for while it signs (at 19, the lowest, under SCHED_IDLE
// too, so any thread that wakes takes the core from it at once) and is
// handed back at its old policy and priority (when the process may raise
// it again), so no goroutine later scheduled on that thread runs slowly,
// and no thread exits under a child process.
func TestBackgroundThreadRestoresItsPriority(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("raising a priority back needs CAP_SYS_NICE")
	}
	type state struct{ nice, policy int }
	for _, tc := range []struct {
		nice       int
		wantPolicy int // during
	}{
		{19, schedIdle},  // the lowest: idle, preempted by any waking thread
		{10, schedOther}, // a nice value alone
		{1, schedOther},  // the highest a signer may ask
	} {
		done := make(chan [3]state)
		go func() {
			tid := syscall.Gettid()
			read := func() state {
				prio, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
				policy, _ := threadPolicy(syscall.Gettid())
				return state{20 - prio, policy}
			}
			before := read()
			restore := backgroundThread(tc.nice)
			during := read()
			restore()
			if syscall.Gettid() != tid {
				t.Errorf("nice %d: the goroutine moved threads while pinned", tc.nice)
			}
			done <- [3]state{before, during, read()}
		}()
		got := <-done
		if got[1] != (state{tc.nice, tc.wantPolicy}) || got[2] != got[0] {
			t.Errorf("nice %d: {nice policy} before, during, after = %v; want x, {%d %d}, x", tc.nice, got, tc.nice, tc.wantPolicy)
		}
	}
}

// threadPolicy is thread tid's scheduling policy.
func threadPolicy(tid int) (int, error) {
	p, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(p), nil
}

// TestBackgroundThreadDefaultLeavesPriority: with no nice value asked for
// (the default), a signer runs at the process's own priority, so a SUT on
// the same machine does not starve it.
func TestBackgroundThreadDefaultLeavesPriority(t *testing.T) {
	for _, nice := range []int{0, -5, 20} { // unset; a raise; out of range
		done := make(chan [2]int)
		go func() {
			before, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
			restore := backgroundThread(nice)
			during, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
			restore()
			done <- [2]int{before, during}
		}()
		if got := <-done; got[0] != got[1] {
			t.Errorf("backgroundThread(%d) changed the priority: %v", nice, got)
		}
	}
}
