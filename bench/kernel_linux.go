package main

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// measureKernelCosts measures kernelCosts with pages fresh pages, calls
// system calls and trips round trips between two threads. A part that
// cannot be measured is zero.
func measureKernelCosts(pages, calls, trips int) kernelCosts {
	return kernelCosts{Fault: faultCost(pages), Syscall: syscallCost(calls), Wake: wakeCost(trips)}
}

// faultCost is the time per minor fault of touching pages fresh anonymous
// pages once each, the faults counted by the thread's own getrusage. The
// region refuses transparent huge pages, which would map it in a few
// faults that each clear 2 MiB: a price per fault no small allocation
// pays.
func faultCost(pages int) float64 {
	if pages <= 0 {
		return 0
	}
	size := pages * unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return 0
	}
	defer unix.Munmap(mem)
	// Refused where the kernel has no huge pages: then none come anyway.
	_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &before) != nil {
		return 0
	}
	start := time.Now()
	for i := 0; i < size; i += unix.Getpagesize() {
		mem[i] = 1
	}
	took := time.Since(start)
	if unix.Getrusage(unix.RUSAGE_THREAD, &after) != nil || after.Minflt <= before.Minflt {
		return 0
	}
	return float64(took.Nanoseconds()) / 1e3 / float64(after.Minflt-before.Minflt)
}

// syscallCost is the time per call of calls getppid calls.
func syscallCost(calls int) float64 {
	if calls <= 0 {
		return 0
	}
	start := time.Now()
	for range calls {
		unix.Getppid()
	}
	return float64(time.Since(start).Nanoseconds()) / 1e3 / float64(calls)
}

// wakeCost is half the time of a round trip between two threads, each
// locked to its goroutine and asleep in a blocking read of its pipe until
// the other writes a byte to it: one wake-up and one sleep each way, the
// scheduler choosing their CPUs, the Go runtime's entries to and exits
// from the reads and writes included. Either side that fails closes its
// write end, so that the other's read ends too.
func wakeCost(trips int) float64 {
	var there, back [2]int
	if trips <= 0 || unix.Pipe2(there[:], unix.O_CLOEXEC) != nil {
		return 0
	}
	defer unix.Close(there[0])
	if unix.Pipe2(back[:], unix.O_CLOEXEC) != nil {
		unix.Close(there[1])
		return 0
	}
	defer unix.Close(back[0])
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(back[1])
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b := make([]byte, 1)
		for range trips {
			if n, err := unix.Read(there[0], b); n != 1 || err != nil {
				return
			}
			if _, err := unix.Write(back[1], b); err != nil {
				return
			}
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b := make([]byte, 1)
	ok := true
	start := time.Now()
	for range trips {
		if _, err := unix.Write(there[1], b); err != nil {
			ok = false
			break
		}
		if n, err := unix.Read(back[0], b); n != 1 || err != nil {
			ok = false
			break
		}
	}
	took := time.Since(start)
	unix.Close(there[1])
	<-done
	if !ok {
		return 0
	}
	return float64(took.Nanoseconds()) / 1e3 / float64(2*trips)
}
