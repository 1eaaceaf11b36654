package schedpolicy

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// A thread takes the policy it is set to, as the kernel reads it back,
// and goes back to the normal one; a real-time policy where the process
// may not raise one is refused with EPERM.
func TestSetAndOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   Policy
		priority int
	}{
		{"idle, as a lowered signer takes", Idle, 0},
		{"batch", Batch, 0},
		{"fifo with reset-on-fork, as the dispatcher takes", FIFO | ResetOnFork, 1},
		{"round robin", RR, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				// Never unlocked: should the policy not come back, the
				// thread exits with the goroutine.
				runtime.LockOSThread()
				before, err := Of(0)
				if err != nil {
					t.Errorf("reading the policy: %v", err)
					return
				}
				if err := Set(0, tc.policy, tc.priority); err != nil {
					if tc.policy.Base() == FIFO || tc.policy.Base() == RR {
						if !errors.Is(err, syscall.EPERM) {
							t.Errorf("a refused real-time policy: %v, want EPERM", err)
						}
						return // not permitted here: nothing to read back
					}
					t.Errorf("setting %v: %v", tc.policy, err)
					return
				}
				if got, err := Of(0); err != nil || got != tc.policy {
					t.Errorf("the thread reads %#x (%v), want %#x", got, err, tc.policy)
				}
				if err := Set(0, before, 0); err != nil {
					t.Errorf("putting back %#x: %v", before, err)
					return
				}
				if got, _ := Of(0); got != before {
					t.Errorf("put back, the thread reads %#x, want %#x", got, before)
					return
				}
				runtime.UnlockOSThread()
			}()
			<-done
		})
	}
}

// Each policy has its record name, the flag not named.
func TestPolicyString(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Other, "other"},             // the normal policy
		{FIFO | ResetOnFork, "fifo"}, // the flag is not a policy
		{RR, "rr"},                   // real-time, round robin
		{Batch, "batch"},             // batch
		{Idle, "idle"},               // a lowered signer's
		{Deadline, "deadline"},       // deadline
		{4, "unknown"},               // no policy of sched(7)
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("Policy(%#x).String() = %q, want %q", int(tc.p), got, tc.want)
		}
	}
}

// A thread put under the deadline policy reads back as deadline with
// ResetOnFork, and Set puts it back under the normal policy. Where the
// kernel refuses it (no CAP_SYS_NICE, no bandwidth left, fewer CPUs than
// the domain), the refusal is EPERM or EBUSY, never another error.
func TestSetDeadline(t *testing.T) {
	type result struct {
		err         error
		got, after  Policy
		putBackErr  error
		readBackErr error
	}
	done := make(chan result)
	go func() {
		// Never unlocked: should the policy not come back, the thread
		// exits with the goroutine.
		runtime.LockOSThread()
		var r result
		if r.err = SetDeadline(0, 800*time.Microsecond, time.Millisecond); r.err != nil {
			done <- r
			return
		}
		r.got, r.readBackErr = Of(0)
		r.putBackErr = Set(0, Other, 0)
		r.after, _ = Of(0)
		if r.putBackErr == nil && r.after == Other {
			runtime.UnlockOSThread()
		}
		done <- r
	}()
	r := <-done
	switch {
	case errors.Is(r.err, syscall.EPERM), errors.Is(r.err, syscall.EBUSY):
		t.Skipf("the deadline policy is refused here: %v", r.err)
	case r.err != nil:
		t.Fatalf("SetDeadline: %v, want success, EPERM or EBUSY", r.err)
	}
	if r.readBackErr != nil || r.got != Deadline|ResetOnFork {
		t.Errorf("the thread reads %#x (%v), want deadline with reset-on-fork %#x", r.got, r.readBackErr, Deadline|ResetOnFork)
	}
	if r.putBackErr != nil || r.after != Other {
		t.Errorf("put back: %v, the thread reads %#x, want the normal policy", r.putBackErr, r.after)
	}
}
