package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// The rows of the signing backends: libcrypto beside Go and
// beside OpenSSL's own figures, all in one run.
const (
	rowSignLibcrypto      = "sign_libcrypto"
	rowPipelineLibcrypto  = "pipeline_libcrypto"
	rowPipelineVsGo       = "pipeline_libcrypto_vs_go"
	rowPipelineOneCore    = "pipeline_1core"
	rowInboxLibcrypto     = "inbox_libcrypto"
	rowInboxLibcryptoVsGo = "inbox_libcrypto_vs_go"
)

// libcryptoWorld is the bench's world (the same keys) signing and verifying
// with the libcrypto backend, opened on first use; an error when this build
// has no cgo.
func (b *bench) libcryptoWorld() (*actors.World, error) {
	if b.lcWorld != nil || b.lcErr != nil {
		return b.lcWorld, b.lcErr
	}
	lc, err := signing.NewBackend(signing.BackendLibcrypto)
	if err == nil {
		b.lcWorld, err = openWorld(worldDir(b.cfg.State, b.cfg.Origins, b.cfg.Actors), b.cfg.Origins, b.cfg.Actors, lc)
	}
	b.lcErr = err
	return b.lcWorld, err
}

// backendFlood is one backend's side of the pipeline comparison: its
// generator (whose senders sign with the backend), a draft for the
// signing-only samples, and those samples.
type backendFlood struct {
	name     string
	gen      *traffic.Generator
	draft    traffic.Draft
	ceilings []float64 // signing-only, all cores
}

func newBackendFlood(name string, world *actors.World, sink string) (*backendFlood, error) {
	gen, err := newGenerator(world, "create=6,like=3", sinkTarget(sink))
	if err != nil {
		return nil, err
	}
	d, err := gen.Stream().Next()
	if err != nil {
		return nil, err
	}
	return &backendFlood{name: name, gen: gen, draft: d}, nil
}

// The names of the backends section's rows.
const (
	nameSign = "libcrypto RSA-2048 signing alone, all cores (SignPost)"
	nameLC   = "flood, pipeline signing with libcrypto: max sustained rate (null sink)"
	nameVs   = "flood, pipeline: libcrypto vs Go backend (same run)"
)

// backendsSection: each backend's signing-only rate and openssl speed's
// (the machine's ceilings), then the pipeline-signed flood's maximum
// sustained rate with each backend, the two searches alternating trial by
// trial, each trial followed by a signing-only sample of its backend.
func (b *bench) backendsSection(ctx context.Context) {
	fail := func(err error) {
		b.rep.fail(rowSignLibcrypto, nameSign, "reference", err)
		b.rep.fail(rowPipelineLibcrypto, nameLC, "≥ 0.45 × libcrypto signing, p99 lateness ≤ 1 ms", err)
		b.rep.fail(rowPipelineVsGo, nameVs, "≥ 2 × Go backend", err)
		for _, c := range floodClients() {
			target, _ := heldTo(c, targetCombined)
			b.rep.fail(clientKey(rowPipelineCombined, c), nameCombined(c), target, err)
		}
	}
	lcWorld, err := b.libcryptoWorld()
	if err != nil {
		fail(err)
		return
	}
	goSide, err := newBackendFlood(signing.BackendGo, b.world, b.sinkAddr)
	if err != nil {
		fail(err)
		return
	}
	lcSide, err := newBackendFlood(signing.BackendLibcrypto, lcWorld, b.sinkAddr)
	if err != nil {
		fail(err)
		return
	}
	signer := newSigner()
	cores := runtime.NumCPU()
	sampleDur := max(b.cfg.Measure/4, 100*time.Millisecond)
	sample := func(s *backendFlood) float64 {
		// After the sink has answered the trial's tail: a sample taken
		// while it still works measures the trial, not the machine.
		b.sinkQuiet(ctx)
		runtime.GC()
		c := signCeiling(ctx, signer, s.draft, sampleDur, cores)
		s.ceilings = append(s.ceilings, c)
		b.logf("  %-9s signing alone on %d cores: %7.0f/s", s.name, cores, c)
		return c
	}
	ossl := b.opensslSpeeds(ctx)
	lcOne := signCeiling(ctx, signer, lcSide.draft, 2*sampleDur, 1)
	b.logf("  libcrypto signing alone on 1 goroutine: %.0f/s", lcOne)
	sample(goSide)
	sample(lcSide)
	searches := map[string]*search{}
	for _, s := range []*backendFlood{goSide, lcSide} {
		searches[s.name] = newSearch(s.name, 0.9*s.ceilings[0], 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
	}
	trial := func(s *backendFlood) func(context.Context, float64) outcome {
		return func(ctx context.Context, rate float64) outcome {
			// Each side was sampled before the searches began, so it has a
			// last sample; a presigned trial may come just before this one,
			// so the sink gets to answer its tail first.
			before := s.ceilings[len(s.ceilings)-1]
			b.sinkQuiet(ctx)
			o := b.pipelineTrial(ctx, s.name, s.gen, signer, rate, 0, 0, nil)
			return b.markSlow(o, before, sample(s), s.ceilings)
		}
	}
	// The combined ceiling's presigned half is searched in the same turns,
	// with requests of the libcrypto pipeline's own generator: searched
	// minutes apart, the two halves of its ratio met different machines
	// (the presigned half alone ranged 8 126-30 235/s across runs).
	// Without it only the combined row fails (combinedRows): the
	// pipelines' rows stand on their own searches.
	turns := []turn{{searches[signing.BackendGo], trial(goSide)}, {searches[signing.BackendLibcrypto], trial(lcSide)}}
	send, sendErr := b.newSendHalf(ctx, lcSide)
	if sendErr == nil {
		turns = append(turns, turn{send.search, send.trial})
	}
	interleaveAll(ctx, turns...)
	b.backendsRows(ctx, goSide, lcSide, searches, lcOne, ossl, send, sendErr)
}

// sendHalf is the combined ceiling's presigned half: a presigned flood of
// requests of the pipeline's generator, searched under the presigned row's
// rule with the bench's flood client.
type sendHalf struct {
	pool   []*flood.Prepared
	search *search
	bench  *bench // whose flood client and sink the trials use
}

// newSendHalf presigns a pool of side's generator and makes the search
// of its half (no trial run yet).
func (b *bench) newSendHalf(ctx context.Context, side *backendFlood) (*sendHalf, error) {
	pool, _, err := presignPool(ctx, side.gen, b.cfg.Pool)
	if err != nil {
		return nil, err
	}
	b.logf("  presigned flood of the pipeline's requests (%d presigned, %s client), in turns with the pipelines", len(pool), b.cfg.FloodClient)
	return &sendHalf{pool: pool, bench: b,
		search: newSearch("presigned-"+string(b.cfg.FloodClient), b.cfg.StartRate, 1.5, b.cfg.Bracket, b.cfg.Steps, b.cfg.Retries)}, nil
}

// trial is one presigned trial at rate on every core (as `crowd flood`
// runs a presigned flood), whatever a pipeline trial before it set.
func (h *sendHalf) trial(ctx context.Context, rate float64) outcome {
	runtime.GOMAXPROCS(runtime.NumCPU())
	return h.bench.presignedTrial(ctx, h.search.side, h.pool, rate)
}

// backendsRows sets the backends section's rows from its searches and
// samples, then measures and sets the pipeline's combined-ceiling row.
func (b *bench) backendsRows(ctx context.Context, goSide, lcSide *backendFlood, searches map[string]*search, lcOne float64, ossl opensslSpeeds, send *sendHalf, sendErr error) {
	cores := runtime.NumCPU()
	goBest, goT := searches[signing.BackendGo].best()
	lcBest, lcT := searches[signing.BackendLibcrypto].best()
	goCeil, lcCeil := median(append([]float64(nil), goSide.ceilings...)), median(append([]float64(nil), lcSide.ceilings...))
	b.rep.Details["backends"] = map[string]any{"go": searches[signing.BackendGo].trials, "libcrypto": searches[signing.BackendLibcrypto].trials,
		"go_ceilings": goSide.ceilings, "libcrypto_ceilings": lcSide.ceilings, "libcrypto_1_goroutine": lcOne, "openssl_speed": ossl}

	sign := Row{Key: rowSignLibcrypto, Name: nameSign, Value: lcCeil, Unit: "/s", Target: "reference (the machine's ceiling)",
		Notes: fmt.Sprintf("median of %d samples alternating with the floods' trials; on 1 goroutine %s; Go backend on %d cores %s (libcrypto %.2f × Go); %s",
			len(lcSide.ceilings), formatValue(lcOne, "/s"), cores, formatValue(goCeil, "/s"), lcCeil/goCeil, ossl)}
	if ossl.Sign[cores] > 0 {
		sign.Ceiling, sign.CeilingName = ossl.Sign[cores], fmt.Sprintf("openssl speed rsa2048 -multi %d, sign/s", cores)
		sign.Ratio = lcCeil / sign.Ceiling
	}
	b.rep.set(sign)
	rule := fmt.Sprintf("%s; sustained: achieved ≥ 0.99 × offered, no drops, signers kept up, %s, p99 latency ≤ %v; the two backends' searches alternating",
		b.signersRule(), b.latenessRule(), b.cfg.LatencyBound)
	lc := Row{Key: rowPipelineLibcrypto, Name: nameLC, Value: lcBest, Unit: "/s", Ceiling: lcCeil,
		CeilingName: fmt.Sprintf("libcrypto SignPost alone on %d goroutines, median of %d", cores, len(lcSide.ceilings)),
		Target:      "≥ 0.45 × libcrypto signing, p99 lateness ≤ 1 ms"}
	vs := Row{Key: rowPipelineVsGo, Name: nameVs, Value: lcBest, Unit: "/s", Ceiling: goBest,
		CeilingName: "the same flood signing with the Go backend (crypto/rsa)", Target: "≥ 2 × Go backend"}
	if lcT != nil {
		lc.Ratio = lcBest / lcCeil
		lc.Met = met(lc.Ratio >= 0.45)
		lc.Notes = fmt.Sprintf("p99 lateness %.2f ms at %s, the dispatcher under the %s policy", lcT.LatenessP99MS, formatValue(lcBest, "/s"), dispatcherPolicy(lcT))
	} else {
		lc.Met = met(false)
		lc.Notes = "no rate met every bound (" + lastWhy(searches[signing.BackendLibcrypto].trials) + ")"
	}
	lc.Notes += pacedNote(searches[signing.BackendLibcrypto].trials, lcBest, lcCeil) + slowNote(searches[signing.BackendLibcrypto].trials) + "; " + rule
	if goT != nil && lcT != nil {
		vs.Ratio = lcBest / goBest
		vs.Met = met(vs.Ratio >= 2)
		vs.Notes = fmt.Sprintf("signing alone: libcrypto %s ÷ Go %s = %.2f, the most a pipeline that differs only in its signer can gain here; Go backend: %s = %.2f × its own signing ceiling, p99 lateness %.2f ms%s; %s",
			formatValue(lcCeil, "/s"), formatValue(goCeil, "/s"), lcCeil/goCeil,
			formatValue(goBest, "/s"), goBest/goCeil, goT.LatenessP99MS,
			pacedNote(searches[signing.BackendGo].trials, goBest, goCeil)+slowNote(searches[signing.BackendGo].trials), rule)
	} else {
		vs.Met = met(false)
		vs.Notes = "a side sustained no rate: go " + bestOrWhy(goT, searches[signing.BackendGo].trials) +
			", libcrypto " + bestOrWhy(lcT, searches[signing.BackendLibcrypto].trials)
	}
	b.rep.set(lc)
	b.rep.set(vs)
	b.combinedRows(ctx, lcSide, searches[signing.BackendLibcrypto], send, sendErr, lcCeil)
}

// oneCoreSection: the pipeline-signed flood with libcrypto pinned to one
// core (taskset, its signers one worker, GOMAXPROCS 1 + 2 as `crowd flood`
// under `taskset -c 0` would set it), the null sink pinned to another,
// against libcrypto signing alone on that core, samples alternating with
// the trials.
func (b *bench) oneCoreSection(ctx context.Context) {
	const name = "flood, pipeline signing with libcrypto pinned to 1 core (taskset), null sink on another"
	const target = "≥ 0.6 × libcrypto signing on 1 core"
	fail := func(err error) { b.rep.fail(rowPipelineOneCore, name, target, err) }
	if runtime.NumCPU() < 2 {
		fail(errors.New("needs 2 cores: one for the flood, one for the sink"))
		return
	}
	lcWorld, err := b.libcryptoWorld()
	if err != nil {
		fail(err)
		return
	}
	side, err := newBackendFlood(signing.BackendLibcrypto, lcWorld, b.sinkAddr)
	if err != nil {
		fail(err)
		return
	}
	all := fmt.Sprintf("0-%d", runtime.NumCPU()-1)
	if err := taskset("0", os.Getpid()); err != nil {
		fail(err)
		return
	}
	defer taskset(all, os.Getpid())
	if err := taskset("1", b.sink.cmd.Process.Pid); err != nil {
		fail(err)
		return
	}
	defer taskset(all, b.sink.cmd.Process.Pid)
	signer := newSigner()
	sampleDur := max(b.cfg.Measure/4, 100*time.Millisecond)
	sample := func() float64 {
		b.sinkQuiet(ctx) // as the backends section's samples
		runtime.GC()
		c := signCeiling(ctx, signer, side.draft, sampleDur, 1)
		side.ceilings = append(side.ceilings, c)
		b.logf("  libcrypto signing alone on core 0: %7.0f/s", c)
		return c
	}
	last := sample()
	s := newSearch("1core", 0.9*side.ceilings[0], 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
	for rate, ok := s.next(); ok && ctx.Err() == nil; rate, ok = s.next() {
		o := b.pipelineTrial(ctx, "1core", side.gen, signer, rate, 1, 1+2, nil)
		before := last
		last = sample()
		s.report(b.markSlow(o, before, last, side.ceilings))
	}
	runtime.GOMAXPROCS(runtime.NumCPU())
	ceil := median(append([]float64(nil), side.ceilings...))
	best, bt := s.best()
	b.rep.Details[rowPipelineOneCore] = map[string]any{"trials": s.trials, "ceilings": side.ceilings}
	row := Row{Key: rowPipelineOneCore, Name: name, Value: best, Unit: "/s", Ceiling: ceil,
		CeilingName: fmt.Sprintf("libcrypto SignPost alone on 1 goroutine on the same core, median of %d", len(side.ceilings)), Target: target}
	// One CPU refuses the dispatcher a real-time policy, and there the
	// pipeline's signer pauses while the dispatcher signs in its waits.
	rule := fmt.Sprintf("1 signer (paused: on one CPU the dispatcher signs in its waits), %s, GOMAXPROCS 3; sustained: achieved ≥ 0.99 × offered, no drops, signers kept up, %s, p99 latency ≤ %v",
		b.signersRule(), b.latenessRule(), b.cfg.LatencyBound)
	if bt != nil {
		row.Ratio = best / ceil
		row.Met = met(row.Ratio >= 0.6)
		row.Notes = fmt.Sprintf("p99 lateness %.2f ms at %s, the dispatcher under the %s policy", bt.LatenessP99MS, formatValue(best, "/s"), dispatcherPolicy(bt))
	} else {
		row.Met = met(false)
		row.Notes = "no rate met every bound (" + lastWhy(s.trials) + ")"
	}
	row.Notes += pacedNote(s.trials, best, ceil) + slowNote(s.trials) + "; " + rule
	b.rep.set(row)
}

// taskset pins every thread of process pid to cpus ("0", "1", "0-1"):
// threads made later inherit it.
func taskset(cpus string, pid int) error {
	out, err := exec.Command("taskset", "--all-tasks", "--cpu-list", "--pid", cpus, strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset -a -c -p %s %d: %v: %s", cpus, pid, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inboxBackendsSection: the inbox verifying with libcrypto, a bare handler
// verifying with libcrypto, and the inbox verifying with Go (today's), fed
// the same presigned deliveries by the same client, in turn.
func (b *bench) inboxBackendsSection(ctx context.Context) {
	const (
		nameLC = "inbox with libcrypto: verified deliveries/s"
		nameGo = "inbox: libcrypto vs Go backend (same run)"
	)
	// The inbox's gain from libcrypto is a reference, not a target: the
	// HTTP server, the loopback and the client cost the same whatever
	// verifies, so the bare handlers' own ratio (in the notes) bounds it.
	const inboxVsGoReference = "reference (the bare handlers' ratio bounds it)"
	fail := func(err error) {
		b.rep.fail(rowInboxLibcrypto, nameLC, "≥ 0.8 × bare, same backend", err)
		b.rep.fail(rowInboxLibcryptoVsGo, nameGo, inboxVsGoReference, err)
	}
	lcWorld, err := b.libcryptoWorld()
	if err != nil {
		fail(err)
		return
	}
	gen, err := newGenerator(lcWorld, b.cfg.Mix, sharedInboxTarget)
	if err != nil {
		fail(err)
		return
	}
	pool, _, err := presignPool(ctx, gen, b.cfg.Pool)
	if err != nil {
		fail(err)
		return
	}
	lcAddr, stopLC, err := b.startInbox(lcWorld, "inbox-libcrypto")
	if err != nil {
		fail(err)
		return
	}
	defer stopLC()
	goAddr, stopGo, err := b.startInbox(b.world, "inbox-go")
	if err != nil {
		fail(err)
		return
	}
	defer stopGo()
	bareAddr, stopBare, err := startBareVerifier(lcWorld, lcWorld.Backend())
	if err != nil {
		fail(err)
		return
	}
	defer stopBare()
	// The bare handler verifying with Go: bare libcrypto ÷ bare Go is the most any inbox gains
	// from the faster verification alone, whatever else it costs.
	bareGoAddr, stopBareGo, err := startBareVerifier(lcWorld, signing.GoBackend())
	if err != nil {
		fail(err)
		return
	}
	defer stopBareGo()
	rp := &replay{name: "inbox-backends", n: len(pool), want: 202,
		mk:  func(i int64) *http.Request { return postRequest(pool[i%int64(len(pool))]) },
		raw: func(i int) []byte { return rawPost(pool[i]) }}
	names := []string{"inbox libcrypto", "bare libcrypto", "inbox go", "bare go"}
	meds, all, err := b.closedSides(ctx, names, []string{lcAddr, bareAddr, goAddr, bareGoAddr}, rp)
	if err != nil {
		fail(err)
		return
	}
	b.rep.Details["inbox_backends"] = all
	how := fmt.Sprintf("%d presigned Creates/Likes (%s) to the shared inboxes, %s, median of %d rounds taking the four servers in turn, the order reversed every other round%s",
		len(pool), b.cfg.Mix, b.clientNote(all), b.cfg.Rounds, badNote(all))
	lc := Row{Key: rowInboxLibcrypto, Name: nameLC, Value: meds[0], Unit: "/s", Ceiling: meds[1],
		CeilingName: "bare net/http handler: read body + signing.Verifier with libcrypto, keys in memory", Target: "≥ 0.8 × bare, same backend", Notes: how}
	vs := Row{Key: rowInboxLibcryptoVsGo, Name: nameGo, Value: meds[0], Unit: "/s", Ceiling: meds[2],
		CeilingName: "the same inbox verifying with the Go backend (today's)", Target: inboxVsGoReference, Notes: how}
	if meds[3] > 0 {
		vs.Notes = fmt.Sprintf("the bare handler: libcrypto %s, Go %s, so %.2f × is the most a faster verification alone gives any inbox here; %s",
			formatValue(meds[1], "/s"), formatValue(meds[3], "/s"), meds[1]/meds[3], how)
	}
	if meds[1] > 0 && meds[2] > 0 {
		lc.Ratio, vs.Ratio = meds[0]/meds[1], meds[0]/meds[2]
	}
	lc.Met = met(lc.Ratio >= 0.8 && !anyBad(all))
	lc.Notes += "; " + b.profileInboxAndBare(ctx, lcAddr, bareAddr, rp)
	b.rep.set(lc)
	b.rep.set(vs)
}

// profileInboxAndBare measures the libcrypto inbox and the bare handler
// once more each, under a CPU profile kept in the state directory, and
// says what a request costs each of them by part: what the inbox does
// beyond the bare handler, shown rather than argued.
func (b *bench) profileInboxAndBare(ctx context.Context, inboxAddr, bareAddr string, rp *replay) string {
	var says []string
	costs := map[string]partCosts{}
	defer func() { b.rep.Details["inbox_libcrypto_profile"] = costs }()
	for _, side := range []struct{ name, addr string }{{"inbox-libcrypto", inboxAddr}, {"bare-libcrypto", bareAddr}} {
		path := filepath.Join(b.cfg.State, "profiles", side.name+".pprof")
		pc, r, err := profiled(ctx, path, deliveryParts(), b.closedSide(b.wrk, side.addr, b.cfg.Conc, rp))
		if err != nil {
			says = append(says, fmt.Sprintf("%s CPU profile: not read (%v)", side.name, err))
			continue
		}
		costs[side.name] = pc
		b.logf("  %s, profiled: %s; %s", side.name, formatValue(r.Rate, "/s"), pc)
		says = append(says, fmt.Sprintf("%s CPU by part from its profile (%s, %s): %s", side.name, path, formatValue(r.Rate, "/s"), pc))
	}
	return strings.Join(says, "; ")
}

// opensslSpeeds are `openssl speed rsa2048`'s sign and verify rates, on 1
// process and on one per core: the machine's ceilings as OpenSSL itself
// measures them.
type opensslSpeeds struct {
	Sign, Verify map[int]float64 // by processes
	Err          string          `json:",omitempty"`
}

func (o opensslSpeeds) String() string {
	if o.Err != "" {
		return "openssl speed: " + o.Err
	}
	var parts []string
	for _, n := range []int{1, runtime.NumCPU()} {
		parts = append(parts, fmt.Sprintf("openssl speed rsa2048 on %d process(es): sign %s, verify %s", n, formatValue(o.Sign[n], "/s"), formatValue(o.Verify[n], "/s")))
		if runtime.NumCPU() == 1 {
			break
		}
	}
	return strings.Join(parts, "; ")
}

// opensslSpeeds runs openssl speed -seconds S rsa2048 on 1 process and
// with -multi NumCPU (S: -measure in whole seconds).
func (b *bench) opensslSpeeds(ctx context.Context) opensslSpeeds {
	o := opensslSpeeds{Sign: map[int]float64{}, Verify: map[int]float64{}}
	secs := strconv.Itoa(wrkSeconds(b.cfg.Measure))
	for _, n := range []int{1, runtime.NumCPU()} {
		args := []string{"speed", "-seconds", secs}
		if n > 1 {
			args = append(args, "-multi", strconv.Itoa(n))
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		out, err := exec.CommandContext(cctx, "openssl", append(args, "rsa2048")...).Output()
		cancel()
		if err != nil {
			o.Err = err.Error()
			return o
		}
		s, v, err := parseOpensslSpeed(string(out))
		if err != nil {
			o.Err = err.Error()
			return o
		}
		o.Sign[n], o.Verify[n] = s, v
		b.logf("  openssl speed rsa2048 on %d process(es): sign %.0f/s, verify %.0f/s", n, s, v)
	}
	return o
}

// parseOpensslSpeed reads the sign and verify rates of out, from its
// result line for RSA-2048: "rsa 2048 bits 0.000261s 0.000016s   3836.4
// 61300.0" (sign s, verify s, sign/s, verify/s); with -multi the rates are
// the processes' sum.
func parseOpensslSpeed(out string) (sign, verify float64, err error) {
	line := regexp.MustCompile(`(?m)^rsa\s+2048 bits\s+\S+\s+\S+\s+([0-9.]+)\s+([0-9.]+)\s*$`)
	m := line.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return 0, 0, fmt.Errorf("no 'rsa 2048 bits' line in openssl speed's output: %q", lastLines(out, 3))
	}
	last := m[len(m)-1]
	sign, err1 := strconv.ParseFloat(last[1], 64)
	verify, err2 := strconv.ParseFloat(last[2], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	return sign, verify, nil
}

// dispatcherPolicy is the scheduling policy o's dispatcher ran under
// ("deadline", "fifo", "other"; empty above 10 000/s), or sharedPolicy
// where several shared the schedule, without why a real-time one was
// refused, which the trials in the JSON keep.
func dispatcherPolicy(o *outcome) string {
	if o.DispatcherThreads > 0 {
		return sharedPolicy
	}
	policy, _, _ := strings.Cut(o.Dispatcher, " ")
	return policy
}

// sharedPolicy is dispatcherPolicy's word for dispatchers that shared the
// schedule, each on a thread under the policy the crowd runs under.
const sharedPolicy = "shared"
