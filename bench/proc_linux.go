package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// childAttr makes a helper process die with the bench (SIGKILL when the
// bench's thread that started it exits), so an interrupted bench leaves
// no sink, flood or `crowd serve` behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// userHZ is the unit of /proc's CPU times: USER_HZ, 100 on every Linux
// architecture (the kernel's ABI, whatever its internal tick).
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

// parseProcStat reads utime and stime from a /proc/pid/stat line: the
// 14th and 15th fields, counted after the command name, which is in
// parentheses and may itself hold spaces and parentheses.
func parseProcStat(line string) cpuTimes {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return cpuTimes{}
	}
	f := strings.Fields(line[i+1:]) // f[0] is the state, the 3rd field
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

// machineIdle is how long the machine's CPUs have been idle so far, in
// seconds summed over every CPU (idle and iowait of /proc/stat's first
// line; zero where it cannot be read).
func machineIdle() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	return parseIdle(string(b))
}

// parseIdle reads the idle and iowait times of /proc/stat's "cpu" line.
func parseIdle(stat string) float64 {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0
	}
	idle, err1 := strconv.ParseUint(f[4], 10, 64)
	iowait, err2 := strconv.ParseUint(f[5], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return float64(idle+iowait) / userHZ
}
