package main

import (
	"fmt"
	"strings"
)

// kernelCosts is what entering the kernel costs on this machine, in µs,
// as a Go program pays it (the runtime's own entry to and exit from a
// system call included): a minor page fault (Fault: the first touch of a
// fresh anonymous page, huge pages refused), a trivial system call
// (Syscall) and one thread waking another through a pipe and going to
// sleep itself (Wake: half a round trip between two threads). A flood's
// send makes each of them: its heap grows into fresh pages, it writes and
// reads sockets, and its dispatcher and the server wake for it.
// Virtualisation prices them very differently (on the PVM guest the crowd
// is developed on a fault cost about 11 µs), so the same send can cost a
// different share of two machines' CPU; the bench says which kind it
// measured. A part that was not measured (all of them outside Linux) is
// zero.
type kernelCosts struct {
	Fault   float64 `json:"fault_us"`
	Syscall float64 `json:"syscall_us"`
	Wake    float64 `json:"wake_us"`
}

// String names the parts that were measured, with their costs, or says
// none was.
func (k kernelCosts) String() string {
	var parts []string
	for _, p := range []struct {
		name string
		us   float64
	}{{"a page fault", k.Fault}, {"a system call", k.Syscall}, {"a thread woken through a pipe", k.Wake}} {
		if p.us > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f µs", p.name, p.us))
		}
	}
	if len(parts) == 0 {
		return "kernel entries not measured"
	}
	return strings.Join(parts, ", ")
}

// Sizes of the kernel-cost measurement: about half a second in all on a
// machine whose faults and wake-ups are dear, far less on others.
const (
	kernelFaultPages = 8192   // 32 MiB of fresh pages
	kernelSyscalls   = 100000 // getppid
	kernelRoundTrips = 5000   // through a pair of pipes
)
