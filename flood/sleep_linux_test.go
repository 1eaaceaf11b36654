package flood

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/schedpolicy"
)

// Up to preciseRateMax the dispatcher sleeps on a thread of its own whose
// timer slack is the least the kernel allows, so that its last-stretch
// sleeps end on time; above it, on the caller's thread, slack and all.
// The caller's thread is left as it was, and the result says which.
func TestDispatcherThreadTimerSlack(t *testing.T) {
	const mine = 70_000 // ns: not the kernel's default, so a reset would show
	for _, tc := range []struct {
		rate      float64
		want      uintptr // the slack of the thread every request is taken on
		wantSlack int64   // the result's TimerSlackNs
	}{
		{1000, dispatcherTimerSlack, dispatcherTimerSlack},           // a millisecond apart: woken on time
		{preciseRateMax, dispatcherTimerSlack, dispatcherTimerSlack}, // the highest such rate
		{2 * preciseRateMax, mine, 0},                                // 50 µs apart: the caller's thread as it was
	} {
		t.Run(fmt.Sprint(tc.rate), func(t *testing.T) {
			// Locked here, so that the caller's thread is the one this
			// test sets before and reads after the run.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			orig := timerSlack(t)
			setTimerSlack(t, mine)
			defer setTimerSlack(t, orig)

			var during []uintptr
			res := runWith(t, tc.rate, PriorityNormal, func() { during = append(during, timerSlack(t)) })
			for i, s := range during {
				if s != tc.want {
					t.Errorf("request %d was taken on a thread with a timer slack of %d ns, want %d", i, s, tc.want)
				}
			}
			if got := timerSlack(t); got != mine {
				t.Errorf("after the run the caller's thread has a timer slack of %d ns, want its own %d", got, mine)
			}
			if d := res.Dispatcher; d.TimerSlackNs != tc.wantSlack || d.Priority != string(PriorityNormal) {
				t.Errorf("the result says the dispatcher ran with %+v, want a timer slack of %d ns and the normal priority asked for", d, tc.wantSlack)
			}
		})
	}
}

// raisedPolicy stands, in a test's table, for the policy a raised
// dispatcher runs under: deadline, or fifo where the kernel had no
// deadline bandwidth left (other test processes' floods may hold it).
const raisedPolicy = "deadline or fifo"

// policyIs reports whether got is want, raisedPolicy matching either.
func policyIs(got, want string) bool {
	if want == raisedPolicy {
		return got == "deadline" || got == "fifo"
	}
	return got == want
}

// With PriorityRealtime, and PriorityAuto up to realtimeAutoMax, the
// dispatcher's own thread runs the schedule under SCHED_DEADLINE where the
// process may set it (SCHED_FIFO where the kernel has no bandwidth left
// and the thread may run on more than one CPU), and under the normal
// policy, saying why, where not; above realtimeAutoMax auto keeps the
// normal policy, saying why; above preciseRateMax the dispatcher has no
// thread of its own to raise. The caller's thread stays under the normal
// policy, and the result says what the dispatcher's ran with.
func TestDispatcherThreadPolicy(t *testing.T) {
	raised, refused := raisedPolicy, ""
	switch {
	case mayDeadline(t): // on one CPU too, where that is the whole domain
	case threadCPUs() == 1:
		raised, refused = "other", "one CPU"
	case !mayRaise(t):
		raised, refused = "other", "SCHED_FIFO"
	default:
		// Deadline refused just now, FIFO allowed: the run may find the
		// bandwidth that another test process's flood held freed again,
		// and where it does not, the rows' check holds FIFO to saying why.
	}
	for _, tc := range []struct {
		rate        float64
		prio        Priority
		want        string // the policy every request is taken under
		wantPolicy  string // the result's Policy
		wantRefused string // in the result's Refused; "" for none
	}{
		{1000, PriorityRealtime, raised, raised, refused},                                // raised where permitted
		{1000, "", raised, raised, refused},                                              // the default is auto, realtime at this rate
		{realtimeAutoMax, PriorityAuto, raised, raised, refused},                         // auto's highest real-time rate
		{realtimeAutoMax + 1, PriorityAuto, "other", "other", "keeps the normal policy"}, // auto above it: normal, and why
		{realtimeAutoMax + 1, PriorityRealtime, raised, raised, refused},                 // asked for outright: raised up to its thread's limit
		{1000, PriorityNormal, "other", "other", ""},                                     // not asked for
		{2 * preciseRateMax, PriorityRealtime, "other", "", "shares its thread"},         // no thread of its own
		{2 * preciseRateMax, PriorityAuto, "other", "", "shares its thread"},             // nor with auto
	} {
		t.Run(fmt.Sprint(tc.rate, tc.prio), func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()

			var during []string
			res := runWith(t, tc.rate, tc.prio, func() { during = append(during, threadPolicy().String()) })
			d := res.Dispatcher
			for i, p := range during {
				if !policyIs(p, tc.want) || (tc.want == raisedPolicy && p != d.Policy) {
					t.Errorf("request %d was taken under the %q policy, want %q (the result says %q)", i, p, tc.want, d.Policy)
				}
			}
			if got := threadPolicy().String(); got != "other" {
				t.Errorf("after the run the caller's thread is under the %q policy, want the normal one", got)
			}
			if !policyIs(d.Policy, tc.wantPolicy) || d.Priority != string(cmp.Or(tc.prio, DefaultPriority)) {
				t.Errorf("the result says the dispatcher ran with %+v, want the %q policy and the priority asked for", d, tc.wantPolicy)
			}
			switch {
			case tc.wantRefused == "" && d.Policy == "fifo" && tc.want == raisedPolicy:
				// deadline's bandwidth held by another test process: FIFO
				// stands in, and the result says why.
				if !strings.Contains(d.Refused, "SCHED_DEADLINE") {
					t.Errorf("the dispatcher ran under fifo and the result says %q, want why not deadline", d.Refused)
				}
			case tc.wantRefused == "" && d.Refused != "":
				t.Errorf("the result says the real-time policy was refused (%q), want nothing refused", d.Refused)
			case !strings.Contains(d.Refused, tc.wantRefused):
				t.Errorf("the result says %q was refused, want it to name %q", d.Refused, tc.wantRefused)
			}
		})
	}
}

// preciseThread's restore puts the thread back as it found it: the normal
// policy (the reset-on-fork flag as it was), and its own timer slack.
func TestPreciseThreadRestores(t *testing.T) {
	const mine = 70_000
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig := timerSlack(t)
	setTimerSlack(t, mine)
	defer setTimerSlack(t, orig)

	before, _ := schedpolicy.Of(0)
	d, restore := preciseThread(true)
	want := "other"
	if d.Refused == "" || d.Policy == "fifo" {
		want = raisedPolicy
	}
	if got := threadPolicy().String(); !policyIs(got, want) || got != d.Policy {
		t.Errorf("the thread runs under %q and preciseThread says %q, want %q", got, d.Policy, want)
	}
	if want == "other" {
		if got := timerSlack(t); got != dispatcherTimerSlack {
			t.Errorf("the thread's timer slack is %d ns, want %d", got, dispatcherTimerSlack)
		}
	}
	restore()
	// Without CAP_SYS_NICE (raised by RLIMIT_RTPRIO) the reset-on-fork
	// flag may not be cleared, and restore leaves it.
	if got, _ := schedpolicy.Of(0); got != before && (os.Geteuid() == 0 || got.Base() != before.Base()) {
		t.Errorf("restored, the thread's policy is %#x, want %#x as it was", got, before)
	}
	if got := timerSlack(t); got != mine {
		t.Errorf("restored, the thread's timer slack is %d ns, want its own %d", got, mine)
	}
}

// refusedChild is set in the environment of the test binary that
// TestDispatcherThreadRefused runs without CAP_SYS_NICE.
const refusedChild = "CROWD_TEST_REFUSED_CHILD"

// Without the privilege to raise it, a real-time dispatcher runs its
// schedule under the normal policy, and the result says why. The test
// runs itself again under setpriv(1) with CAP_SYS_NICE out of its
// capabilities, so that no thread of that process has it.
func TestDispatcherThreadRefused(t *testing.T) {
	if threadCPUs() == 1 {
		t.Skip("on one CPU the dispatcher is never raised: TestDispatcherThreadPolicy says why")
	}
	if os.Getenv(refusedChild) == "" {
		if !mayRaise(t) {
			t.Skip("this process may not raise a thread to SCHED_FIFO at all: TestDispatcherThreadPolicy covers the refusal")
		}
		if os.Geteuid() != 0 {
			t.Skip("not root: setpriv(1) may not drop a capability from the bounding set")
		}
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("no setpriv(1) (util-linux) to run the test without CAP_SYS_NICE")
		}
		rerun(t, "TestDispatcherThreadRefused", refusedChild, setpriv, "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--")
		return
	}
	if mayRaise(t) {
		t.Skip("without CAP_SYS_NICE this process may still raise a thread (RLIMIT_RTPRIO): no refusal to see")
	}
	var during []string
	res := runWith(t, 1000, PriorityRealtime, func() { during = append(during, threadPolicy().String()) })
	for i, p := range during {
		if p != "other" {
			t.Errorf("request %d was taken under the %q policy, want the normal one", i, p)
		}
	}
	d := res.Dispatcher
	if d.Policy != "other" || !strings.Contains(d.Refused, "operation not permitted") || !strings.Contains(d.Refused, "CAP_SYS_NICE") {
		t.Errorf("the result says the dispatcher ran under %q, refused %q; want the normal policy and a refusal naming the error and CAP_SYS_NICE", d.Policy, d.Refused)
	}
}

// runWith runs five sends at rate with the dispatcher's priority prio,
// calling each on the dispatcher before it takes a request, and returns
// the run's result.
func runWith(t *testing.T, rate float64, prio Priority, each func()) *record.Result {
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

// mayDeadline reports whether this process may put a thread under
// SCHED_DEADLINE as the dispatcher asks (its least budget), trying it on
// a thread of its own.
func mayDeadline(t *testing.T) bool {
	t.Helper()
	return mayTake(func() error {
		return schedpolicy.SetDeadline(0, dispatcherDeadlineRuntimeLeast, dispatcherDeadlinePeriod)
	})
}

// mayRaise reports whether this process may put a thread under
// SCHED_FIFO, trying it on a thread of its own.
func mayRaise(t *testing.T) bool {
	t.Helper()
	return mayTake(func() error {
		return schedpolicy.Set(0, schedpolicy.FIFO|schedpolicy.ResetOnFork, dispatcherRealtimePriority)
	})
}

// mayTake reports whether raise succeeds on a locked thread of its own,
// which is put back under the normal policy (or, if it cannot be, exits
// with its goroutine).
func mayTake(raise func() error) bool {
	ok := make(chan bool)
	go func() {
		runtime.LockOSThread()
		if raise() != nil {
			runtime.UnlockOSThread()
			ok <- false
			return
		}
		if schedpolicy.Set(0, schedpolicy.Other, 0) == nil || schedpolicy.Set(0, schedpolicy.Other|schedpolicy.ResetOnFork, 0) == nil {
			runtime.UnlockOSThread()
		}
		ok <- true
	}()
	return <-ok
}

// threadPolicy is the calling thread's scheduling policy; -1 (named
// "unknown") when it cannot be read.
func threadPolicy() schedpolicy.Policy {
	p, err := schedpolicy.Of(0)
	if err != nil {
		return -1
	}
	return p
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

// raiseDispatcher asks for SCHED_DEADLINE with the full budget, then the
// least where the kernel has no bandwidth left (EBUSY), then SCHED_FIFO
// at the lowest priority where the thread may run on more than one CPU;
// the policy it returns is the one set, and refused says why deadline was
// not (or why nothing was). Each refusal is the kernel's as a call returns
// it, set by the test, since no machine refuses at will.
func TestRaiseDispatcherFallsBack(t *testing.T) {
	busy, perm := syscall.EBUSY, syscall.EPERM
	const (
		bandwidth = "other deadline threads hold the machine's real-time bandwidth"
		domain    = "not under taskset or a cpuset of some CPUs"
		rtprio    = "RLIMIT_RTPRIO"
	)
	for _, tc := range []struct {
		name        string
		deadline    []error // what each SetDeadline returns, in turn
		fifo        error   // what the FIFO Set returns (when called)
		cpus        int
		wantBudgets []time.Duration // the runtimes asked, in order
		wantFIFO    bool            // FIFO was asked for
		wantRaised  bool
		wantPolicy  string
		wantRefused []string // each in refused; none: refused is empty
		notRefused  string   // not in refused, when set
	}{
		// Deadline admitted: nothing else is asked.
		{"deadline", []error{nil}, nil, 2,
			[]time.Duration{dispatcherDeadlineRuntime}, false, true, "deadline", nil, ""},
		// No bandwidth for the full budget: the least one is enough.
		{"least budget", []error{busy, nil}, nil, 2,
			[]time.Duration{dispatcherDeadlineRuntime, dispatcherDeadlineRuntimeLeast}, false, true, "deadline", nil, ""},
		// No bandwidth for either: FIFO, and the record says why not deadline.
		{"no bandwidth", []error{busy, busy}, nil, 2,
			[]time.Duration{dispatcherDeadlineRuntime, dispatcherDeadlineRuntimeLeast}, true, true, "fifo",
			[]string{"SCHED_DEADLINE", bandwidth, "SCHED_FIFO instead"}, ""},
		// Not permitted (a cpuset, no CAP_SYS_NICE): the least budget is not
		// asked (it would be refused alike), FIFO is.
		{"not permitted", []error{perm}, nil, 4,
			[]time.Duration{dispatcherDeadlineRuntime}, true, true, "fifo",
			[]string{"SCHED_DEADLINE", domain, "SCHED_FIFO instead"}, ""},
		// No bandwidth for the full budget, then not permitted: FIFO, and
		// the record gives the last refusal's reason.
		{"no bandwidth, then not permitted", []error{busy, perm}, nil, 2,
			[]time.Duration{dispatcherDeadlineRuntime, dispatcherDeadlineRuntimeLeast}, true, true, "fifo",
			[]string{"SCHED_DEADLINE: " + perm.Error(), domain, "SCHED_FIFO instead"}, bandwidth},
		// A kernel without SCHED_DEADLINE (EINVAL): FIFO, with the error and
		// no advice that does not apply.
		{"no deadline policy", []error{syscall.EINVAL}, nil, 2,
			[]time.Duration{dispatcherDeadlineRuntime}, true, true, "fifo",
			[]string{"SCHED_DEADLINE: " + syscall.EINVAL.Error(), "SCHED_FIFO instead"}, "CAP_SYS_NICE"},
		// One CPU: never FIFO (oneCPURefusal), the normal policy stays.
		{"one CPU", []error{perm}, nil, 1,
			[]time.Duration{dispatcherDeadlineRuntime}, false, false, "", []string{oneCPURefusal}, ""},
		// One CPU with deadline admitted (a one-CPU machine's domain is that
		// CPU): deadline, which has no FIFO's wait.
		{"one CPU, deadline admitted", []error{nil}, nil, 1,
			[]time.Duration{dispatcherDeadlineRuntime}, false, true, "deadline", nil, ""},
		// Both refused: nothing raised, and both reasons given.
		{"both refused", []error{perm}, perm, 2,
			[]time.Duration{dispatcherDeadlineRuntime}, true, false, "",
			[]string{"SCHED_DEADLINE", domain, "SCHED_FIFO: ", rtprio}, ""},
		// FIFO refused otherwise than by permission: its error, no advice.
		{"fifo invalid", []error{busy, busy}, syscall.EINVAL, 2,
			[]time.Duration{dispatcherDeadlineRuntime, dispatcherDeadlineRuntimeLeast}, true, false, "",
			[]string{bandwidth, "SCHED_FIFO: " + syscall.EINVAL.Error()}, rtprio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var budgets []time.Duration
			fifoAsked := false
			k := policyCalls{
				setDeadline: func(budget, period time.Duration) error {
					if period != dispatcherDeadlinePeriod {
						t.Errorf("deadline asked with a period of %v, want %v", period, dispatcherDeadlinePeriod)
					}
					budgets = append(budgets, budget)
					if len(budgets) > len(tc.deadline) {
						t.Fatalf("SetDeadline called %d times, the table gives %d answers", len(budgets), len(tc.deadline))
					}
					return tc.deadline[len(budgets)-1]
				},
				setFIFO: func(priority int) error {
					if priority != dispatcherRealtimePriority {
						t.Errorf("FIFO asked at priority %d, want %d", priority, dispatcherRealtimePriority)
					}
					fifoAsked = true
					return tc.fifo
				},
				cpus: func() int { return tc.cpus },
			}
			raised, policy, refused := raiseDispatcher(k)
			if !slices.Equal(budgets, tc.wantBudgets) {
				t.Errorf("deadline budgets asked %v, want %v", budgets, tc.wantBudgets)
			}
			if fifoAsked != tc.wantFIFO {
				t.Errorf("FIFO asked: %v, want %v", fifoAsked, tc.wantFIFO)
			}
			if raised != tc.wantRaised || policy != tc.wantPolicy {
				t.Errorf("raised %v under %q, want %v under %q", raised, policy, tc.wantRaised, tc.wantPolicy)
			}
			if len(tc.wantRefused) == 0 && refused != "" {
				t.Errorf("refused %q, want nothing", refused)
			}
			for _, part := range tc.wantRefused {
				if !strings.Contains(refused, part) {
					t.Errorf("refused %q does not say %q", refused, part)
				}
			}
			if tc.notRefused != "" && strings.Contains(refused, tc.notRefused) {
				t.Errorf("refused %q says %q, which does not apply", refused, tc.notRefused)
			}
		})
	}
}

// rerun runs the test named name again, in a child of this test binary
// started by prefix (a command and its arguments, before the binary's),
// with env set to 1 in its environment; t skips when the child skipped,
// and fails when it did not pass.
func rerun(t *testing.T, name, env string, prefix ...string) {
	t.Helper()
	args := append(append([]string{}, prefix[1:]...), os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd := exec.Command(prefix[0], args...)
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	switch {
	case strings.Contains(string(out), "--- SKIP"):
		t.Skipf("the child skipped:\n%s", out)
	case err != nil || !strings.Contains(string(out), "--- PASS: "+name):
		t.Fatalf("the child %v: %v\n%s", prefix, err, out)
	}
}
