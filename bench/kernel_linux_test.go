package main

import (
	"strings"
	"testing"
)

// TestMeasureKernelCosts: each cost is measured, and lies between what
// the fastest machines and the slowest virtual ones pay (a system call
// from a few dozen ns to a few µs, a fault and a wake-up under a
// millisecond), so a measurement that counted nothing shows; a part given
// nothing to measure is zero, and reads as not measured.
func TestMeasureKernelCosts(t *testing.T) {
	k := measureKernelCosts(256, 2000, 200)
	t.Logf("%s", k)
	for _, c := range []struct {
		name     string
		us, most float64
	}{
		{"a page fault", k.Fault, 1000},
		{"a system call", k.Syscall, 100},
		{"a wake-up", k.Wake, 1000},
	} {
		if c.us <= 0 || c.us > c.most {
			t.Errorf("%s: %v µs, want in (0, %v]", c.name, c.us, c.most)
		}
	}
	if s := k.String(); !strings.HasPrefix(s, "a page fault ") || !strings.Contains(s, ", a thread woken through a pipe ") {
		t.Errorf("measured costs read as %q", s)
	}
	none := measureKernelCosts(0, 0, 0)
	if none != (kernelCosts{}) || none.String() != "kernel entries not measured" {
		t.Errorf("nothing to measure gave %+v (%q)", none, none)
	}
}

// TestKernelCostsString: the parts measured are named, the others left
// out, so one that failed hides none of the rest.
func TestKernelCostsString(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    kernelCosts
		want string
	}{
		// All three.
		{"all", kernelCosts{Fault: 11.73, Syscall: 1.02, Wake: 13.46}, "a page fault 11.7 µs, a system call 1.0 µs, a thread woken through a pipe 13.5 µs"},
		// The wake-up failed (its pipes could not be made).
		{"no wake-up", kernelCosts{Fault: 11.73, Syscall: 1.02}, "a page fault 11.7 µs, a system call 1.0 µs"},
		// Only the wake-up.
		{"wake-up only", kernelCosts{Wake: 4}, "a thread woken through a pipe 4.0 µs"},
		// Nothing (not Linux).
		{"none", kernelCosts{}, "kernel entries not measured"},
	} {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
