package flood

import "strings"

// Priority is the OS scheduling priority of the dispatcher's thread
// while it runs a schedule (--dispatcher-priority). Parse it once with
// ParsePriority; a Plan takes the parsed value.
type Priority string

const (
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
	DefaultPriority = PriorityRealtime
)

// ParsePriority reads --dispatcher-priority: realtime or normal, in any
// case; "" is DefaultPriority. Errors are *record.UsageError naming the
// flag.
func ParsePriority(s string) (Priority, error) {
	switch p := Priority(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return DefaultPriority, nil
	case PriorityRealtime, PriorityNormal:
		return p, nil
	}
	return "", usage(s, "--dispatcher-priority: want realtime or normal")
}
