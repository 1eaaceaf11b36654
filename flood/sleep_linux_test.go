package flood

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"syscall"
	"testing"
)

// Up to preciseRateMax the dispatcher sleeps on a thread of its own whose
// timer slack is the least the kernel allows, so that its last-stretch
// sleeps end on time; above it, on whichever thread it is given, slack
// and all. When the run ends, the thread is handed back with the slack it
// had.
func TestDispatcherThreadTimerSlack(t *testing.T) {
	const mine = 70_000 // ns: not the kernel's default, so a reset would show
	for _, tc := range []struct {
		rate float64
		want uintptr // the slack of the thread every request is taken on
	}{
		{1000, dispatcherTimerSlack},           // a millisecond apart: woken on time
		{preciseRateMax, dispatcherTimerSlack}, // the highest such rate
		{2 * preciseRateMax, mine},             // 50 µs apart: the caller's thread as it was
	} {
		t.Run(fmt.Sprint(tc.rate), func(t *testing.T) {
			// Run's goroutine is the dispatcher: locked here, its thread
			// is the one this test reads before, during and after the run.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			orig := timerSlack(t)
			setTimerSlack(t, mine)
			defer setTimerSlack(t, orig)

			cycle := newCycleSource(t, "http://sink.test/inbox")
			var during []uintptr
			src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
				during = append(during, timerSlack(t)) // Next runs on the dispatcher
				return cycle.Next(ctx)
			})
			rt := rtFunc(func(r *http.Request) (*http.Response, error) { return answer(r, 202, nil), nil })
			mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, tc.rate), Source: src, Transport: rt, Limits: Limits{MaxSends: 5}})

			if len(during) == 0 {
				t.Fatal("the source was never asked for a request")
			}
			for i, s := range during {
				if s != tc.want {
					t.Errorf("request %d was taken on a thread with a timer slack of %d ns, want %d", i, s, tc.want)
				}
			}
			if got := timerSlack(t); got != mine {
				t.Errorf("after the run the thread's timer slack is %d ns, want its own %d back", got, mine)
			}
		})
	}
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
