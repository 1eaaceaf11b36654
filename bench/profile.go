// A CPU profile of one server under the closed-loop client, read back as
// the CPU a request costs, by part.

package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cpuPart is one part a request's CPU is attributed to: a sample belongs
// to the first part (in the order given) that one of its stack's frames
// matches, and to "other" when none does.
type cpuPart struct {
	Name  string
	Frame *regexp.Regexp
}

// deliveryParts are the parts of an inbox delivery (and of the bare
// handler's, which has no log, parse or inbox of its own). Allocation and
// GC come first, so an allocation made while parsing counts as allocation;
// the HTTP server, the body's read and the kernel come last, so they take
// only what no handler's part did.
func deliveryParts() []cpuPart {
	const crowd = `^github\.com/crowdfed/crowd/`
	return []cpuPart{
		{"allocation and GC", regexp.MustCompile(`^runtime\.(mallocgc|gcBgMarkWorker|gcAssistAlloc|bgsweep|bgscavenge|gcDrain|gcStart)`)},
		{"signature: header parse and verification", regexp.MustCompile(crowd + `signing\.`)},
		{"activity log: line and write", regexp.MustCompile(crowd + `(inbox\.\(\*ActivityLog\)|inbox\.appendEntryJSON|inbox\.\(\*lineEncoder\)|inbox\.safeHeaders)`)},
		{"activity parse", regexp.MustCompile(crowd + `inbox\.[pP]arseActivity`)},
		{"inbox, the rest", regexp.MustCompile(crowd + `inbox\.`)},
		{"router", regexp.MustCompile(`^main\.sharedInbox`)},
		{"HTTP server, body read, kernel", regexp.MustCompile(`^(net/http|net|internal/poll|syscall|bufio|io)\.`)},
	}
}

// partCosts is a profile read back: CPU µs per request by part, the
// requests counted, and where the profile was kept.
type partCosts struct {
	Requests int64              `json:"requests"`
	PerPart  map[string]float64 `json:"us_per_request"`
	Total    float64            `json:"total_us_per_request"`
	Profile  string             `json:"profile"`
}

// String lists the parts, largest first, in µs per request.
func (p partCosts) String() string {
	names := make([]string, 0, len(p.PerPart))
	for n := range p.PerPart {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(p.PerPart[b], p.PerPart[a]), strings.Compare(a, b))
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", n, p.PerPart[n]))
	}
	return fmt.Sprintf("%.1f µs a request (%s)", p.Total, strings.Join(parts, ", "))
}

// profiled runs measure under a CPU profile of this process written to
// path, and reads the profile back by parts over the requests measure
// reports. It fails when a profile is already running (-cpuprofile).
func profiled(ctx context.Context, path string, parts []cpuPart, measure func(context.Context) loopResult) (partCosts, loopResult, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return partCosts{}, loopResult{}, err
	}
	f, err := os.Create(path)
	if err != nil {
		return partCosts{}, loopResult{}, err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return partCosts{}, loopResult{}, fmt.Errorf("CPU profile: %w", err)
	}
	r := measure(ctx)
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		return partCosts{}, r, err
	}
	n := r.OK + r.Bad
	if n == 0 {
		return partCosts{}, r, errors.New("no request was answered while profiling")
	}
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(tctx, "go", "tool", "pprof", "-traces", path).Output()
	if err != nil {
		return partCosts{}, r, fmt.Errorf("go tool pprof -traces %s: %w", filepath.Base(path), err)
	}
	byPart, err := attribute(string(out), parts)
	if err != nil {
		return partCosts{}, r, err
	}
	pc := partCosts{Requests: n, PerPart: make(map[string]float64, len(byPart)), Profile: path}
	for name, d := range byPart {
		us := float64(d.Microseconds()) / float64(n)
		pc.PerPart[name] = us
		pc.Total += us
	}
	return pc, r, nil
}

// attribute sums `go tool pprof -traces` output's samples by part: each
// sample to the first part one of its frames matches, "other" otherwise.
func attribute(traces string, parts []cpuPart) (map[string]time.Duration, error) {
	// A sample's first line: its value and its leaf frame.
	head := regexp.MustCompile(`^\s*([0-9.]+)(ns|us|µs|ms|s)\s+(\S.*)$`)
	units := map[string]time.Duration{"ns": time.Nanosecond, "us": time.Microsecond, "µs": time.Microsecond, "ms": time.Millisecond, "s": time.Second}
	sums := map[string]time.Duration{}
	var (
		value  time.Duration
		frames []string
		any    bool
	)
	flush := func() {
		if value == 0 {
			return
		}
		name := "other"
	parts:
		for _, p := range parts {
			for _, fr := range frames {
				if p.Frame.MatchString(fr) {
					name = p.Name
					break parts
				}
			}
		}
		sums[name] += value
		value, frames = 0, frames[:0]
	}
	sc := bufio.NewScanner(strings.NewReader(traces))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "-----------+"):
			flush()
		case value == 0:
			m := head.FindStringSubmatch(line)
			if m == nil {
				continue // the header (File:, Type:, Duration:…)
			}
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return nil, fmt.Errorf("pprof traces: %q: %w", line, err)
			}
			unit := units[m[2]]
			value, any = time.Duration(v*float64(unit)), true
			frames = append(frames, frameName(m[3]))
		default:
			if fr := frameName(strings.TrimSpace(line)); fr != "" {
				frames = append(frames, fr)
			}
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !any {
		return nil, errors.New("pprof traces: no sample")
	}
	return sums, nil
}

// frameName is a trace line's function, without pprof's " (inline)" mark.
func frameName(s string) string {
	return strings.TrimSuffix(strings.TrimSpace(s), " (inline)")
}
