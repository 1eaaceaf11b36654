package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"

	"github.com/crowdfed/crowd/flood"
)

// The rows that say where a send's cost goes: the presigned flood beside
// a client that only sends the same bytes, and the pipeline beside what
// its signing and its sending would allow together. Each is a row per
// flood client (clientKey).
const (
	rowPresignedWrk = "presigned_vs_wrk"
	// The flood's client beside an open-loop one that only sends (openloop_linux.go).
	rowPresignedOpenLoop = "presigned_vs_openloop"
	rowPipelineCombined  = "pipeline_combined"

	targetCombined = "≥ 0.8 × 1 / (1/signing alone + 1/presigned flood)"
)

// floodClients are the flood's HTTP clients, each with rows of its own.
func floodClients() []flood.Client { return []flood.Client{flood.ClientFast, flood.ClientNetHTTP} }

// clientKey is the key of row's variant for client c.
func clientKey(row string, c flood.Client) string { return row + "_" + string(c) }

// clientKeys are row's variants, one per flood client.
func clientKeys(row string) []string {
	var keys []string
	for _, c := range floodClients() {
		keys = append(keys, clientKey(row, c))
	}
	return keys
}

// heldTo is what a row of client c is held to: target for the client
// `crowd flood` ships as its default, whose speed the targets are about;
// for any other a reference, shown beside it but not judged. net/http
// stays available as the standard library's client, to cross-check the
// crowd's own against, not for its speed: the fast client exists because
// net/http could not meet these targets.
func heldTo(c flood.Client, target string) (heldTarget string, held bool) {
	if c == flood.DefaultClient {
		return target, true
	}
	return fmt.Sprintf("reference (the %s client, kept available; %s is the %s client's target)", c, target, flood.DefaultClient), false
}

// nameCombined is the name of client c's combined-ceiling row.
func nameCombined(c flood.Client) string {
	return fmt.Sprintf("pipeline vs its combined ceiling (libcrypto, null sink, %s client)", c)
}

// withClient is b whose floods send with client c: a copy sharing b's
// world, sink, wrk and report.
func (b *bench) withClient(c flood.Client) *bench {
	cp := *b
	cp.cfg.FloodClient = c
	return &cp
}

// combinedCeiling is the rate of a pipeline whose every send costs one
// unit of each stage, the stages sharing one machine: the machine time a
// stage takes per send is the inverse of its rate alone, and the times
// add, so the rate is 1 / Σ 1/rate. It is an error for any rate not to be
// a finite number > 0 (a stage that was not measured gives no ceiling).
func combinedCeiling(rates ...float64) (float64, error) {
	if len(rates) == 0 {
		return 0, errors.New("combined ceiling: no stage rates")
	}
	sum := 0.0
	for _, r := range rates {
		if !positive(r) {
			return 0, fmt.Errorf("combined ceiling: stage rate %v is not a finite rate > 0", r)
		}
		sum += 1 / r
	}
	return 1 / sum, nil
}

// sendBudget is what one send costs, in µs of all the machine's cores
// (cores × 10⁶ ÷ rate): signing alone, sending a presigned request
// alone, the pipeline doing both, and Coordination, the rest of the
// pipeline's (pipeline − signing − sending: handing requests from the
// signers to the sender, the scheduling between them; negative when the
// pipeline overlaps the stages better than running them one after the
// other would).
type sendBudget struct {
	Sign, Send, Pipeline, Coordination float64
}

// newSendBudget is the budget of a pipeline at pipeline sends/s on cores
// cores, whose signing alone runs at sign/s and whose sending alone at
// send/s. Every rate must be a finite number > 0 and cores ≥ 1.
func newSendBudget(cores int, sign, send, pipeline float64) (sendBudget, error) {
	if cores < 1 {
		return sendBudget{}, fmt.Errorf("send budget: %d cores", cores)
	}
	for _, r := range []float64{sign, send, pipeline} {
		if !positive(r) {
			return sendBudget{}, fmt.Errorf("send budget: rate %v is not a finite rate > 0", r)
		}
	}
	us := func(rate float64) float64 { return float64(cores) * 1e6 / rate }
	b := sendBudget{Sign: us(sign), Send: us(send), Pipeline: us(pipeline)}
	b.Coordination = b.Pipeline - b.Sign - b.Send
	return b, nil
}

func (s sendBudget) String() string {
	return fmt.Sprintf("per-send budget in µs of all cores: signing %.1f, presigned send %.1f, pipeline %.1f, coordination (pipeline − both) %.1f",
		s.Sign, s.Send, s.Pipeline, s.Coordination)
}

// presignedSearch searches the highest rate the flood engine sustains
// replaying pool round robin against the null sink, at GOMAXPROCS = the
// cores (what `crowd flood` runs a presigned flood with).
func (b *bench) presignedSearch(ctx context.Context, side string, pool []*flood.Prepared) *search {
	runtime.GOMAXPROCS(runtime.NumCPU())
	s := newSearch(side, b.cfg.StartRate, 1.5, b.cfg.Bracket, b.cfg.Steps, b.cfg.Retries)
	for rate, ok := s.next(); ok && ctx.Err() == nil; rate, ok = s.next() {
		s.report(b.presignedTrial(ctx, side, pool, rate))
	}
	return s
}

// combinedRows: combinedRow for each flood client: b's own with the
// libcrypto pipeline's search of the backends section (pipe) and the
// presigned half searched in turns with it (send, or sendErr when its pool
// could not be presigned: then that row fails alone), every other with a
// libcrypto pipeline search and a presigned half of its own, searched in
// turns.
func (b *bench) combinedRows(ctx context.Context, side *backendFlood, pipe *search, send *sendHalf, sendErr error, sign float64) {
	signer := newSigner()
	for _, c := range floodClients() {
		bc, s, h, err := b.withClient(c), pipe, send, sendErr
		if c != b.cfg.FloodClient {
			if h, err = bc.newSendHalf(ctx, side); err == nil {
				s = newSearch(side.name+"-"+string(c), 0.9*sign, 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
				interleaveAll(ctx, turn{s, func(ctx context.Context, rate float64) outcome {
					bc.sinkQuiet(ctx) // after the presigned half's trial
					return bc.pipelineTrial(ctx, s.side, side.gen, signer, rate, 0, 0, nil)
				}}, turn{h.search, h.trial})
			}
		}
		if err != nil {
			target, _ := heldTo(c, targetCombined)
			b.rep.fail(clientKey(rowPipelineCombined, c), nameCombined(c), target, fmt.Errorf("presigning the presigned half: %w", err))
			continue
		}
		bc.combinedRow(ctx, s, h, sign)
	}
}

// combinedRow: the libcrypto pipeline's maximum sustained rate (pipe's
// best, flooding with b's client) beside the ceiling its two stages allow together,
// combinedCeiling(signing alone, presigned flood), both measured in this
// section on the same sink: the presigned flood (send) searched in turns
// with the pipeline, with requests of the pipeline's own generator. The
// notes give the per-send budget; when the pipeline sustained no rate (on
// a loaded machine the lateness bound fails first), they give it at the
// highest rate the pipeline kept pace at, which the row still does not
// count as met.
func (b *bench) combinedRow(ctx context.Context, pipe *search, half *sendHalf, sign float64) {
	key, name := clientKey(rowPipelineCombined, b.cfg.FloodClient), nameCombined(b.cfg.FloodClient)
	target, held := heldTo(b.cfg.FloodClient, targetCombined)
	fail := func(err error) { b.rep.fail(key, name, target, err) }
	pool, s := half.pool, half.search
	details := map[string]any{"presigned": s.trials, "pipeline": pipe.trials}
	b.rep.Details[key] = details
	send, st := s.best()
	best, bt := pipe.best()
	row := Row{Key: key, Name: name, Value: best, Unit: "/s", Target: target, Met: judged(held, false),
		CeilingName: fmt.Sprintf("1 / (1/libcrypto signing alone %s + 1/presigned flood %s)", formatValue(sign, "/s"), formatValue(send, "/s"))}
	how := fmt.Sprintf("the presigned flood: %d requests of the pipeline's generator replayed round robin, its max sustained rate under the presigned row's rule, %v trials, searched in turns with the pipeline's; both with the %s client",
		len(pool), b.cfg.Trial, b.cfg.FloodClient)
	if st == nil {
		row.Notes = "no combined ceiling: the presigned flood sustained no rate (" + lastWhy(s.trials) + "); " + how
		b.rep.set(row)
		return
	}
	var err error
	if row.Ceiling, err = combinedCeiling(sign, send); err != nil {
		fail(err)
		return
	}
	at, prefix := best, ""
	if bt != nil {
		row.Ratio = best / row.Ceiling
		row.Met = judged(held, row.Ratio >= 0.8)
	} else if paced := keptPace(pipe.trials); paced != nil {
		at = paced.Rate
		prefix = fmt.Sprintf("the pipeline sustained no rate (%s) but kept pace (no drops, signers kept up; latency and lateness aside) up to %s = %.2f × the combined ceiling; there, ",
			lastWhy(pipe.trials), formatValue(at, "/s"), at/row.Ceiling)
	} else {
		row.Notes = "the pipeline sustained no rate (" + lastWhy(pipe.trials) + "); " + how
		b.rep.set(row)
		return
	}
	budget, err := newSendBudget(runtime.NumCPU(), sign, send, at)
	if err != nil {
		fail(err)
		return
	}
	details["budget"] = budget
	row.Notes = fmt.Sprintf("%s%s on %d cores; %s", prefix, budget, runtime.NumCPU(), how)
	if pt := trialAt(pipe.trials, at); pt != nil && pt.CPUPerSend > 0 {
		// The budget above prices a send at the presigned flood's maximum,
		// where its wake-ups are shared by many sends; at the pipeline's
		// rate each send pays its own, so the process's CPU is read there.
		runtime.GC()
		same, _ := floodTrial(ctx, "presigned", &cycle{reqs: pool}, at, b.cfg, nil)
		b.logTrial(same)
		cpu := cpuBudget{Cores: runtime.NumCPU(), Rate: at, Pipeline: pt.CPUPerSend, Send: same.CPUPerSend, SendKernel: same.KernelShare,
			Sign: float64(runtime.NumCPU()) * 1e6 / sign, PipelineSink: pt.SinkCPUPerSend, SendSink: same.SinkCPUPerSend,
			PipelineIdle: pt.IdlePerSend, SendIdle: same.IdlePerSend, PipelineCores: pt.CoresPerSend,
			PipelineFaults: pt.FaultsPerSend, PipelineSwitches: pt.SwitchesPerSend, SendFaults: same.FaultsPerSend,
			SendSwitches: same.SwitchesPerSend, PipelineSinkSwitches: pt.SinkSwitchesPerSend,
			SendSinkSwitches: same.SinkSwitchesPerSend, Kernel: b.rep.Machine.Kernel}
		details["cpu_budget"] = cpu
		row.Notes = fmt.Sprintf("%s; %s at %s", row.Notes, cpu, formatValue(at, "/s"))
	}
	b.rep.set(row)
}

// trialAt is the last trial of trials at rate that kept pace, or nil.
func trialAt(trials []outcome, rate float64) *outcome {
	for i := len(trials) - 1; i >= 0; i-- {
		if t := &trials[i]; t.Rate == rate && t.KeptPace {
			return t
		}
	}
	return nil
}

// cpuBudget is where a send's CPU went at one rate (Rate, on Cores
// cores), in µs per send over a trial, warm-up included: the flood
// process's own (getrusage), the null sink's (another process) and the
// machine's idle time, for the pipeline and for a presigned flood of the
// same requests at the same rate (with its process's share in the
// kernel); and a signature's, from signing alone on every core. What the
// pipeline's process spends beyond the presigned flood's and a signature
// is its coordination. PipelineCores is the cores' whole time a pipeline
// send had (Cores × its trial's wall time ÷ its sends), what the parts
// share; where it was not timed, Cores × 10⁶ ÷ Rate stands in. The
// flood process's page faults and context switches a send (Pipeline…,
// Send…), and the sink's switches beside each (…SinkSwitches), are the
// kernel entries that make the same send dearer on one machine than
// another, the faults priced by Kernel, this machine's. A part not
// measured (the sink and idle time outside Linux) is zero.
type cpuBudget struct {
	Cores                            int
	Rate                             float64
	Pipeline, Send, SendKernel, Sign float64
	PipelineSink, SendSink           float64
	PipelineIdle, SendIdle           float64
	PipelineCores                    float64
	PipelineFaults, PipelineSwitches float64
	SendFaults, SendSwitches         float64
	PipelineSinkSwitches             float64
	SendSinkSwitches                 float64
	Kernel                           kernelCosts
}

// SameRateCeiling is the combined ceiling at the costs of this rate:
// Cores × 10⁶ ÷ (a signature + the presigned flood's process + the sink
// per send, at this rate). The combined ceiling prices a send at the
// presigned flood's maximum, where each wake-up of the client and of the
// sink serves several sends; at the pipeline's lower rate each send pays
// its own, and this ceiling says what the machine allows at that price.
// It leaves out what neither process is billed for (interrupts and
// softirqs run for no process, other processes), which the budget shows as
// the rest. Zero when the sink's part was not measured.
func (c cpuBudget) SameRateCeiling() float64 {
	if c.SendSink <= 0 || c.Send <= 0 || c.Sign <= 0 || c.Cores < 1 {
		return 0
	}
	return float64(c.Cores) * 1e6 / (c.Sign + c.Send + c.SendSink)
}

func (c cpuBudget) String() string {
	s := fmt.Sprintf("the flood process's CPU per send (getrusage): pipeline %.1f µs, presigned flood at the same rate %.1f µs (%.0f %% in the kernel), a signature %.1f µs, the rest %.1f µs",
		c.Pipeline, c.Send, 100*c.SendKernel, c.Sign, c.Pipeline-c.Send-c.Sign)
	s += c.entries()
	if c.SameRateCeiling() == 0 || c.Rate <= 0 {
		return s
	}
	all := c.PipelineCores
	if all <= 0 {
		all = float64(c.Cores) * 1e6 / c.Rate
	}
	return s + fmt.Sprintf("; of the %.1f µs of all cores a send had at that rate, the pipeline's went to its process %.1f, the null sink %.1f, idle %.1f, the rest (other processes, interrupts) %.1f; the presigned flood's to its process %.1f, the sink %.1f, idle %.1f; at these same-rate costs the combined ceiling is %s (%d × 10⁶ ÷ (signature + presigned process + sink)), the pipeline %.2f × it",
		all, c.Pipeline, c.PipelineSink, c.PipelineIdle, all-c.Pipeline-c.PipelineSink-c.PipelineIdle,
		c.Send, c.SendSink, c.SendIdle, formatValue(c.SameRateCeiling(), "/s"), c.Cores, c.Rate/c.SameRateCeiling())
}

// entries is the budget's kernel entries, as a clause ("" when neither
// flood's were counted), priced where the machine's costs were measured.
func (c cpuBudget) entries() string {
	if c.PipelineFaults+c.PipelineSwitches+c.SendFaults+c.SendSwitches <= 0 {
		return ""
	}
	s := fmt.Sprintf("; its kernel entries per send: the pipeline %.2f page faults and %.2f context switches, the presigned flood at the same rate %.2f and %.2f",
		c.PipelineFaults, c.PipelineSwitches, c.SendFaults, c.SendSwitches)
	if c.PipelineSinkSwitches+c.SendSinkSwitches > 0 {
		s += fmt.Sprintf(", the sink's context switches %.2f beside the pipeline and %.2f beside the presigned flood", c.PipelineSinkSwitches, c.SendSinkSwitches)
	}
	if c.Kernel.Fault > 0 {
		s += fmt.Sprintf(" (here %s: the pipeline's faults %.1f µs of its %.1f a send)", c.Kernel, c.PipelineFaults*c.Kernel.Fault, c.Pipeline)
	}
	return s
}

// floodConns is how many connections the flood used at its maximum (its
// best trial; without one, the most any trial dialled), at least one.
func floodConns(trials []outcome, best *outcome) int {
	if best != nil && best.Conns > 0 {
		return int(best.Conns)
	}
	n := int64(1)
	for _, t := range trials {
		n = max(n, t.Conns)
	}
	return int(n)
}

// presignedWrkRows: presignedWrkRow for each flood client: b's own with
// the presigned search beside vegeta (fs), every other with a search of
// its own.
func (b *bench) presignedWrkRows(ctx context.Context, pool []*flood.Prepared, fs *search) {
	for _, c := range floodClients() {
		bc, s, whose := b.withClient(c), fs, "the presigned row's max sustained rate"
		if c != b.cfg.FloodClient {
			b.logf("  presigned flood with the %s client", c)
			s, whose = bc.presignedSearch(ctx, "flood-"+string(c), pool), "its max sustained rate, searched alone after the presigned row"
		}
		best, bt := s.best()
		wrkRate := bc.presignedWrkRow(ctx, pool, s.trials, best, bt, whose)
		if c == b.cfg.FloodClient {
			b.openLoopRow(ctx, pool, wrkRate)
		}
	}
}

// presignedWrkRow: wrk replaying the presigned flood's own pool (its wire
// form, in order, cycling) to the same null sink over as many connections
// as the flood (with b's client) dialled at its maximum, beside that
// maximum. wrk is a closed loop: its figure is how fast a client that does
// nothing but write the same bytes gets them answered, the most any
// sender could. whose says which search the flood's maximum is of. It
// returns wrk's rate (0 when it measured none).
func (b *bench) presignedWrkRow(ctx context.Context, pool []*flood.Prepared, trials []outcome, best float64, bt *outcome, whose string) float64 {
	key := clientKey(rowPresignedWrk, b.cfg.FloodClient)
	name := fmt.Sprintf("presigned flood (%s client) vs wrk replaying its requests (null sink)", b.cfg.FloodClient)
	target, held := heldTo(b.cfg.FloodClient, "≥ 0.7 × wrk")
	fail := func(err error) { b.rep.fail(key, name, target, err) }
	w := b.wrk
	if w == nil {
		var err error
		if w, err = findWrk(ctx); err != nil {
			fail(fmt.Errorf("needs wrk on PATH: %w", err))
			return 0
		}
	}
	conns := floodConns(trials, bt)
	rp := &replay{name: "presigned", n: len(pool), want: http.StatusAccepted, conc: conns,
		mk:  func(i int64) *http.Request { return postRequest(pool[i%int64(len(pool))]) },
		raw: func(i int) []byte { return rawPost(pool[i]) }}
	meds, all, err := b.closedSidesBy(ctx, w, []string{"wrk replay"}, []string{b.sinkAddr}, rp)
	if err != nil {
		fail(err)
		return 0
	}
	b.rep.Details[key] = all
	var cpu, kernel []float64
	for _, r := range all["wrk replay"] {
		cpu = append(cpu, cpuPerRequest(r))
		if r.ClientCPU > 0 {
			kernel = append(kernel, r.ClientSys/r.ClientCPU)
		}
	}
	row := Row{Key: key, Name: name, Value: best, Unit: "/s", Ceiling: meds[0], Target: target,
		CeilingName: fmt.Sprintf("%s replaying the flood's %d presigned requests in order, cycling, 1 thread, %d connections", w.version, len(pool), conns)}
	how := fmt.Sprintf("crowd: %s; wrk: Requests/sec, median of %d (%d s each after a %v warm-up by the Go client), median client CPU %.1f µs/request (%.0f %% in the kernel); %d connections = those the flood dialled at its max%s",
		whose, b.cfg.Rounds, wrkSeconds(b.cfg.Measure), b.cfg.Measure/10, median(cpu), 100*median(kernel), conns, badNote(all))
	if bt != nil && bt.CPUPerSend > 0 {
		how = fmt.Sprintf("flood client CPU %.1f µs/send at its max (%.0f %% in the kernel); %s", bt.CPUPerSend, 100*bt.KernelShare, how)
	}
	switch {
	case bt == nil:
		row.Met = judged(held, false)
		row.Notes = "the presigned flood sustained no rate (" + lastWhy(trials) + "); " + how
	case meds[0] > 0:
		row.Ratio = best / meds[0]
		row.Met = judged(held, row.Ratio >= 0.7 && !anyBad(all))
		row.Notes = fmt.Sprintf("flood p99 latency %.2f ms at its max, wrk p99 %.2f ms; %s", bt.LatencyP99MS, medianP99(all["wrk replay"]), how)
	default:
		row.Met = judged(held, false)
		row.Notes = "wrk measured no rate; " + how
	}
	b.rep.set(row)
	return meds[0]
}

// medianP99 is the median of rs' p99 latencies, in ms (NaN for none).
func medianP99(rs []loopResult) float64 {
	if len(rs) == 0 {
		return math.NaN()
	}
	ps := make([]float64, len(rs))
	for i, r := range rs {
		ps[i] = r.P99
	}
	return median(ps)
}

// The open-loop reference's limits, the flood's own: its default in
// flight, and its per-send timeout as the drain.
const (
	openLoopMaxInflight = flood.DefaultMaxInflight
	openLoopDrain       = flood.DefaultTimeout
)

// openLoopRow: the presigned flood beside the open-loop reference
// (openLoopTrial) replaying the same pool to the same null sink under the
// presigned row's rule, their searches in turns, trial by trial, so that
// the machine's drift falls on both. wrk's closed loop answers how fast
// the sink can be kept busy; this answers how fast an open-loop sender
// that does nothing but send, held to the latency bound, goes on this
// machine, so the two ratios part the flood's distance from wrk into its
// own overhead and the price of the open loop. No target: it is what the
// wrk row's target is read against; wrkRate is that row's wrk figure.
func (b *bench) openLoopRow(ctx context.Context, pool []*flood.Prepared, wrkRate float64) {
	name := fmt.Sprintf("presigned flood (%s client) vs an open-loop epoll client replaying its requests (null sink)", b.cfg.FloodClient)
	const target = "reference (an open-loop client that only paces, writes and frames, held to the same bound)"
	reqs := make([][]byte, len(pool))
	for i, p := range pool {
		reqs[i] = rawPost(p)
	}
	b.logf("  the presigned flood and the open-loop reference, in turns")
	floodFn := func(ctx context.Context, rate float64) outcome { return b.presignedTrial(ctx, "flood", pool, rate) }
	loopFn := func(ctx context.Context, rate float64) outcome {
		b.sinkQuiet(ctx)
		runtime.GC()
		o := openLoopTrial(ctx, reqs, b.sinkAddr, rate, b.cfg)
		o.judge(b.cfg.LatencyBound, nil, nil)
		b.logTrial(o)
		return o
	}
	runtime.GOMAXPROCS(runtime.NumCPU())
	fs := newSearch("flood", b.cfg.StartRate, 1.5, b.cfg.Bracket, b.cfg.Steps, b.cfg.Retries)
	es := newSearch("open loop", b.cfg.StartRate, 1.5, b.cfg.Bracket, b.cfg.Steps, b.cfg.Retries)
	interleave(ctx, fs, es, floodFn, loopFn)
	b.rep.Details[rowPresignedOpenLoop] = map[string]any{"flood": fs.trials, "open loop": es.trials}
	fBest, ft := fs.best()
	eBest, et := es.best()
	row := Row{Key: rowPresignedOpenLoop, Name: name, Value: fBest, Unit: "/s", Ceiling: eBest, Target: target,
		CeilingName: fmt.Sprintf("%d epoll loops, one a core, each on its own OS thread, writing the pool's %d requests' wire form in order, cycling, on non-blocking sockets, paced as the flood is (at most %d in flight); the presigned row's rule, searches in turns",
			runtime.GOMAXPROCS(0), len(pool), openLoopMaxInflight)}
	switch {
	case et == nil:
		row.Notes = "the open-loop client sustained no rate (" + lastWhy(es.trials) + ")"
	case ft == nil:
		row.Notes = "the presigned flood sustained no rate (" + lastWhy(fs.trials) + ")"
	default:
		row.Ratio = fBest / eBest
		row.Notes = fmt.Sprintf("CPU a send at each one's max: flood %.1f µs (%.0f %% in the kernel), open loop %.1f µs (%.0f %% in the kernel); p99 latency %.2f and %.2f ms; connections dialled at the max %d and %d",
			ft.CPUPerSend, 100*ft.KernelShare, et.CPUPerSend, 100*et.KernelShare, ft.LatencyP99MS, et.LatencyP99MS, ft.Conns, et.Conns)
	}
	if et != nil && wrkRate > 0 {
		row.Notes += fmt.Sprintf("; the open loop's max is %.2f × wrk's %s (the wrk row's reference, measured before)", eBest/wrkRate, formatValue(wrkRate, "/s"))
	}
	b.rep.set(row)
}
