//go:build !race

// The race detector slows every goroutine switch, the GC's and the
// dispatcher's alike, several times over: the lateness bound below is
// one for the flood as it ships (.ci/run's no-race pass runs this file).

package flood

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A dispatcher asked to be real-time never waits on the GC. The Go
// runtime makes a thread that must wait for a goroutine the GC is
// scanning spin and yield, and a SCHED_FIFO thread's yield gives its CPU
// to no thread of the normal policy: a real-time dispatcher that shared
// its one CPU with the scanning thread spun until the kernel's real-time
// throttling stopped it, and sends went up to a second late. Here the
// process is pinned to one CPU with three Ps (as the bench's one-core row
// runs), the GC runs back to back, and hundreds of parked goroutines give
// it stacks to scan, while a flood asking for a real-time dispatcher
// sends to a real listener for two seconds: the dispatcher stays under
// the normal policy, says why, and no send leaves more than 500 ms after
// its time (the real-time dispatcher this replaced sent a second late in
// every run of six; the normal one, 16-33 ms in as many).
func TestRealtimeDispatcherNeverWaitsOnTheGC(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 s flood")
	}
	if !mayRaise(t) {
		t.Skip("this process may not raise a thread to SCHED_FIFO: nothing to invert")
	}
	restore := pinProcessToOneCPU(t)
	defer restore()

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()

	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 500 { // stacks for every GC to scan
		wg.Add(1)
		go func() { defer wg.Done(); parkDeep(8, done) }()
	}
	wg.Add(1)
	go func() { // the GC, back to back
		defer wg.Done()
		for !closed(done) {
			runtime.GC()
		}
	}()
	defer func() { close(done); wg.Wait() }()

	tr := NewClientTransport(TransportOptions{Client: ClientFast})
	defer tr.CloseIdleConnections()
	res := mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, 1000), Source: newCycleSource(t, srv.URL),
		Transport: tr, Priority: PriorityRealtime, Limits: Limits{Duration: 2 * time.Second}})
	if d := res.Dispatcher; d.Policy != "other" || !strings.Contains(d.Refused, "one CPU") {
		t.Errorf("the dispatcher ran under %q (refused: %q), want the normal policy and why", d.Policy, d.Refused)
	}
	worst := time.Duration(res.Overall.Lateness.Max()) * time.Microsecond
	t.Logf("the latest send left %v late, under the %s policy", worst, res.Dispatcher.Policy)
	if worst > 500*time.Millisecond || res.Overall.Counts.Completed < 1000 {
		t.Errorf("with the GC running on the dispatcher's CPU, a send left %v late (%d of %d completed), want every one within 500 ms",
			worst, res.Overall.Counts.Completed, res.Overall.Counts.Offered)
	}
}

// parkDeep parks the goroutine depth calls deep until done closes.
func parkDeep(depth int, done <-chan struct{}) {
	var pad [64]byte
	if depth > 0 {
		parkDeep(depth-1, done)
		runtime.KeepAlive(&pad)
		return
	}
	<-done
}

// pinProcessToOneCPU binds every thread of this process, and so every
// thread they make, to the first CPU it may run on, with GOMAXPROCS 3
// (the runtime would otherwise follow the affinity down to 1), and
// returns what puts both back. It skips the test where the pin does not
// hold.
func pinProcessToOneCPU(t *testing.T) (restore func()) {
	t.Helper()
	var all, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatalf("sched_getaffinity: %v", err)
	}
	for cpu := range 1 << 16 {
		if all.IsSet(cpu) {
			one.Set(cpu)
			break
		}
	}
	runtime.GOMAXPROCS(3)
	restore = func() {
		setEveryThread(t, &all)
		runtime.SetDefaultGOMAXPROCS()
	}
	setEveryThread(t, &one)
	if n := lockedThreadCPUs(); n != 1 {
		restore()
		t.Skipf("pinned, a new thread still may run on %d CPUs", n)
	}
	return restore
}

// setEveryThread sets the affinity of every thread of this process to
// mask, again until a pass finds none left to set: a thread the runtime
// starts meanwhile inherits its maker's mask, which may be the old one.
func setEveryThread(t *testing.T, mask *unix.CPUSet) {
	t.Helper()
	for range 100 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		changed := false
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			var has unix.CPUSet
			if unix.SchedGetaffinity(tid, &has) != nil || has == *mask {
				continue // exited meanwhile, or already set
			}
			// A thread that exited meanwhile is no error.
			if unix.SchedSetaffinity(tid, mask) == nil {
				changed = true
			}
		}
		if !changed {
			return
		}
	}
	t.Fatal("threads kept appearing with another affinity")
}

// lockedThreadCPUs is threadCPUs on a thread of its own.
func lockedThreadCPUs() int {
	n := make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		n <- threadCPUs()
	}()
	return <-n
}
