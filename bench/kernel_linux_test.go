package main

import (
	"strings"
	"testing"
)

// TestMeasureKernelCosts: each cost is measured, and lies between what
// the fastest machines and the slowest virtual ones pay (a system call
// from a few dozen ns to a few µs, a fault and a wake-up under a
// millisecond), so a measurement that counted nothing or divided wrongly
// shows; a part given nothing to measure is zero, and the costs then read
// as not measured.
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
	if !k.Measured() || !strings.HasPrefix(k.String(), "a page fault ") {
		t.Errorf("measured costs read as %q", k)
	}
	// A system call is the cheapest of the three wherever we measured:
	// a fault and a wake-up each make one, and more.
	if k.Syscall >= k.Wake {
		t.Errorf("a system call %v µs, a wake-up %v µs: the wake-up makes two calls", k.Syscall, k.Wake)
	}
	none := measureKernelCosts(0, 0, 0)
	if none.Syscall != 0 || none.Wake != 0 || none.Measured() || none.String() != "kernel entries not measured" {
		t.Errorf("nothing to measure gave %+v (%q)", none, none)
	}
}
