package main

import "fmt"

// kernelCosts is what entering the kernel costs on this machine, in µs:
// a minor page fault (Fault: the first touch of a fresh anonymous page),
// a trivial system call (Syscall) and one thread waking another through
// a pipe and going to sleep itself (Wake: half a round trip between two
// threads). A flood's send makes each of them: its heap grows into fresh
// pages, it writes and reads sockets, and its dispatcher and the server
// wake for it. Virtualisation prices them very differently (on a PVM
// guest a fault cost about 10 µs, on bare metal well under 1), so the same
// send costs a different share of two machines' CPU, and the bench says
// which kind of machine it measured. Zero: not measured (outside Linux).
type kernelCosts struct {
	Fault   float64 `json:"fault_us"`
	Syscall float64 `json:"syscall_us"`
	Wake    float64 `json:"wake_us"`
}

// Measured reports whether the costs were measured.
func (k kernelCosts) Measured() bool { return k.Fault > 0 && k.Syscall > 0 && k.Wake > 0 }

func (k kernelCosts) String() string {
	if !k.Measured() {
		return "kernel entries not measured"
	}
	return fmt.Sprintf("a page fault %.2f µs, a system call %.2f µs, a thread woken through a pipe %.1f µs", k.Fault, k.Syscall, k.Wake)
}

// Sizes of the kernel-cost measurement: about half a second in all on a
// machine whose faults and wake-ups are dear, far less on others.
const (
	kernelFaultPages = 8192   // 32 MiB of fresh pages
	kernelSyscalls   = 100000 // getppid
	kernelRoundTrips = 5000   // through a pair of pipes
)
