package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// outcome is one trial of a maximum-rate search: a generator offered Rate
// for a trial; everything is counted over the measured window (the
// trial's warm-up discarded), identically for every generator.
type outcome struct {
	Side          string  `json:"side"`
	Rate          float64 `json:"rate"`      // offered, per second
	Offered       int64   `json:"offered"`   // sends due in the measured window
	Completed     int64   `json:"completed"` // of those, answered (or failed)
	OK            int64   `json:"ok"`        // of those, answered 2xx
	Dropped       int64   `json:"dropped,omitempty"`
	Starved       int64   `json:"starved,omitempty"`
	Achieved      float64 `json:"achieved"`                  // OK per second of the measured window
	Success       float64 `json:"success"`                   // OK / Completed
	LatencyP99MS  float64 `json:"latency_p99_ms"`            // from the intended send time
	LatenessP99MS float64 `json:"lateness_p99_ms,omitempty"` // intended → actual send (flood only)
	SignedRate    float64 `json:"signed_rate,omitempty"`     // pipeline: signatures per second during the run
	Results       int64   `json:"results,omitempty"`         // vegeta: results received, warm-up included
	FirstError    string  `json:"first_error,omitempty"`     // the first answer in the window that was not 2xx
	Conns         int64   `json:"conns,omitempty"`           // flood: connections its transport dialled in the trial
	// CPUPerSend is the bench process's CPU (user + system) per send over
	// the flood trial, warm-up included, in µs, and KernelShare the part
	// of it spent in the kernel: the flood's client cost beside wrk's (the
	// sink is another process; nothing else runs in the bench's meanwhile).
	CPUPerSend  float64 `json:"cpu_us_per_send,omitempty"`
	KernelShare float64 `json:"kernel_share,omitempty"`
	// SinkCPUPerSend is the null sink process's CPU per send over the
	// same span, in µs, IdlePerSend the idle time of the CPUs the bench
	// may run on (summed over them) per send, and CoresPerSend those
	// CPUs' whole time (their count × the span's wall time) per send:
	// with CPUPerSend, where a send's share of the machine went (Linux;
	// zero elsewhere).
	SinkCPUPerSend float64 `json:"sink_cpu_us_per_send,omitempty"`
	IdlePerSend    float64 `json:"idle_us_per_send,omitempty"`
	CoresPerSend   float64 `json:"cores_us_per_send,omitempty"`
	// FaultsPerSend and SwitchesPerSend are the bench process's minor
	// page faults and context switches (voluntary and not) per send over
	// the same span (getrusage), SinkFaultsPerSend and
	// SinkSwitchesPerSend the null sink's (/proc/PID/stat, and each of
	// its threads' /proc/PID/task/TID/status; Linux): the kernel entries
	// Machine.Kernel prices.
	FaultsPerSend       float64 `json:"faults_per_send,omitempty"`
	SwitchesPerSend     float64 `json:"switches_per_send,omitempty"`
	SinkFaultsPerSend   float64 `json:"sink_faults_per_send,omitempty"`
	SinkSwitchesPerSend float64 `json:"sink_switches_per_send,omitempty"`
	// Dispatcher is the flood dispatcher thread's scheduling policy
	// (record.Dispatcher), or "n threads" where n dispatchers shared the
	// schedule, with what its record says was refused (why not
	// real-time; with fifo, why not deadline).
	Dispatcher string `json:"dispatcher,omitempty"`
	// DispatcherThreads is how many dispatchers shared the schedule (0: one ran it).
	DispatcherThreads int    `json:"dispatcher_threads,omitempty"`
	KeptPace          bool   `json:"kept_pace"` // sustained but for the latency and lateness bounds
	Pass              bool   `json:"pass"`
	Why               string `json:"why,omitempty"` // what failed
	// Slow says the machine was measured slow around the trial (its
	// section's ceiling, sampled beside it, fell well below its median):
	// a failed trial so marked is tried again without counting
	// (search.report). Empty when it was not, or was not measured.
	Slow string `json:"slow,omitempty"`
	// Uncounted: the search tried the rate again instead of counting
	// this failed Slow trial.
	Uncounted bool `json:"uncounted,omitempty"`
}

// judge decides whether the rate was sustained: success >= 99 %, achieved
// >= 0.99 × offered, and p99 latency from the intended send time within
// bound; the same rule for every generator. pace and timing are further
// failures found by the caller: of keeping up (drops, signers) and of
// timing (lateness). KeptPace is the verdict without any timing bound.
func (o *outcome) judge(bound time.Duration, pace, timing []string) {
	var why []string
	if o.Why != "" {
		why = append(why, o.Why) // the trial itself went wrong
	}
	switch {
	case o.Completed == 0:
		why = append(why, "nothing completed")
	case o.Success < 0.99:
		why = append(why, fmt.Sprintf("success %.2f%% < 99%%", 100*o.Success))
	}
	if o.Achieved < 0.99*o.Rate {
		why = append(why, fmt.Sprintf("achieved %.0f/s < 0.99 × %.0f/s", o.Achieved, o.Rate))
	}
	why = append(why, pace...)
	o.KeptPace = len(why) == 0
	if o.LatencyP99MS > ms(bound) {
		why = append(why, fmt.Sprintf("p99 latency %.1f ms > %v", o.LatencyP99MS, bound))
	}
	why = append(why, timing...)
	o.Pass = len(why) == 0
	o.Why = strings.Join(why, "; ")
}

// search finds the highest rate a generator sustains: from a first rate
// it grows (×factor) until a trial fails or shrinks (÷factor) until one
// passes, at most `bracket` times, then bisects between the highest pass
// and the lowest failure `steps` times (or until they are within 2 %).
//
// A failed trial is tried again `retries` times before it counts: on a
// shared machine, another tenant's burst can fail a trial, but none can
// make one pass (a pass needs the generator to deliver), so the best of
// the tries is the generator's figure. A burst can outlast the retries (on
// these machines a slow spell of half a minute took a quarter off signing
// alone): a failed trial the section marks Slow, between two ceiling
// samples well below the ceiling's median, is tried again without counting,
// at most maxSlowRetries times a search, so that the search stops by
// itself however slow the machine stays.
type search struct {
	side          string
	rate          float64 // the next rate to try
	factor        float64
	lo, hi        float64 // highest passing and lowest failing rate; 0 = none yet
	bracket, step int     // trials left for bracketing and for bisection
	retries, left int     // tries of a failed rate; tries left at the current rate
	slowLeft      int     // failed trials marked Slow that may yet be tried again uncounted
	done          bool
	trials        []outcome
}

// maxSlowRetries is how many failed trials marked Slow a search tries
// again without counting.
const maxSlowRetries = 3

// slowBelow is the share of a ceiling's median under which a sample says
// the machine was slow: samples beside passing trials stayed above 0.9 ×
// it, those of a slow spell fell to 0.7-0.8 ×.
const slowBelow = 0.85

// slowAround says why the machine was slow around a trial whose section
// sampled its ceiling at before and after it ("" when it was not): both
// samples under slowBelow × the median of all samples so far, so the spell
// spans the trial, and one low sample (or the tail of a trial's own
// overload, which the sections wait out before sampling) excuses nothing.
// A sample that measured nothing (≤ 0) says nothing.
func slowAround(before, after float64, samples []float64) string {
	if len(samples) < 3 || before <= 0 || after <= 0 {
		return "" // too few samples for a median to stand for the machine
	}
	med := median(append([]float64(nil), samples...))
	if high := max(before, after); high >= slowBelow*med {
		return ""
	}
	return fmt.Sprintf("the ceiling sampled before and after it %.0f/s and %.0f/s < %.2f × its median %.0f/s", before, after, slowBelow, med)
}

// slowNote says how many failed trials of trials were tried again because
// the machine was slow around them ("" for none).
func slowNote(trials []outcome) string {
	n := 0
	for _, t := range trials {
		if t.Uncounted {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d failed trial(s) tried again uncounted, the ceiling sampled beside each under %.2f × its median (at most %d a search)", n, slowBelow, maxSlowRetries)
}

func newSearch(side string, start, factor float64, bracket, steps, retries int) *search {
	return &search{side: side, rate: math.Max(1, math.Round(start)), factor: factor, bracket: bracket, step: steps,
		retries: retries, left: retries, slowLeft: maxSlowRetries}
}

// next is the rate to try next; false when the search is over.
func (s *search) next() (float64, bool) { return s.rate, !s.done }

// report takes the outcome of the rate next returned.
func (s *search) report(o outcome) {
	s.trials = append(s.trials, o)
	if !o.Pass && o.Slow != "" && s.slowLeft > 0 {
		s.slowLeft-- // the machine failed it, not the generator: the same rate again
		s.trials[len(s.trials)-1].Uncounted = true
		return
	}
	if !o.Pass && s.left > 0 {
		s.left-- // try the same rate again
		return
	}
	s.left = s.retries
	if o.Pass {
		s.lo = math.Max(s.lo, o.Rate)
	} else if s.hi == 0 || o.Rate < s.hi {
		s.hi = o.Rate
	}
	if s.lo > 0 && s.hi > s.lo {
		if s.step <= 0 || (s.hi-s.lo)/s.lo < 0.02 {
			s.done = true
			return
		}
		s.step--
		s.rate = math.Round((s.lo + s.hi) / 2)
		return
	}
	if s.bracket <= 0 {
		s.done = true
		return
	}
	s.bracket--
	if s.hi == 0 {
		s.rate = math.Round(s.lo * s.factor)
	} else {
		s.rate = math.Max(1, math.Round(s.hi/s.factor))
	}
}

// best is the highest sustained rate found (0: none) and its trial.
func (s *search) best() (float64, *outcome) {
	for i := range s.trials {
		if t := &s.trials[i]; t.Pass && t.Rate == s.lo {
			return s.lo, t
		}
	}
	return 0, nil
}

// interleave runs searches a and b, one trial of each in turn (A, B, A,
// B), so that the machine's noise falls on both; it stops when both are
// over or ctx is done.
func interleave(ctx context.Context, a, b *search, trialA, trialB func(context.Context, float64) outcome) {
	interleaveAll(ctx, turn{a, trialA}, turn{b, trialB})
}

// turn is one search of an interleaving and its trial.
type turn struct {
	s     *search
	trial func(context.Context, float64) outcome
}

// interleaveAll runs the turns' searches one trial of each in turn (A, B,
// C, A, B, C, …, a search that is over skipping its turns); it stops when
// all are over or ctx is done.
func interleaveAll(ctx context.Context, turns ...turn) {
	for ctx.Err() == nil {
		ran := false
		for _, t := range turns {
			if ctx.Err() != nil {
				return
			}
			if rate, ok := t.s.next(); ok {
				t.s.report(t.trial(ctx, rate))
				ran = true
			}
		}
		if !ran {
			return
		}
	}
}

// trialWatch watches a trial's flood (the live-metrics row): it returns a
// collector to feed beside the record's and the record's progress. It may
// also set the plan's own fields (the priority section's dispatcher).
type trialWatch func(*flood.Plan) (flood.Collector, func(record.Progress))

// floodTrial runs the flood engine for one trial of rate from src against
// the null sink (its URLs name it), with a fresh keep-alive pool of
// cfg.FloodClient; watch, when set, watches it.
func floodTrial(ctx context.Context, side string, src flood.Source, rate float64, cfg config, watch trialWatch) (outcome, *record.Result) {
	o := outcome{Side: side, Rate: rate}
	pacer, err := flood.NewConstantPacer(rate)
	if err != nil {
		o.Why = err.Error()
		return o, nil
	}
	// Counted so that a client replaying the same requests can be given
	// as many connections as the flood found it needed.
	var conns atomic.Int64
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	tr := flood.NewClientTransport(flood.TransportOptions{Client: cfg.FloodClient, MaxInflight: flood.DefaultMaxInflight,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conns.Add(1)
			return d.DialContext(ctx, network, addr)
		}})
	defer tr.CloseIdleConnections()
	plan := flood.Plan{Limits: flood.Limits{Duration: cfg.Trial, Warmup: cfg.Warmup, Timeout: 10 * time.Second}, Pacer: pacer, Source: src,
		Transport: tr, Priority: cfg.DispatcherPriority}
	var also flood.Collector
	var progress func(record.Progress)
	if watch != nil {
		also, progress = watch(&plan)
	}
	rec := record.NewRecorder(record.RecorderOptions{Progress: progress})
	var sinkBefore cpuTimes
	var sinkFaultsBefore, sinkSwitchesBefore float64
	if cfg.sinkPID > 0 {
		sinkBefore, sinkFaultsBefore = processCPUOf(cfg.sinkPID), processFaultsOf(cfg.sinkPID)
		sinkSwitchesBefore = processSwitchesOf(cfg.sinkPID)
	}
	entriesBefore := processEntries()
	before, idleBefore, start := processCPU(), machineIdle(), time.Now()
	if err := flood.Run(ctx, plan, flood.Collectors(rec, also)); err != nil {
		o.Why = err.Error()
		return o, nil
	}
	span := time.Since(start)
	res := rec.Result()
	o.Conns = conns.Load()
	o.Dispatcher, o.DispatcherThreads = res.Dispatcher.Policy, res.Dispatcher.Threads
	if n := res.Dispatcher.Threads; n > 0 {
		o.Dispatcher = fmt.Sprintf("%d threads", n)
	}
	if why := res.Dispatcher.Refused; why != "" {
		o.Dispatcher += " (refused: " + why + ")"
	}
	o.CPUPerSend, o.KernelShare = processCPU().perSend(before, res.Timeline)
	o.FaultsPerSend, o.SwitchesPerSend = processEntries().perSend(entriesBefore, res.Timeline)
	if cfg.sinkPID > 0 {
		o.SinkCPUPerSend, _ = processCPUOf(cfg.sinkPID).perSend(sinkBefore, res.Timeline)
		o.SinkFaultsPerSend = perSent(sinkFaultsBefore, processFaultsOf(cfg.sinkPID), res.Timeline)
		o.SinkSwitchesPerSend = perSent(sinkSwitchesBefore, processSwitchesOf(cfg.sinkPID), res.Timeline)
	}
	if n := sentIn(res.Timeline); n > 0 {
		o.IdlePerSend = 1e6 * max(0, machineIdle()-idleBefore) / float64(n)
		o.CoresPerSend = float64(runtime.NumCPU()) * 1e6 * span.Seconds() / float64(n)
	}
	o.take(res.Overall, res.Measured)
	if res.Partial {
		o.Why = "partial: " + string(res.Reason)
	}
	return o, res
}

// take fills o's counts, rates and percentiles from st, measured over
// measured: one trial's, or several trials' pooled (their Stats merged and
// their windows added), judged as one.
func (o *outcome) take(st *record.Stats, measured time.Duration) {
	c := st.Counts
	o.Offered, o.Completed, o.OK = c.Offered, c.Completed, st.Tally.OK()
	o.Dropped, o.Starved = c.Dropped, c.Starved
	o.Achieved, o.Success = 0, 0
	if w := measured.Seconds(); w > 0 {
		o.Achieved = float64(o.OK) / w
	}
	if o.Completed > 0 {
		o.Success = float64(o.OK) / float64(o.Completed)
	}
	o.LatencyP99MS = usToMS(st.Latency.ValueAtQuantile(99))
	o.LatenessP99MS = usToMS(st.Lateness.ValueAtQuantile(99))
	o.FirstError = ""
	for cl, n := range st.Tally.Classes {
		if c := record.Class(cl); n > 0 && !c.OK() {
			o.FirstError = fmt.Sprintf("%d × %s", n, c)
			break
		}
	}
}

// vegetaTargets are the pool's requests as vegeta targets: the same
// method, URL, headers and body bytes (vegeta sends them as opaque data and
// adds its X-Vegeta-Seq header).
func vegetaTargets(pool []*flood.Prepared) []vegeta.Target {
	ts := make([]vegeta.Target, len(pool))
	for i, p := range pool {
		h := p.Header.Clone()
		if p.Host != "" {
			h.Set("Host", p.Host)
		}
		ts[i] = vegeta.Target{Method: p.Method, URL: p.URL.String(), Body: p.Body, Header: h}
	}
	return ts
}

// vegetaClient is the client vegeta.NewAttacker builds by default (its
// dialer, proxy, TLS and connection settings), made here so that its idle
// connections can be closed after each trial, as they are when the vegeta
// command exits; the flood's trials close theirs too.
func vegetaClient() (*http.Client, *http.Transport) {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: vegeta.DefaultLocalAddr.IP, Zone: vegeta.DefaultLocalAddr.Zone},
		KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{},
		MaxIdleConnsPerHost: vegeta.DefaultConnections,
		MaxConnsPerHost:     vegeta.DefaultMaxConnections,
	}
	return &http.Client{Timeout: vegeta.DefaultTimeout, Transport: tr}, tr
}

// vegetaTrial runs vegeta's Attacker (library defaults, a constant pacer,
// the flood's 10 s timeout) for one trial of rate over targets, and counts
// its results as floodTrial does: hit n (from 0) is due at (n+1)/rate, as
// vegeta's pacer schedules it; hits due in the
// warm-up are discarded; latency is from the due time to the end of the
// answer (vegeta's own latency starts at the actual send).
func vegetaTrial(ctx context.Context, targets []vegeta.Target, rate float64, cfg config) outcome {
	o := outcome{Side: "vegeta", Rate: rate}
	client, tr := vegetaClient()
	defer tr.CloseIdleConnections()
	atk := vegeta.NewAttacker(vegeta.Client(client), vegeta.Timeout(10*time.Second))
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	pacer := vegeta.ConstantPacer{Freq: int(rate), Per: time.Second}
	lat := hdr.New(1, int64(time.Hour/time.Microsecond), 3)
	start := time.Now()
	for r := range atk.Attack(vegeta.NewStaticTargeter(targets...), pacer, cfg.Trial, "") {
		o.Results++
		due := time.Duration(float64(r.Seq+1) * float64(time.Second) / rate)
		if due < cfg.Warmup || due >= cfg.Trial {
			continue
		}
		o.Completed++
		if r.Code >= 200 && r.Code < 300 {
			o.OK++
		} else if o.FirstError == "" {
			o.FirstError = cmp.Or(r.Error, fmt.Sprintf("HTTP %d", r.Code))
		}
		d := r.Timestamp.Add(r.Latency).Sub(start.Add(due))
		_ = lat.RecordValue(min(max(0, d.Microseconds()), int64(time.Hour/time.Microsecond)))
	}
	o.Offered = int64(math.Ceil(rate*cfg.Trial.Seconds())) - int64(math.Ceil(rate*cfg.Warmup.Seconds()))
	if w := (cfg.Trial - cfg.Warmup).Seconds(); w > 0 {
		o.Achieved = float64(o.OK) / w
	}
	if o.Completed > 0 {
		o.Success = float64(o.OK) / float64(o.Completed)
	}
	o.LatencyP99MS = usToMS(lat.ValueAtQuantile(99))
	return o
}

// cpuTimes is the user and system CPU a process used, in seconds.
type cpuTimes struct{ user, sys float64 }

// processCPU is the bench process's CPU so far (zero where getrusage fails).
func processCPU() cpuTimes {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return cpuTimes{}
	}
	return cpuTimes{tvSeconds(ru.Utime), tvSeconds(ru.Stime)}
}

// kernelEntries is a process's minor page faults and context switches
// (voluntary and not) so far.
type kernelEntries struct{ faults, switches float64 }

// processEntries is the bench process's kernelEntries so far (zero where
// getrusage fails).
func processEntries() kernelEntries {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return kernelEntries{}
	}
	return kernelEntries{float64(ru.Minflt), float64(ru.Nvcsw + ru.Nivcsw)}
}

// perSend is the faults and the switches since before per send of
// timeline (every tick's sends, warm-up included).
func (e kernelEntries) perSend(before kernelEntries, timeline []record.Tick) (faults, switches float64) {
	return perSent(before.faults, e.faults, timeline), perSent(before.switches, e.switches, timeline)
}

// perSent is what a count grew by from before to after, per send of
// timeline (warm-up included). Zero without sends, or where either
// reading failed (zero: a live process has faulted and switched before
// any trial) or the count went back.
func perSent(before, after float64, timeline []record.Tick) float64 {
	sent := sentIn(timeline)
	if sent == 0 || before <= 0 || after <= before {
		return 0
	}
	return (after - before) / float64(sent)
}

// sentIn is how many requests timeline's ticks sent, warm-up included.
func sentIn(timeline []record.Tick) int64 {
	var sent int64
	for _, tk := range timeline {
		sent += tk.Sent
	}
	return sent
}

// perSend is the CPU used since before per send of timeline (every tick's
// sends, warm-up included), in µs, and the kernel's share of it.
func (c cpuTimes) perSend(before cpuTimes, timeline []record.Tick) (us, kernel float64) {
	sent := sentIn(timeline)
	user, sys := c.user-before.user, c.sys-before.sys
	if sent == 0 || user+sys <= 0 {
		return 0, 0
	}
	return 1e6 * (user + sys) / float64(sent), sys / (user + sys)
}
