package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/traffic"
)

// config is the bench's command line. Every measurement is bounded by it,
// in count and in time.
type config struct {
	// Trial is the length of one trial of a maximum-rate search, its
	// warm-up included; Warmup is the discarded start of each trial.
	Trial, Warmup time.Duration
	// Steps is how many bisection steps a search makes once it has a
	// passing and a failing rate; Bracket bounds the trials spent finding
	// them.
	Steps, Bracket int
	// Retries is how many times a failed trial is tried again before it
	// counts as a failure.
	Retries int
	// Measure is the length of one closed-loop throughput measurement
	// (inbox, documents), after a warm-up of a tenth of it.
	Measure time.Duration
	// Rounds is how many times each pair is measured, the order reversed
	// every other round (A B, B A, …: roundOrder); each side reports its
	// median. An even count leaves a steady drift of the host's speed
	// out of the ratio of the medians.
	Rounds int
	// LatencyBound is the "bounded latency" of a sustained rate: the p99
	// latency from the intended send time must not exceed it.
	LatencyBound time.Duration
	// LatenessBound is the pipeline's extra condition: p99 lateness (the
	// generator's own delay) at most this.
	LatenessBound time.Duration
	// CostPairs is how many pairs of trials a row of a flood with
	// something on (live metrics, --results) runs beside the same without,
	// after their searches, to compare their CPU a send (costRow); 0
	// judges those rows on the searched maxima alone.
	CostPairs int
	// LatenessTrials is how many trials of a pipeline search's rate are
	// pooled to judge it (their p99 lateness taken over all their sends).
	LatenessTrials int
	// SignerNice is the pipeline signers' nice value (traffic.PipelineOptions.Nice,
	// `crowd flood --signer-nice`) in every pipeline row: by default
	// auto, the shipped default, which signs at 0 beside the real-time
	// dispatcher the two-core rows get where the bench may raise it (the
	// notes name the policy) and at 19 beside the one-core row's, which
	// cannot be real-time on one CPU. At 0 the two-core rows sustained
	// more than at 19 (`-only backends`, alternated, two runs each: 0.53
	// and 0.53 of libcrypto signing alone against 0.48 and 0.42); at 19
	// the one-core row did (`-only onecore`: 0.69 against 0.35, whose
	// signers delayed the normal-policy dispatcher past the lateness
	// bound).
	SignerNice int
	// DispatcherPriority is the flood dispatcher's OS priority
	// (flood.Plan.Priority, `crowd flood --dispatcher-priority`) in every
	// flood row; the priority section sets each side's itself.
	DispatcherPriority flood.Priority
	// Conc is the closed-loop clients' concurrency.
	Conc int
	// Client is the closed-loop client: clientAuto (wrk when on PATH),
	// clientGo or clientWrk.
	Client string
	// FloodClient is the HTTP client of the flood rows (crowd flood
	// --client); the per-client rows use each client in turn.
	FloodClient flood.Client
	// Pool is how many presigned requests are replayed (round robin) by
	// the presigned flood, vegeta and the inbox clients.
	Pool int
	// StartRate is the first rate the presigned-vs-vegeta search tries.
	StartRate float64
	// Mix is the activity mix of every generated request.
	Mix string
	// Origins and Actors shape the world whose actors sign; Scale is the
	// origins factor of the "origins ×N" rows.
	Origins, Actors, Scale int
	// LargeOrigins and LargePool shape the large world of the scale
	// section: its origins (× 100 actors) and its key pool.
	LargeOrigins, LargePool int
	// State holds the keys (generated once, reused by later runs).
	State string
	// Crowd is a prebuilt crowd binary for the start-up rows; "" builds
	// one with `go build`.
	Crowd string
	// CPURates are the two rates of the "rate ×2" row; CPUFloodLength is
	// each of its floods' length (-cpu-seconds).
	CPURates       [2]float64
	CPUFloodLength time.Duration
	// Long adds a flood of LongFloodLength (-long-seconds) at MemRate for
	// the memory row; without it the row reports the CPURates[1] floods'
	// peak.
	Long            bool
	LongFloodLength time.Duration
	MemRate         float64
	// Only names the sections to run (pipeline, presigned, inbox,
	// documents, cpu, startup, backends, onecore, inbox-backends); empty
	// runs them all.
	Only []string
	// CPUProfile, when set, is where a CPU profile of the bench's own
	// process (the in-process servers, the Go client, the floods run in
	// it) is written.
	CPUProfile string
	// JSON is where the JSON report goes ("" none, "-" stdout: then the
	// table goes to stderr).
	JSON string

	// sinkPID is the null sink's process once it runs (no flag): a flood
	// trial reads its CPU.
	sinkPID int
}

// defaultConfig is what `go run ./bench` runs: about half an hour on two
// cores (plus key generation the first time).
func defaultConfig() config {
	return config{
		Trial: 3 * time.Second, Warmup: 500 * time.Millisecond, Steps: 4, Bracket: 4, Retries: 1,
		Measure: 2 * time.Second, Rounds: 4,
		LatencyBound: 25 * time.Millisecond, LatenessBound: time.Millisecond, LatenessTrials: 3, CostPairs: 4, SignerNice: traffic.NiceAuto, DispatcherPriority: flood.DefaultPriority,
		Conc: 32, Client: clientAuto, FloodClient: flood.DefaultClient, Pool: 2048, StartRate: 10000, Mix: "create=6,like=3",
		Origins: 20, Actors: 10, Scale: 10, LargeOrigins: 10000, LargePool: 1024,
		State:    filepath.Join(os.TempDir(), "crowd-bench-state"),
		CPURates: [2]float64{500, 1000}, CPUFloodLength: 4 * time.Second,
		LongFloodLength: 60 * time.Second, MemRate: 1000,
	}
}

// parseFlags reads the command line into a config.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := defaultConfig()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./bench [flags]\n\nMeasures the crowd beside this machine's ceilings and prints a Markdown table.\n\n")
		fs.PrintDefaults()
	}
	fs.DurationVar(&c.Trial, "trial", c.Trial, "length of one trial of a maximum-rate search, warm-up included")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "discarded start of each search trial")
	fs.IntVar(&c.Steps, "steps", c.Steps, "bisection steps of each maximum-rate search")
	fs.IntVar(&c.Bracket, "bracket", c.Bracket, "most trials a search spends growing or shrinking its first rate")
	fs.IntVar(&c.Retries, "retries", c.Retries, "tries again of a failed trial before it counts (another tenant can fail a trial, none can pass one)")
	fs.DurationVar(&c.Measure, "measure", c.Measure, "length of one closed-loop throughput measurement (inbox, documents)")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds of each pair, the order reversed every other round (medians are reported)")
	fs.DurationVar(&c.LatencyBound, "latency-bound", c.LatencyBound, "a sustained rate's p99 latency from the intended send time is at most this")
	fs.DurationVar(&c.LatenessBound, "lateness-bound", c.LatenessBound, "the pipeline's p99 lateness is at most this")
	fs.IntVar(&c.LatenessTrials, "lateness-trials", c.LatenessTrials, "trials of each pipeline rate pooled to judge its p99 lateness")
	fs.IntVar(&c.CostPairs, "cost-pairs", c.CostPairs, "pairs of trials (each pair's order the other's) comparing the CPU a send of a flood with live metrics or --results and without, at 0.7 × the lower searched maximum, a failed one tried again -retries times; 0: judge those rows on the searched maxima")
	fs.Func("signer-nice", "nice value of the pipeline's signer threads, as crowd flood --signer-nice: auto (the default: 0 beside a real-time dispatcher, 19 beside any other), or 0 (unchanged) to 19", func(v string) (err error) {
		c.SignerNice, err = traffic.ParseSignerNice(v)
		return err
	})
	priority := string(c.DispatcherPriority)
	fs.StringVar(&priority, "dispatcher-priority", priority, "OS priority of the flood rows' dispatcher thread, as crowd flood --dispatcher-priority: auto, realtime or normal (the priority section runs realtime and normal)")
	fs.IntVar(&c.Conc, "conc", c.Conc, "concurrency of the closed-loop clients")
	fs.StringVar(&c.Client, "client", c.Client, "closed-loop client of the inbox and document rows: auto (wrk when on PATH, else go), go (in-process) or wrk (a separate process)")
	floodClient := string(c.FloodClient)
	fs.StringVar(&floodClient, "flood-client", floodClient, "HTTP client of the flood rows, as crowd flood --client: fast or nethttp (the per-client rows use both)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", c.CPUProfile, "write a CPU profile of the bench's process (its in-process servers included) to this file")
	fs.IntVar(&c.Pool, "pool", c.Pool, "presigned requests replayed round robin")
	fs.Float64Var(&c.StartRate, "start-rate", c.StartRate, "first rate of the presigned-vs-vegeta search")
	fs.StringVar(&c.Mix, "mix", c.Mix, "activity mix of the generated requests")
	fs.IntVar(&c.Origins, "origins", c.Origins, "origins of the world that signs")
	fs.IntVar(&c.Actors, "actors", c.Actors, "actors per origin")
	fs.IntVar(&c.Scale, "scale", c.Scale, "origins factor of the 'origins ×N' rows")
	fs.IntVar(&c.LargeOrigins, "large-origins", c.LargeOrigins, "origins of the scale section's large world (each with 100 actors)")
	fs.IntVar(&c.LargePool, "large-pool", c.LargePool, "RSA keys the scale section's worlds share (made once under -state)")
	fs.StringVar(&c.State, "state", c.State, "directory for the keys (generated once, reused by later runs)")
	fs.StringVar(&c.Crowd, "crowd", c.Crowd, "prebuilt crowd binary for the start-up rows (default: go build it)")
	cpuRates := fmt.Sprintf("%g,%g", c.CPURates[0], c.CPURates[1])
	fs.StringVar(&cpuRates, "cpu-rates", cpuRates, "the two rates of the 'rate ×2' row, low,high")
	fs.DurationVar(&c.CPUFloodLength, "cpu-seconds", c.CPUFloodLength, "length of each flood of the 'rate ×2' row")
	fs.BoolVar(&c.Long, "long", c.Long, "also run the long flood for the memory row (-long-seconds at -mem-rate)")
	fs.DurationVar(&c.LongFloodLength, "long-seconds", c.LongFloodLength, "length of the -long flood")
	fs.Float64Var(&c.MemRate, "mem-rate", c.MemRate, "rate of the -long flood")
	fs.StringVar(&c.JSON, "json", c.JSON, "also write the report as JSON to this file ('-': stdout, the table then goes to stderr)")
	only := ""
	fs.StringVar(&only, "only", "", "run only these sections, comma-separated: "+strings.Join(sectionNames(), ","))
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, name := range strings.Split(only, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !slices.Contains(sectionNames(), name) {
			return c, fmt.Errorf("-only %q: no section %q (want %s)", only, name, strings.Join(sectionNames(), ", "))
		}
		c.Only = append(c.Only, name)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if c.FloodClient, err = flood.ParseClient(floodClient); err != nil {
		return c, fmt.Errorf("-flood-client: %w", err)
	}
	if c.DispatcherPriority, err = flood.ParsePriority(priority); err != nil {
		return c, fmt.Errorf("-dispatcher-priority: %w", err)
	}
	lo, hi, ok := strings.Cut(cpuRates, ",")
	var err1, err2 error
	c.CPURates[0], err1 = strconv.ParseFloat(strings.TrimSpace(lo), 64)
	c.CPURates[1], err2 = strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if !ok || err1 != nil || err2 != nil || !positive(c.CPURates[0]) || !positive(c.CPURates[1]) {
		return c, fmt.Errorf("-cpu-rates %q: want two rates low,high", cpuRates)
	}
	return c, c.check()
}

// positive reports whether x is a finite number > 0 (not NaN).
func positive(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// check rejects a configuration that could not run or would not end.
func (c config) check() error {
	switch {
	case c.Trial <= 0 || c.Warmup < 0 || c.Warmup >= c.Trial:
		return errors.New("-trial must be > 0 and longer than -warmup")
	case c.Steps < 0 || c.Bracket < 1 || c.Retries < 0 || c.Retries > 5:
		return errors.New("-steps must be >= 0, -bracket >= 1 and -retries 0 to 5")
	case c.Measure <= 0 || c.Rounds < 1:
		return errors.New("-measure must be > 0 and -rounds >= 1")
	case c.LatenessTrials < 1:
		return fmt.Errorf("-lateness-trials %d: want at least 1", c.LatenessTrials)
	case c.CostPairs < 0 || c.CostPairs > 10:
		return fmt.Errorf("-cost-pairs %d: want 0 to 10", c.CostPairs)
	case c.LatencyBound <= 0 || c.LatenessBound <= 0:
		return errors.New("-latency-bound and -lateness-bound must be > 0")
	case c.Conc < 1 || c.Pool < 1 || c.StartRate < 1:
		return errors.New("-conc, -pool and -start-rate must be >= 1")
	case c.Client != clientAuto && c.Client != clientGo && c.Client != clientWrk:
		return fmt.Errorf("-client %q: want auto, go or wrk", c.Client)
	case c.Origins < 1 || c.Actors < 1 || c.Scale < 1 || c.Origins*c.Scale > 10000:
		return errors.New("-origins, -actors and -scale must be >= 1, and -origins × -scale <= 10000")
	case c.LargeOrigins <= scaleSmall || c.LargeOrigins > 10000 || c.LargePool < 1:
		return fmt.Errorf("-large-origins must be from %d to 10000 and -large-pool >= 1", scaleSmall+1)
	case c.State == "":
		return errors.New("-state must name a directory")
	case c.CPUFloodLength <= 0 || c.LongFloodLength <= 0 || !positive(c.MemRate) || !positive(c.StartRate):
		return errors.New("-cpu-seconds, -long-seconds and -mem-rate must be > 0")
	}
	return nil
}
