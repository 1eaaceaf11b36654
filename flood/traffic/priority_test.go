//go:build linux

package traffic

import (
	"context"
	"math/bits"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/schedpolicy"
)

// TestBackgroundThreadRestoresItsPriority: a signer's thread runs at the
// nice value asked for while it signs (at 19, the lowest, under SCHED_IDLE
// too, so any thread that wakes takes the core from it at once; at 0, the
// crowd's own), pinned and bound to its slot's CPU of those it may use,
// and is handed back with its old CPUs, policy and priority (when the
// process may raise it again), so no goroutine later scheduled on that
// thread runs slowly or on one CPU, and no thread exits under a child
// process.
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
		{0, 1, schedpolicy.Other},  // the crowd's own priority: bound all the same
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
			restore, pinned, idle := backgroundThread(tc.nice, tc.slot)
			during := read()
			if !pinned {
				t.Errorf("nice %d: the goroutine is not pinned to its bound thread", tc.nice)
			}
			if idle != (during.policy == schedpolicy.Idle) {
				t.Errorf("nice %d: idle = %v with the policy %v", tc.nice, idle, during.policy)
			}
			if !restore() {
				t.Errorf("nice %d: the thread was not restored", tc.nice)
			}
			if syscall.Gettid() != tid {
				t.Errorf("nice %d: the goroutine moved threads while pinned", tc.nice)
			}
			done <- [3]state{before, during, read()}
		}()
		got := <-done
		one, ok := got[0].cpus.nth(tc.slot)
		want := tc.nice
		if want == 0 {
			want = got[0].nice // unchanged, under `nice go test` too
		}
		if !ok || got[1] != (state{want, tc.wantPolicy, one}) || got[2] != got[0] {
			t.Errorf("nice %d slot %d: {nice policy cpus} before, during, after = %v; want x, {%d %d %v}, x",
				tc.nice, tc.slot, got, want, tc.wantPolicy, one)
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

// TestBackgroundThreadAtTheCrowdsPriority: a signer asked for no nice
// value (0) keeps the process's priority, so a SUT on the same machine
// does not starve it, and is bound to its slot's CPU; one asked for a
// value out of range keeps its thread as it was, unpinned, on any of its
// CPUs. Neither needs a privilege.
func TestBackgroundThreadAtTheCrowdsPriority(t *testing.T) {
	for _, tc := range []struct {
		nice  int
		bound bool
	}{
		{0, true},   // the crowd's own priority: bound, nothing else
		{-5, false}, // a raise: nothing
		{20, false}, // past the lowest: nothing
	} {
		type seen struct {
			prio   [2]int
			cpus   [3]cpuMask
			pinned bool
		}
		done := make(chan seen)
		go func() {
			var s seen
			s.prio[0], _ = syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
			s.cpus[0], _ = getAffinity(syscall.Gettid())
			restore, pinned, idle := backgroundThread(tc.nice, 1)
			if idle {
				t.Errorf("backgroundThread(%d) says the thread is idle", tc.nice)
			}
			s.pinned = pinned
			s.prio[1], _ = syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
			s.cpus[1], _ = getAffinity(syscall.Gettid())
			if !restore() {
				t.Errorf("nice %d: the thread was not restored", tc.nice)
			}
			s.cpus[2], _ = getAffinity(syscall.Gettid())
			done <- s
		}()
		s := <-done
		if s.prio[0] != s.prio[1] {
			t.Errorf("backgroundThread(%d) changed the priority: %v", tc.nice, s.prio)
		}
		want := s.cpus[0]
		if tc.bound {
			want, _ = s.cpus[0].nth(1)
		}
		if s.cpus[1] != want || s.pinned != tc.bound || s.cpus[2] != s.cpus[0] {
			t.Errorf("backgroundThread(%d): CPUs before, during, after %v, pinned %v; want x, %v, x, pinned %v", tc.nice, s.cpus, s.pinned, want, tc.bound)
		}
	}
}

// TestAutoPipelineFollowsTheDispatcher: under NiceAuto the signers sign at
// the crowd's priority until a schedule starts, at 19 under SCHED_IDLE
// beside a dispatcher that is not real-time, and back at 0 beside one
// that is (where the process may raise them again), each bound to a CPU
// of its own throughout, as the kernel shows their threads.
func TestAutoPipelineFollowsTheDispatcher(t *testing.T) {
	const workers = 2
	w := testWorld(t, 1, 2)
	pl := NewPipeline(signedGenerator(t, w, nil), testSigner(), PipelineOptions{Workers: workers, Buffer: 4, Nice: NiceAuto})
	defer pl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// settled is count() once it is want or after a few seconds of
	// trying: each signer moves between two signatures, so taking requests
	// makes them sign, and one that just refilled the buffer may not have
	// moved yet. Two requests a try: a lowered signer on a busy machine
	// signs slowly.
	settled := func(count func(*testing.T) int, want int) int {
		t.Helper()
		n := -1
		for try := 0; try < 100 && n != want; try++ {
			for range 2 {
				if _, err := pl.Next(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := pl.Fill(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			n = count(t)
		}
		return n
	}
	lowered := func(want int) int { return settled(idleThreadsAt19, want) }
	// Each signer on a CPU of its own: as many threads bound to one CPU
	// as signers, on two CPUs or more.
	wantBound := workers
	if runtime.NumCPU() < 2 {
		wantBound = -1 // one CPU: every thread is on it
	}
	bound := func(when string) {
		if wantBound < 0 {
			return
		}
		if n := settled(threadsOnOneCPU, wantBound); n != wantBound {
			t.Errorf("%s: %d threads bound to one CPU, want the %d signers", when, n, wantBound)
		}
	}
	if n := lowered(0); n != 0 {
		t.Errorf("before any schedule: %d threads lowered, want none", n)
	}
	bound("before any schedule")
	pl.Dispatching(record.Dispatcher{Policy: "other"})
	if pl.realTime.Load() {
		t.Error("beside a dispatcher under the normal policy: the signers think it real-time")
	}
	if n := lowered(workers); n != workers || pl.SignerNice() != 19 {
		t.Errorf("beside a dispatcher under the normal policy: %d threads lowered (asked %d), want the %d signers at 19", n, pl.SignerNice(), workers)
	}
	bound("beside a dispatcher under the normal policy")
	if os.Geteuid() != 0 {
		t.Skip("raising the signers back needs CAP_SYS_NICE")
	}
	pl.Dispatching(record.Dispatcher{Policy: "deadline"})
	if !pl.realTime.Load() {
		t.Error("beside a real-time dispatcher: the signers do not know it")
	}
	if n := lowered(0); n != 0 || pl.SignerNice() != 0 {
		t.Errorf("beside a real-time dispatcher: %d threads lowered (asked %d), want none", n, pl.SignerNice())
	}
	bound("beside a real-time dispatcher")
}

// idleThreadsAt19 counts the process's threads at nice 19 under SCHED_IDLE.
func idleThreadsAt19(t *testing.T) int {
	return countThreads(t, func(tid int) bool {
		prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		policy, perr := schedpolicy.Of(tid)
		return err == nil && perr == nil && 20-prio == 19 && policy.Base() == schedpolicy.Idle
	})
}

// threadsOnOneCPU counts the process's threads that may run on one CPU
// only.
func threadsOnOneCPU(t *testing.T) int {
	return countThreads(t, func(tid int) bool {
		cpus, err := getAffinity(tid)
		ones := 0
		for _, w := range cpus {
			ones += bits.OnesCount64(w)
		}
		return err == nil && ones == 1
	})
}

// countThreads counts the process's threads for which is reports true.
func countThreads(t *testing.T, is func(tid int) bool) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		if tid, err := strconv.Atoi(task.Name()); err == nil && is(tid) {
			n++
		}
	}
	return n
}
