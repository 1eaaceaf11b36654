//go:build linux

package traffic

import (
	"os"
	"syscall"
	"testing"

	"github.com/crowdfed/crowd/internal/schedpolicy"
)

// TestBackgroundThreadRestoresItsPriority: a signer's thread runs at the
// nice value asked for while it signs (at 19, the lowest, under SCHED_IDLE
// too, so any thread that wakes takes the core from it at once), bound to
// its slot's CPU of those it may use, and is handed back with its old CPUs,
// policy and priority (when the process may raise it again), so no
// goroutine later scheduled on that thread runs slowly or on one CPU, and
// no thread exits under a child process.
func TestBackgroundThreadRestoresItsPriority(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("raising a priority back needs CAP_SYS_NICE")
	}
	type state struct {
		nice   int
		policy schedpolicy.Policy
		cpus   cpuMask
	}
	for _, tc := range []struct {
		nice, slot int
		wantPolicy schedpolicy.Policy // during
	}{
		{19, 0, schedpolicy.Idle},  // the lowest: idle, preempted by any waking thread; the first CPU
		{19, 1, schedpolicy.Idle},  // the second signer: the second CPU (the first again on one)
		{10, 0, schedpolicy.Other}, // a nice value alone
		{1, 5, schedpolicy.Other},  // the highest a signer may ask; a slot past the CPUs wraps
	} {
		done := make(chan [3]state)
		go func() {
			tid := syscall.Gettid()
			read := func() state {
				prio, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
				policy, _ := schedpolicy.Of(syscall.Gettid())
				cpus, _ := getAffinity(syscall.Gettid())
				return state{20 - prio, policy, cpus}
			}
			before := read()
			restore, idle := backgroundThread(tc.nice, tc.slot)
			during := read()
			if idle != (during.policy == schedpolicy.Idle) {
				t.Errorf("nice %d: idle = %v with the policy %v", tc.nice, idle, during.policy)
			}
			restore()
			if syscall.Gettid() != tid {
				t.Errorf("nice %d: the goroutine moved threads while pinned", tc.nice)
			}
			done <- [3]state{before, during, read()}
		}()
		got := <-done
		one, ok := got[0].cpus.nth(tc.slot)
		if !ok || got[1] != (state{tc.nice, tc.wantPolicy, one}) || got[2] != got[0] {
			t.Errorf("nice %d slot %d: {nice policy cpus} before, during, after = %v; want x, {%d %d %v}, x",
				tc.nice, tc.slot, got, tc.nice, tc.wantPolicy, one)
		}
	}
}

// cpuMask.nth picks one CPU of a mask by its rank, wrapping.
func TestCPUMaskNth(t *testing.T) {
	mask := func(cpus ...int) cpuMask {
		var m cpuMask
		for _, c := range cpus {
			m[c/64] |= 1 << (c % 64)
		}
		return m
	}
	for _, c := range []struct {
		name string
		of   cpuMask
		n    int
		want cpuMask
		ok   bool
	}{
		// The first and second of two cores.
		{"first", mask(0, 1), 0, mask(0), true},
		{"second", mask(0, 1), 1, mask(1), true},
		// A rank past the last wraps to the first.
		{"wraps", mask(0, 1), 2, mask(0), true},
		// A process bound to other CPUs (taskset -c 2,5): their ranks, not CPU numbers.
		{"taskset", mask(2, 5), 1, mask(5), true},
		// One CPU: every slot shares it.
		{"one CPU", mask(3), 7, mask(3), true},
		// CPUs in another word of the mask.
		{"past 64", mask(1, 64, 130), 2, mask(130), true},
		// No CPU at all: nothing to bind to.
		{"empty", cpuMask{}, 0, cpuMask{}, false},
		// A negative rank: nothing.
		{"negative", mask(0, 1), -1, cpuMask{}, false},
	} {
		got, ok := c.of.nth(c.n)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: nth(%d) = %v, %v; want %v, %v", c.name, c.n, got, ok, c.want, c.ok)
		}
	}
}

// TestBackgroundThreadDefaultLeavesPriority: with no nice value asked for
// (the default), a signer runs at the process's own priority, on any of its
// CPUs, so a SUT on the same machine does not starve it.
func TestBackgroundThreadDefaultLeavesPriority(t *testing.T) {
	for _, nice := range []int{0, -5, 20} { // unset; a raise; out of range
		done := make(chan [2]int)
		go func() {
			before, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
			cpus, _ := getAffinity(syscall.Gettid())
			restore, idle := backgroundThread(nice, 1)
			if idle {
				t.Errorf("backgroundThread(%d) says the thread is idle", nice)
			}
			during, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
			cpusDuring, _ := getAffinity(syscall.Gettid())
			restore()
			if cpusDuring != cpus {
				t.Errorf("backgroundThread(%d) bound the thread to CPUs %v", nice, cpusDuring)
			}
			done <- [2]int{before, during}
		}()
		if got := <-done; got[0] != got[1] {
			t.Errorf("backgroundThread(%d) changed the priority: %v", nice, got)
		}
	}
}
