package flood

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/crowdfed/crowd/flood/record"
)

// Up to preciseRateMax the dispatcher sleeps on a thread of its own whose
// timer slack is the least the kernel allows, so that its last-stretch
// sleeps end on time; above it, on whichever thread it is given, slack
// and all. When the run ends, the thread is handed back with the slack it
// had. The record's Dispatcher says which.
func TestDispatcherThreadTimerSlack(t *testing.T) {
	const mine = 70_000 // ns: not the kernel's default, so a reset would show
	for _, tc := range []struct {
		rate      float64
		want      uintptr // the slack of the thread every request is taken on
		wantSlack int64   // the record's timer_slack_ns
	}{
		{1000, dispatcherTimerSlack, dispatcherTimerSlack},           // a millisecond apart: woken on time
		{preciseRateMax, dispatcherTimerSlack, dispatcherTimerSlack}, // the highest such rate
		{2 * preciseRateMax, mine, 0},                                // 50 µs apart: the caller's thread as it was
	} {
		t.Run(fmt.Sprint(tc.rate), func(t *testing.T) {
			// Run's goroutine is the dispatcher: locked here, its thread
			// is the one this test reads before, during and after the run.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			orig := timerSlack(t)
			setTimerSlack(t, mine)
			defer setTimerSlack(t, orig)

			var during []uintptr
			res := runOnThisThread(t, tc.rate, PriorityNormal, func() { during = append(during, timerSlack(t)) })
			for i, s := range during {
				if s != tc.want {
					t.Errorf("request %d was taken on a thread with a timer slack of %d ns, want %d", i, s, tc.want)
				}
			}
			if got := timerSlack(t); got != mine {
				t.Errorf("after the run the thread's timer slack is %d ns, want its own %d back", got, mine)
			}
			if res.Dispatcher.TimerSlackNs != tc.wantSlack {
				t.Errorf("the result says the dispatcher's timer slack was %d ns, want %d", res.Dispatcher.TimerSlackNs, tc.wantSlack)
			}
		})
	}
}

// With PriorityRealtime the dispatcher's own thread runs the schedule
// under SCHED_FIFO where the process may raise it, and under the normal
// policy, saying why, where it may not; above preciseRateMax the
// dispatcher has no thread of its own to raise. Either way the thread goes
// back to the normal policy when the run ends, and the result says what
// the thread ran with.
func TestDispatcherThreadPolicy(t *testing.T) {
	raised, refused := "fifo", ""
	if !mayRaise(t) {
		raised, refused = "other", "SCHED_FIFO"
	}
	for _, tc := range []struct {
		rate        float64
		prio        Priority
		want        string // the policy every request is taken under
		wantRefused string // in the result's Refused; "" for none
	}{
		{1000, PriorityRealtime, raised, refused},                            // raised where permitted
		{1000, "", raised, refused},                                          // the default is realtime
		{1000, PriorityNormal, "other", ""},                                  // not asked for
		{2 * preciseRateMax, PriorityRealtime, "other", "shares its thread"}, // no thread of its own
	} {
		t.Run(fmt.Sprint(tc.rate, tc.prio), func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()

			var during []string
			res := runOnThisThread(t, tc.rate, tc.prio, func() { during = append(during, policyName(threadPolicy())) })
			for i, p := range during {
				if p != tc.want {
					t.Errorf("request %d was taken under the %q policy, want %q", i, p, tc.want)
				}
			}
			if got := policyName(threadPolicy()); got != "other" {
				t.Errorf("after the run the thread's policy is %q, want the normal one back", got)
			}
			d := res.Dispatcher
			if tc.rate <= preciseRateMax && d.Policy != tc.want {
				t.Errorf("the result says the dispatcher ran under %q, want %q", d.Policy, tc.want)
			}
			switch {
			case tc.wantRefused == "" && d.Refused != "":
				t.Errorf("the result says the real-time policy was refused (%q), want nothing refused", d.Refused)
			case !strings.Contains(d.Refused, tc.wantRefused):
				t.Errorf("the result says %q was refused, want it to name %q", d.Refused, tc.wantRefused)
			}
		})
	}
}

// Without the privilege to raise it, a real-time dispatcher runs its
// schedule under the normal policy, and the result says why: the test's
// own thread drops CAP_SYS_NICE (capabilities are a thread's own on Linux)
// and runs the dispatcher there.
func TestDispatcherThreadRefused(t *testing.T) {
	if !mayRaise(t) {
		t.Skip("this process may not raise a thread to SCHED_FIFO at all: TestDispatcherThreadPolicy covers the refusal")
	}
	type outcome struct {
		during []string
		res    *record.Result
		err    error
	}
	cycle := newCycleSource(t, "http://sink.test/inbox")
	pacer := mustConstant(t, 1000)
	out := make(chan outcome)
	go func() {
		// Never unlocked: the thread without its capability exits with
		// the goroutine instead of serving another.
		runtime.LockOSThread()
		var o outcome
		if o.err = dropSysNice(); o.err != nil {
			out <- o
			return
		}
		if setPolicy(schedFIFO|schedResetOnFork, dispatcherRealtimePriority) == nil {
			o.err = errSkip
			setPolicy(schedOther, 0)
			out <- o
			return
		}
		src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
			o.during = append(o.during, policyName(threadPolicy()))
			return cycle.Next(ctx)
		})
		rt := rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil })
		o.res, o.err = recorded(context.Background(), Plan{Pacer: pacer, Source: src, Transport: rt, Priority: PriorityRealtime, Limits: Limits{MaxSends: 5}})
		out <- o
	}()
	o := <-out
	switch {
	case o.err == errSkip:
		t.Skip("without CAP_SYS_NICE this thread may still raise itself (RLIMIT_RTPRIO): no refusal to see")
	case o.err != nil:
		t.Fatal(o.err)
	case len(o.during) == 0:
		t.Fatal("the source was never asked for a request")
	}
	for i, p := range o.during {
		if p != "other" {
			t.Errorf("request %d was taken under the %q policy, want the normal one", i, p)
		}
	}
	d := o.res.Dispatcher
	if d.Policy != "other" || !strings.Contains(d.Refused, "operation not permitted") || !strings.Contains(d.Refused, "CAP_SYS_NICE") {
		t.Errorf("the result says the dispatcher ran under %q, refused %q; want the normal policy and a refusal naming the error and CAP_SYS_NICE", d.Policy, d.Refused)
	}
}

var errSkip = errors.New("skip")

// dropSysNice takes CAP_SYS_NICE out of the calling thread's effective
// capabilities (capget(2), capset(2), version 3).
func dropSysNice() error {
	const capSysNice = 23
	hdr := struct {
		version uint32
		pid     int32
	}{version: 0x20080522}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data)), 0); errno != 0 {
		return fmt.Errorf("capget: %w", errno)
	}
	data[0].effective &^= 1 << capSysNice
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data)), 0); errno != 0 {
		return fmt.Errorf("capset: %w", errno)
	}
	return nil
}

// runOnThisThread runs five sends at rate with the dispatcher's priority
// prio on the calling goroutine's locked thread (Run's goroutine is the
// dispatcher), calling each before a request is taken, and returns the
// run's result.
func runOnThisThread(t *testing.T, rate float64, prio Priority, each func()) *record.Result {
	t.Helper()
	cycle := newCycleSource(t, "http://sink.test/inbox")
	asked := 0
	src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
		each()
		asked++
		return cycle.Next(ctx)
	})
	rt := rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil })
	res := mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, rate), Source: src, Transport: rt, Priority: prio, Limits: Limits{MaxSends: 5}})
	if asked == 0 {
		t.Fatal("the source was never asked for a request")
	}
	return res
}

// mayRaise reports whether this process may put a thread under
// SCHED_FIFO, trying it on a thread of its own and putting it back.
func mayRaise(t *testing.T) bool {
	t.Helper()
	ok := make(chan bool)
	go func() {
		runtime.LockOSThread() // exits with the goroutine if it cannot be put back
		if setPolicy(schedFIFO|schedResetOnFork, dispatcherRealtimePriority) != nil {
			runtime.UnlockOSThread()
			ok <- false
			return
		}
		if setPolicy(schedOther, 0) == nil {
			runtime.UnlockOSThread()
		}
		ok <- true
	}()
	return <-ok
}

func timerSlack(t *testing.T) uintptr {
	t.Helper()
	v, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno == syscall.EINVAL {
		t.Skip("this kernel keeps no timer slack a thread can read (prctl PR_GET_TIMERSLACK: EINVAL)")
	}
	if errno != 0 {
		t.Fatalf("prctl(PR_GET_TIMERSLACK): %v", errno)
	}
	return v
}

func setTimerSlack(t *testing.T, ns uintptr) {
	t.Helper()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, ns, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_TIMERSLACK, %d): %v", ns, errno)
	}
}
