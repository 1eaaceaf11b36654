package schedpolicy

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
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
