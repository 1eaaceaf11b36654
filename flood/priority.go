package flood

import (
	"fmt"
	"strings"
)

// Priority is the OS scheduling priority of the dispatcher's thread
// while it runs a schedule (--dispatcher-priority). Parse it once with
// ParsePriority; a Plan takes the parsed value.
type Priority string

const (
	// PriorityAuto is PriorityRealtime up to and including 5 000 sends a
	// second (the Plan's Pacer.Rate, per generator) and PriorityNormal
	// above, where a real-time dispatcher made a SUT on the same cores
	// answer later than it made sends earlier; the record's
	// parts[].dispatcher.refused then says so.
	PriorityAuto Priority = "auto"
	// PriorityRealtime puts the dispatcher's thread under SCHED_DEADLINE
	// (90 % of a CPU at most), else SCHED_FIFO at the lowest real-time
	// priority, where the process may (Linux: root, CAP_SYS_NICE, or for
	// FIFO an RLIMIT_RTPRIO of 1 or more), so that the kernel runs it the
	// moment its sleep ends; elsewhere the run goes on under the normal
	// policy and the record says why (parts[].dispatcher).
	// Only up to 10 000/s, where the dispatcher has a thread of its own.
	PriorityRealtime Priority = "realtime"
	// PriorityNormal leaves the thread under the normal policy.
	PriorityNormal Priority = "normal"
	// DefaultPriority is the priority of an empty --dispatcher-priority.
	DefaultPriority = PriorityAuto
)

// realtimeAutoMax is the highest rate PriorityAuto raises the dispatcher
// at. Above it the real-time thread, run ahead of every other each time it
// wakes, took the CPUs of a SUT beside it often enough that the SUT's p99
// latency grew 2-8 times over the normal policy's while the sends' p99
// lateness gained under a millisecond (docs/contributing.md, run X; go run
// ./bench -only priority, the presigned_realtime_vs_normal row).
const realtimeAutoMax = 5_000

// realtimeAt reports whether a dispatcher of priority p is raised at
// rate (where it has a thread of its own), and, where auto declines, why
// (the record's parts[].dispatcher.refused).
func (p Priority) realtimeAt(rate float64) (raise bool, why string) {
	switch p {
	case PriorityRealtime:
		return true, ""
	case PriorityAuto:
		if rate <= realtimeAutoMax {
			return true, ""
		}
		return false, fmt.Sprintf("auto: above %d/s the dispatcher keeps the normal policy, as a real-time one held up the threads sharing its CPUs, a SUT's among them: a choice, not a refusal", realtimeAutoMax)
	}
	return false, ""
}

// ParsePriority reads --dispatcher-priority: auto, realtime or normal, in
// any case; "" is DefaultPriority. Errors are *record.UsageError naming
// the flag.
func ParsePriority(s string) (Priority, error) {
	switch p := Priority(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return DefaultPriority, nil
	case PriorityAuto, PriorityRealtime, PriorityNormal:
		return p, nil
	}
	return "", usage(s, "--dispatcher-priority: want auto, realtime or normal")
}
