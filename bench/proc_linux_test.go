package main

import (
	"math"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestParseProcFaults: minflt is the 10th field of /proc/pid/stat,
// counted after the command name as the CPU times are.
func TestParseProcFaults(t *testing.T) {
	const tail = " S 1 2 3 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4 0 100 0 0"
	for _, tc := range []struct {
		name string
		line string
		want float64
	}{
		// A plain name: 100 minor faults (the 9th field is flags).
		{"plain name", "1234 (bench)" + tail, 100},
		// A name that looks like fields: the last parenthesis ends it.
		{"name with ') 7 8 9'", "1234 (a) 7 8 9)" + tail, 100},
		// A line cut short after minflt: the count is there.
		{"cut after it", "1234 (bench) S 1 2 3 0 -1 4194560 100", 100},
		// A line cut short before it: no reading.
		{"cut before it", "1234 (bench) S 1 2 3 0 -1 4194560", 0},
		// A count that is not a number.
		{"garbled count", "1234 (bench) S 1 2 3 0 -1 4194560 x 0 0 0 250 75 0", 0},
		// Not a stat line.
		{"no name", "1234 bench S", 0},
	} {
		if got := parseProcFaults(tc.line); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestProcessFaultsOfCountsTouchedPages: touching fresh pages shows in
// this process's /proc count of minor faults and in getrusage's alike,
// so the sink's faults and the flood's are read on one scale.
func TestProcessFaultsOfCountsTouchedPages(t *testing.T) {
	const pages = 512
	mem, err := unix.Mmap(-1, 0, pages*unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	proc, self := processFaultsOf(os.Getpid()), processEntries()
	for i := 0; i < len(mem); i += unix.Getpagesize() {
		mem[i] = 1
	}
	procAfter, selfAfter := processFaultsOf(os.Getpid()), processEntries()
	// Other goroutines may fault meanwhile, and transparent huge pages
	// would map the region in fewer faults: at least one, at most a few
	// hundred more than the pages.
	for name, d := range map[string]float64{"/proc": procAfter - proc, "getrusage": selfAfter.faults - self.faults} {
		if d < 1 || d > pages+256 {
			t.Errorf("%s counted %v faults for %d fresh pages", name, d, pages)
		}
	}
	if processFaultsOf(-1) != 0 {
		t.Error("a process that does not exist read as some faults")
	}
}

// TestParseStatusSwitches: a thread's switches are its voluntary and
// nonvoluntary counts in its status file, whatever else the file holds.
func TestParseStatusSwitches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status string
		want   float64
	}{
		// Both lines, among others, as the kernel writes them.
		{"both", "Name:\tsink\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n", 127},
		// One of the two.
		{"voluntary only", "voluntary_ctxt_switches:\t5\n", 5},
		// A garbled count counts as zero, the other still counts.
		{"garbled", "voluntary_ctxt_switches:\tmany\nnonvoluntary_ctxt_switches:\t3\n", 3},
		// A name that only ends like one.
		{"another key", "xvoluntary_ctxt_switches:\t9\n", 0},
		// Nothing at all.
		{"empty", "", 0},
	} {
		if got := parseStatusSwitches(tc.status); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestProcessSwitchesOfCountsWakeUps: two threads waking each other 200
// times each way show as at least 200 more switches in this process's
// /proc count, as the sink's are read. Each round trip puts one of them
// to sleep at least, waiting in its read for the other's byte; mostly
// both, but on a busy machine a thread may reach its read after the
// byte came (392 of 400 once, beside three other packages' tests).
func TestProcessSwitchesOfCountsWakeUps(t *testing.T) {
	before := processSwitchesOf(os.Getpid())
	if before <= 0 {
		t.Fatalf("/proc/%d/task read no switches", os.Getpid())
	}
	if wakeCost(200) <= 0 {
		t.Fatal("the wake-ups failed")
	}
	if d := processSwitchesOf(os.Getpid()) - before; d < 200 {
		t.Errorf("200 round trips between two threads added %v switches, want at least 200", d)
	}
	if processSwitchesOf(-1) != 0 {
		t.Error("a process that does not exist read as some switches")
	}
}

// TestParseIdle: the idle time of the CPUs asked for is the sum of idle
// + iowait of their own /proc/stat lines, never the summary line's.
func TestParseIdle(t *testing.T) {
	const stat = "cpu  100 0 200 700 50 0 3 0 0 0\n" +
		"cpu0 50 0 100 350 25 0 1 0 0 0\n" +
		"cpu1 50 0 100 300 20 0 2 0 0 0\n" +
		"intr 12345 0 0\nctxt 999\n"
	every := func(int) bool { return true }
	for _, tc := range []struct {
		name string
		stat string
		in   func(int) bool
		want float64
	}{
		// Both CPUs: (350 + 25) + (300 + 20) ticks = 6.95 s, not the
		// summary's 7.5 (which counts a CPU absent from the lines).
		{"every CPU", stat, every, 6.95},
		// Only cpu1 may run the bench: 3.2 s.
		{"one CPU of two", stat, func(cpu int) bool { return cpu == 1 }, 3.2},
		// No CPU asked for matches a line.
		{"no CPU", stat, func(int) bool { return false }, 0},
		// Only the summary line: no CPU's own.
		{"no CPU lines", "cpu  100 0 200 700 50 0 3 0 0 0\n", every, 0},
		// A CPU's line with too few fields: no reading.
		{"short", "cpu0 100 0 200\n", every, 0},
		// A CPU's line with a time that is not a number: no reading.
		{"garbled", "cpu0 50 0 100 x 25 0 1 0 0 0\ncpu1 50 0 100 300 20 0 2 0 0 0\n", every, 0},
		// A garbled line of a CPU not asked for does not matter.
		{"garbled elsewhere", "cpu0 50 0 100 x 25\ncpu1 50 0 100 300 20 0 2 0 0 0\n", func(cpu int) bool { return cpu == 1 }, 3.2},
		// Empty.
		{"empty", "", every, 0},
	} {
		if got := parseIdle(tc.stat, tc.in); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v s, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzParseProcStat: whatever the command name holds, the times are read
// from the fields after it.
func FuzzParseProcStat(f *testing.F) {
	const tail = " S 1 2 3 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4 0 100 0 0"
	f.Add("bench")
	f.Add(") S 1 (")
	f.Add("a b\nc")
	f.Fuzz(func(t *testing.T, name string) {
		parseProcStat(name) // any line: no panic
		if got, want := parseProcStat("1234 ("+name+")"+tail), (cpuTimes{2.5, 0.75}); got != want {
			t.Errorf("command name %q: %+v, want %+v", name, got, want)
		}
	})
}

// FuzzParseIdle: a line of a CPU not asked for never changes the idle
// time read, whatever else /proc/stat holds.
func FuzzParseIdle(f *testing.F) {
	f.Add("cpu  100 0 200 700 50 0 3 0 0 0\ncpu0 50 0 100 350 25 0 1 0 0 0\n")
	f.Add("cpu0 1 2\n")
	f.Add("cpu7 1 2 3 4 5 6\n")
	f.Fuzz(func(t *testing.T, stat string) {
		notSeven := func(cpu int) bool { return cpu != 7 }
		without := parseIdle(stat, notSeven)
		if with := parseIdle("cpu7 1 1 1 999 999 1 1 0 0 0\n"+stat, notSeven); with != without {
			t.Errorf("cpu7's line changed the idle time of the others: %v, want %v", with, without)
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

// TestMachineIdleCountsItsCPUsOnly: pinned to one CPU, the idle time read
// over a sleep is at most that one CPU's wall time, whatever the others
// did (on an idle machine of two CPUs, the summary line would have read
// twice as much).
func TestMachineIdleCountsItsCPUsOnly(t *testing.T) {
	type reading struct {
		idle, wall float64
		err        error
	}
	done := make(chan reading)
	go func() {
		runtime.LockOSThread() // the thread exits with the goroutine: its affinity goes with it
		var all, one unix.CPUSet
		if err := unix.SchedGetaffinity(0, &all); err != nil {
			done <- reading{err: err}
			return
		}
		for cpu := range 1 << 16 {
			if all.IsSet(cpu) {
				one.Set(cpu)
				break
			}
		}
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			done <- reading{err: err}
			return
		}
		start, before := time.Now(), machineIdle()
		time.Sleep(300 * time.Millisecond)
		done <- reading{idle: machineIdle() - before, wall: time.Since(start).Seconds()}
	}()
	r := <-done
	if r.err != nil {
		t.Skipf("cannot pin a thread: %v", r.err)
	}
	// A tick of rounding at each end of the span.
	if r.idle < 0 || r.idle > r.wall+2.0/userHZ {
		t.Errorf("one CPU was idle %.3f s over %.3f s", r.idle, r.wall)
	}
}
