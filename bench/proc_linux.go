package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of /proc's CPU times: USER_HZ, 100 on every
// architecture Go runs Linux on (the kernel's ABI, whatever its internal
// tick).
const userHZ = 100

// processCPUOf is process pid's CPU so far, from /proc/pid/stat (zero
// where it cannot be read): the sink's, which runs beside the flood.
func processCPUOf(pid int) cpuTimes {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuTimes{}
	}
	return parseProcStat(string(b))
}

// processFaultsOf is process pid's minor page faults so far, from
// /proc/pid/stat (zero where it cannot be read).
func processFaultsOf(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return parseProcFaults(string(b))
}

// processSwitchesOf is process pid's context switches so far, voluntary
// and not, summed over the threads it has now (/proc/pid/task/*/status;
// zero where none can be read). Unlike getrusage's, the sum loses a
// thread's switches when it exits; a Go server's threads rarely do, and a
// count that went back gives no figure (perSent).
func processSwitchesOf(pid int) float64 {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var n float64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread exited meanwhile
		}
		n += parseStatusSwitches(string(b))
	}
	return n
}

// parseStatusSwitches is the sum of a /proc status file's
// voluntary_ctxt_switches and nonvoluntary_ctxt_switches lines (a line
// missing or garbled counts as zero).
func parseStatusSwitches(status string) float64 {
	var n float64
	for line := range strings.Lines(status) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "voluntary_ctxt_switches" && k != "nonvoluntary_ctxt_switches") {
			continue
		}
		if c, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			n += float64(c)
		}
	}
	return n
}

// statFields is a /proc/pid/stat line's fields after the command name,
// which is in parentheses and may itself hold spaces and parentheses:
// the first is the state, the line's 3rd field. Nil when there is no
// name.
func statFields(line string) []string {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(line[i+1:])
}

// parseProcFaults reads minflt, the 10th field, from a /proc/pid/stat
// line (zero when it cannot).
func parseProcFaults(line string) float64 {
	f := statFields(line)
	if len(f) < 8 {
		return 0
	}
	n, err := strconv.ParseUint(f[7], 10, 64)
	if err != nil {
		return 0
	}
	return float64(n)
}

// parseProcStat reads utime and stime from a /proc/pid/stat line: the
// 14th and 15th fields.
func parseProcStat(line string) cpuTimes {
	f := statFields(line)
	if len(f) < 13 {
		return cpuTimes{}
	}
	user, err1 := strconv.ParseUint(f[11], 10, 64)
	sys, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return cpuTimes{}
	}
	return cpuTimes{float64(user) / userHZ, float64(sys) / userHZ}
}

// machineIdle is how long the CPUs the calling thread may run on (the
// bench's: runtime.NumCPU counts the same) have been idle so far, in
// seconds summed over them: idle and iowait of their /proc/stat lines.
// Zero where either cannot be read.
func machineIdle() float64 {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return 0
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	return parseIdle(string(b), set.IsSet)
}

// parseIdle sums the idle and iowait times of /proc/stat's "cpuN" lines
// for which in(N) holds, skipping the summary line, which counts every
// CPU of the machine. A garbled line of one of those CPUs reads as zero:
// no reading rather than a wrong one.
func parseIdle(stat string, in func(cpu int) bool) float64 {
	var ticks uint64
	for line := range strings.Lines(stat) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		cpu, err := strconv.Atoi(f[0][len("cpu"):])
		if err != nil || cpu < 0 || !in(cpu) {
			continue
		}
		if len(f) < 6 {
			return 0
		}
		idle, err1 := strconv.ParseUint(f[4], 10, 64)
		iowait, err2 := strconv.ParseUint(f[5], 10, 64)
		if err1 != nil || err2 != nil {
			return 0
		}
		ticks += idle + iowait
	}
	return float64(ticks) / userHZ
}
