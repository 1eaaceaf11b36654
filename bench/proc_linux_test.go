package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// TestParseProcStat: utime and stime are the 14th and 15th fields of
// /proc/pid/stat, counted after the command name, whatever it holds.
func TestParseProcStat(t *testing.T) {
	const tail = " S 1 2 3 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4 0 100 0 0"
	for _, tc := range []struct {
		name string
		line string
		want cpuTimes
	}{
		// A plain name: 2.5 s user, 0.75 s system at USER_HZ 100.
		{"plain name", "1234 (bench)" + tail, cpuTimes{2.5, 0.75}},
		// A name with spaces and a closing parenthesis: the last one ends it.
		{"name with ') '", "1234 (a) b (c))" + tail, cpuTimes{2.5, 0.75}},
		// A line cut short: no reading rather than a wrong one.
		{"truncated", "1234 (bench) S 1 2 3", cpuTimes{}},
		// No parentheses at all: not a stat line.
		{"no name", "1234 bench S", cpuTimes{}},
		// A time that is not a number.
		{"garbled time", "1234 (bench) S 1 2 3 0 -1 4194560 100 0 0 0 x 75 0", cpuTimes{}},
	} {
		if got := parseProcStat(tc.line); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestParseIdle: the machine's idle time is idle + iowait of /proc/stat's
// summary line.
func TestParseIdle(t *testing.T) {
	for _, tc := range []struct {
		name string
		stat string
		want float64
	}{
		// idle 700 + iowait 50 ticks: 7.5 s.
		{"summary line", "cpu  100 0 200 700 50 0 3 0 0 0\ncpu0 50 0 100 350 25 0 1 0 0 0\n", 7.5},
		// The first line is a CPU's, not the summary: no reading.
		{"no summary", "cpu0 50 0 100 350 25 0 1 0 0 0\n", 0},
		// Too few fields.
		{"short", "cpu  100 0 200\n", 0},
		// Empty.
		{"empty", "", 0},
	} {
		if got := parseIdle(tc.stat); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v s, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzParseProcStat: any line reads as zero or as non-negative times,
// never a panic.
func FuzzParseProcStat(f *testing.F) {
	f.Add("1234 (bench) S 1 2 3 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4 0 100 0 0")
	f.Add("1 ()) S")
	f.Add("cpu  100 0 200 700 50 0 3 0 0 0\n")
	f.Fuzz(func(t *testing.T, line string) {
		if c := parseProcStat(line); c.user < 0 || c.sys < 0 {
			t.Errorf("parseProcStat(%q) = %+v", line, c)
		}
		if s := parseIdle(line); s < 0 {
			t.Errorf("parseIdle(%q) = %v", line, s)
		}
	})
}

// TestProcessCPUOfMatchesGetrusage: the kernel's /proc account of this
// process's CPU agrees with getrusage's (to /proc's 10 ms tick), so the
// sink's CPU and the flood's are read on one scale.
func TestProcessCPUOfMatchesGetrusage(t *testing.T) {
	burn := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}
	burn(50 * time.Millisecond)
	proc, self := processCPUOf(os.Getpid()), processCPU()
	if proc.user+proc.sys <= 0 {
		t.Fatalf("/proc/%d/stat read no CPU: %+v", os.Getpid(), proc)
	}
	// /proc was read first, so it may lag getrusage by what ran between
	// the two reads, and by a tick of rounding (two: user and system).
	diff := (self.user + self.sys) - (proc.user + proc.sys)
	if diff < -0.02 || diff > 0.1 {
		t.Errorf("/proc says %.3f s, getrusage %.3f s", proc.user+proc.sys, self.user+self.sys)
	}
	if processCPUOf(-1) != (cpuTimes{}) {
		t.Error("a process that does not exist read as some CPU")
	}
}

// TestMachineIdleAdvances: the machine's idle time grows while this test
// sleeps (at most by every CPU's whole wall time).
func TestMachineIdleAdvances(t *testing.T) {
	before := machineIdle()
	if before <= 0 {
		t.Fatal("/proc/stat read no idle time")
	}
	time.Sleep(300 * time.Millisecond)
	got := machineIdle() - before
	cpus := float64(strings.Count(mustRead(t, "/proc/stat"), "\ncpu"))
	if got < 0 || got > cpus*0.3+0.05 {
		t.Errorf("idle grew by %.2f s over 0.3 s on %v CPUs", got, cpus)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
