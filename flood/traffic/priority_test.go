//go:build linux

package traffic

import (
	"os"
	"syscall"
	"testing"
)

// TestBackgroundThreadRestoresItsPriority: a signer's thread runs at the
// nice value asked for while it signs and is handed back at its old priority (when the
// process may raise it again), so no goroutine later scheduled on that
// thread runs slowly, and no thread exits under a child process.
func TestBackgroundThreadRestoresItsPriority(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("raising a priority back needs CAP_SYS_NICE")
	}
	done := make(chan [3]int)
	go func() {
		tid := syscall.Gettid()
		before, _ := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		restore := backgroundThread(19)
		during, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
		restore()
		after, _ := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		done <- [3]int{20 - before, 20 - during, 20 - after}
	}()
	nice := <-done
	if nice[1] != 19 || nice[2] != nice[0] {
		t.Errorf("nice before, during, after = %v; want x, 19, x", nice)
	}
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
