package main

import (
	"errors"
	"fmt"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/loadrun"
)

// floodFlags are the flags of `crowd flood`: most parse straight into
// cfg's typed fields, once, as they are set (a bad value names its flag).
type floodFlags struct {
	world worldFlags // --origins, --actors, --domain, --state, --shard
	admin adminFlags // --admin
	vocab vocabFlags // --reply-depth, --mentions, --hashtags, --media-count, --media-size

	cfg       loadrun.Config    // --expect and --stop-when too, read as gates when set (gatesValue)
	fetchback fetchbackFlags    // what the SUT fetches back (fetchback.go)
	posts     personaPostsFlags // crowd flood only: posts for personas without (fetchback.go)
	scn       scenarioFlags     // --scenario, --tamper, --tamper-share, --origin-zipf, --target-posts
}

// gatesValue is a repeatable gate flag (--expect, --stop-when): each value
// is read as a gate when it is set, so a bad one is refused where it was
// given (the command line, CROWD_EXPECT, a scenario file), naming the flag.
type gatesValue struct{ gates *[]record.Gate }

// String lists the gates as a list flag does; none is "", so that help
// shows no default.
func (v gatesValue) String() string {
	if len(*v.gates) == 0 {
		return ""
	}
	return "[" + strings.Join(v.GetSlice(), ",") + "]"
}

// Set adds the gate s.
func (v gatesValue) Set(s string) error {
	g, err := record.ParseGate(s)
	if err != nil {
		return err
	}
	*v.gates = append(*v.gates, g)
	return nil
}

func (gatesValue) Type() string { return "gate" }

// Replace sets the gates to items (pflag.SliceValue: a comma-separated
// environment variable); on an error they are left as they were.
func (v gatesValue) Replace(items []string) error {
	gates, err := record.ParseGates(items)
	if err != nil {
		return err
	}
	*v.gates = gates
	return nil
}

// Append adds the gate s (pflag.SliceValue).
func (v gatesValue) Append(s string) error { return v.Set(s) }

// GetSlice is the gates' expressions (pflag.SliceValue).
func (v gatesValue) GetSlice() []string {
	exprs := make([]string, len(*v.gates))
	for i, g := range *v.gates {
		exprs[i] = g.Expr
	}
	return exprs
}

func newFloodCmd(g *globalOptions) *cobra.Command {
	f := &floodFlags{}
	f.scn.fresh = func() *cobra.Command { return newFloodCmd(g) }
	cmd := &cobra.Command{
		Use:   "flood",
		Short: "Flood a server under test with signed Creates, Likes and Follows from the crowd, on an open-loop schedule, and report honestly",
		Long: `Flood personas on a server under test (SUT) with signed activities from the crowd's actors:
Create(Note)s that mention them, Likes of their posts, Follows of them. Sends follow an absolute
schedule (start + n/rate, or Poisson arrivals); a send with no free slot is dropped and counted;
latency is measured from the intended send time.

Targets: --persona acct:name@host (repeatable), --personas 'load%d@sut.test' --count N
(load0 … load<N-1>), or --personas-file. Each is looked up (WebFinger, a signed actor fetch,
its outbox for posts to like). With no persona named, the crowd floods its own actors, whose
inboxes verify every signature: 'crowd flood --standalone --seconds=10' shows the whole loop.

The flood drives the 'crowd serve' whose admin API answers at --admin (it borrows its keys from
--state, so the notes it sends stay dereferenceable and Accepts of its Follows reach the
crowd's follow graph), or runs the world in this process with --standalone.

A ladder: --rate=100,300,600 or --ramp=100:1000:100, each rung --step long after a discarded
--warmup, stopping at the shoulder (--stop-when 'p95>2s').

Gates (--expect, --stop-when): METRIC OP VALUE, METRIC a latency quantile (p95, p99.9, max;
service.p99, lateness.p99, dispatch.p99; per type: Create.p95), a count or share (errors,
dropped, timeout, status429, status5xx, retry_after …; forged_accepted, forged_effective with
--tamper; ambient_weather, the origins that met weather the run did not set, a count), or a
rate (rate, throughput, 'rate>=0.95*offered'); docs/flooding.md says how each counts.

Output: a live line each second on stderr; the final table on stdout; a JSON record and a
Markdown row in --out. Exit status: 0 when every --expect holds, 1 when one is missed (or the
run failed), 2 for a usage error, 130 when interrupted (during the run: its partial record is
written; before it, as while a first start makes keys: the keys made are kept).
Targets that resolve to public addresses are refused unless --allow-public-target.
Every flag can also be set as CROWD_<FLAG>.`,
		Args: noArgsHint("name the SUT's accounts with --personas (e.g. --personas 'load%d@sut.test' --count 3)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLoad(cmd, g, f, nil)
		},
	}
	f.register(cmd)
	f.posts.register(cmd)
	return cmd
}

// register adds the flood's flags to cmd (crowd flood, and crowd run,
// which floods with the same flags).
func (f *floodFlags) register(cmd *cobra.Command) {
	f.world.register(cmd)
	f.admin.register(cmd)
	f.vocab.register(cmd)
	fl := cmd.Flags()
	def := loadrun.Defaults()
	// The world's shape is the running crowd's unless the world runs here.
	for _, name := range []string{"origins", "actors", "domain", "shard", "key-pool"} {
		fl.Lookup(name).Usage = "with --standalone: " + fl.Lookup(name).Usage
	}
	fl.Lookup("state").Usage = "directory of the crowd's keys (attached: the running crowd's --state, read only), CA, follow graph and activity log (--standalone: default ./" + loadrun.StandaloneState + ")"
	c := &f.cfg
	*c = def
	fl.Var(loadrun.RateValue(c), "rate", "sends per second; a comma list (100,300,600) runs a ladder")
	fl.Var(loadrun.RampValue(c), "ramp", "a ladder from:to:step of rates, e.g. 100:1000:100 (instead of --rate)")
	fl.DurationVar(&c.Step, "step", def.Step, "measured length of each ladder rung")
	fl.DurationVar(&c.Warmup, "warmup", 0, "start of the run (of each rung) that is sent but not measured")
	fl.Var(gatesValue{&f.cfg.StopWhen}, "stop-when", "stop a ladder after the rung where this holds, e.g. 'p95>2s' (repeatable)")
	fl.Float64Var(&c.Seconds, "seconds", def.Seconds, "measured length of the run, after --warmup (0 with --max-sends: bounded by sends only)")
	fl.Int64Var(&c.MaxSends, "max-sends", 0, "stop after this many sends, warm-up included (0 = no limit)")
	fl.Var(loadrun.ArrivalsValue(&c.Arrivals), "arrivals", "arrival process: constant (start + n/rate) or poisson")
	fl.IntVar(&c.MaxInflight, "max-inflight", def.MaxInflight, "concurrent sends; a send due with all of them busy is dropped and counted")
	fl.DurationVar(&c.Timeout, "timeout", def.Timeout, "bound on each send (and each discovery request)")
	fl.Var(loadrun.ClientValue(&c.Client), "client", "HTTP/1.1 client of the sends: fast (the request's bytes as signed, written by the dispatcher itself on a resting connection or else by the sending goroutine, which reads the answer unless the dispatcher can read it whole) or nethttp (Go's net/http transport)")
	fl.Var(loadrun.SigningValue(&c.Signing), "signing", "when requests are signed: pipeline (background signers), presign (all before the run) or jit (in the dispatcher)")
	fl.Var(loadrun.SignerNiceValue(&c.SignerNice), "signer-nice", "with --signing=pipeline: OS nice value of the signer threads: auto, or 0 (the crowd's own priority) to 19 (the lowest, also under SCHED_IDLE: any thread that wakes takes the core from them). auto signs at 0 while the dispatcher runs under a real-time policy, which takes the core from a signer when a send is due, and at 19 beside any other (--dispatcher-priority normal, auto above 5 000/s, no permission for real-time, a crowd pinned to one CPU, or above 10 000/s), where a signer's time slice would make sends late; set 0 for signers that compete with a SUT on the same cores, which a lowered signer leaves only what the SUT does not want")
	fl.Var(loadrun.PriorityValue(&c.DispatcherPriority), "dispatcher-priority", "OS priority of the thread that times the sends, up to 10 000/s: auto, realtime or normal. realtime: SCHED_DEADLINE, at most 90 % of a CPU, where the crowd may (CAP_SYS_NICE, as root has); else SCHED_FIFO at the lowest real-time priority, which an RLIMIT_RTPRIO of 1 or more also allows; else the normal policy, and the record's parts[].dispatcher says why. Realtime keeps the kernel from leaving the woken dispatcher waiting behind other threads, which makes sends late, but it takes the CPU from every thread it shares one with, a SUT's too, each time it wakes: above 5 000/s that made a SUT on the same cores answer later by more than it made sends earlier. auto is realtime up to 5 000/s and normal above")
	fl.Var(loadrun.MixValue(&c.Mix), "mix", "weighted mix of activity types")
	fl.Float64Var(&c.Zipf, "zipf", 0, "draw senders from a Zipf distribution with this exponent (> 1); 0 = uniform")
	fl.Uint64Var(&c.Seed, "seed", 0, "seed of the random draws (types, senders, personas, Poisson arrivals); default a fresh one each run, printed and recorded so --seed replays it")
	fl.IntVar(&c.NoteBytes, "note-bytes", def.NoteBytes, "approximate length of each note's text")
	fl.StringArrayVar(&c.Persona, "persona", nil, "a persona to flood, acct:name@host (repeatable)")
	fl.StringVar(&c.Personas, "personas", "", "persona pattern with one %d, e.g. 'load%d@sut.test', numbered 0 … --count-1")
	fl.IntVar(&c.Count, "count", 0, "how many personas --personas names")
	fl.StringVar(&c.PersonasFile, "personas-file", "", "file naming the personas, one name@host a line")
	fl.Var(loadrun.InboxValue(&c.Inbox), "inbox", "where to post: auto (the shared inbox, else the persona's own), shared or personal")
	fl.Var(gatesValue{&f.cfg.Expect}, "expect", "a gate, e.g. 'p95<100ms', 'errors<1%', 'rate>=0.95*offered' (repeatable); exit 1 when one is missed")
	fl.StringVar(&c.Out, "out", def.Out, "directory of the run records and runs.md")
	fl.StringVar(&c.Label, "label", "", "name of the run, in its record's file name and row")
	fl.StringVar(&c.Results, "results", "", "write every send as a line of NDJSON to this file (.gz gzip, .zst zstd; - stdout, the table then on stderr); see docs/results.md")
	fl.BoolVar(&c.AllowPublic, "allow-public-target", false, "allow targets that resolve to public addresses (a flood is a denial of service: only your own servers)")
	fl.BoolVar(&c.Standalone, "standalone", false, "run the crowd's world in this process instead of driving a running 'crowd serve'")
	fl.StringVar(&c.HTTPS, "https", "127.0.0.1:0", "with --standalone: HTTPS listen address of the in-process crowd")
	fl.StringVar(&c.HTTP, "http", "", "with --standalone: HTTP listen address (empty disables)")
	fl.StringVar(&c.DNS, "dns", "", "with --standalone: DNS listen address (empty disables)")
	fl.StringVar(&c.CrowdHTTPS, "crowd-https", "", "attached: host:port where the running crowd's HTTPS listener answers from here, when not where its admin API says (its own origins are reached there, not through a resolver)")
	fl.Var(loadrun.AlgorithmValue(&c.Algorithm), "algorithm", "signature algorithm label: rsa-sha256 or hs2019")
	fl.Int64Var(&c.PresignMaxBytes, "presign-max-bytes", def.PresignMaxBytes, "with --signing=presign: refuse a run whose presigned requests would take more memory")
	fl.Var(loadrun.SignatureValue(&c.Signature), "signature", "HTTP signature scheme: cavage (draft-cavage-12), rfc9421 (RFC 9421 with Content-Digest), or both (RFC 9421 first, cavage again on a 4xx, the scheme that worked remembered per host, as Fedify >= 1.6 sends)")
	fl.Var(loadrun.WeatherAtValue(&c.Weather), "weather-at", "put a weather spec in force on the crowd's origins at an offset from the flood's start, e.g. '+60s down=@followers', '+10m clear' (repeatable; offsets increasing; the weather before the run is put back at its end)")
	fl.DurationVar(&c.Weather.Repeat, "weather-repeat", 0, "start the --weather-at timeline over every this long (flapping); 0 runs it once")
	f.fetchback.register(cmd)
	f.scn.register(cmd)

	fl.StringVar(&c.Metrics.Addr, "metrics-addr", "", "serve the run's live Prometheus metrics at http://ADDR/metrics (host:port; :port listens on loopback; empty: off)")
	fl.DurationVar(&c.Metrics.Linger, "metrics-linger", 0, "with --metrics-addr: keep serving the metrics this long after the run, so a scraper takes the final values")
}

// config is the flood's command line as a load run's Config: the flags
// parsed into it as they were set, the gates, and what only the command
// line knows (which flags were given, --admin). Each problem names its
// flag; Run validates the rest.
func (f *floodFlags) config(cmd *cobra.Command) (loadrun.Config, error) {
	c := f.cfg
	c.World, c.AdminAddr = f.world.cfg, f.admin.addr
	c.Version, c.UserAgent, c.Stdout, c.Stderr = version, userAgent(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	c.Fetchback, c.PersonaPosts, c.Vocab = f.fetchback.config(), f.posts.config(), loadrun.VocabOptions(f.vocab)
	c.Show = runShow(isTerminal(c.Stderr))
	if c.Results == "-" {
		// stdout is the results' alone, so that they pipe (| jq); a closed
		// pipe is then an error the run reports, not a SIGPIPE that kills it.
		c.ResultsOut, c.Stdout = c.Stdout, c.Stderr
		signal.Ignore(syscall.SIGPIPE)
	}
	var errs []error
	changed := cmd.Flags().Changed
	if changed("rate") && changed("ramp") {
		errs = append(errs, errors.New("--rate and --ramp are exclusive: a ramp is its own list of rates"))
	}
	if changed("seconds") && (c.Ramp || len(c.Rates) > 1) {
		errs = append(errs, errors.New("--seconds does not apply to a ladder: each rung runs --step after --warmup"))
	}
	// Flags that only tune another would do nothing alone; as with
	// --tamper-share, the command line's are refused (an environment's
	// defaults are not the user's mistake).
	if onCommandLine(cmd, "metrics-linger") && c.Metrics.Addr == "" {
		errs = append(errs, errors.New("--metrics-linger keeps the live metrics served after the run: give --metrics-addr too"))
	}
	if onCommandLine(cmd, "forgery-settle") && f.scn.tamper == "" {
		errs = append(errs, errors.New("--forgery-settle is the wait before the forgeries' effects are looked for: give --tamper (or a scenario that forges) too"))
	}
	switch {
	case !onCommandLine(cmd, "step") || c.Ramp || len(c.Rates) > 1:
	case cmd.Name() == "run":
		errs = append(errs, errors.New("--step is a ladder rung's length, and crowd run floods at one rate: give --seconds"))
	default:
		errs = append(errs, errors.New("--step is each ladder rung's length: give a ladder (--rate=a,b,c or --ramp), or --seconds for one rate"))
	}
	for _, o := range []struct {
		flag, kind string
		weight     float64
	}{{"media-count", "media", c.Mix.Media}, {"media-size", "media", c.Mix.Media}, {"reply-depth", "reply", c.Mix.Reply}} {
		if onCommandLine(cmd, o.flag) && o.weight == 0 {
			errs = append(errs, fmt.Errorf("--%s shapes the %s sends: give %s in --mix (or a scenario whose mix has it) too", o.flag, o.kind, o.kind))
		}
	}
	if onCommandLine(cmd, "post-api") && len(c.PersonaPosts.Tokens) == 0 {
		errs = append(errs, errors.New("--post-api is the client API --post-token posts through: give --post-token too"))
	}
	if onCommandLine(cmd, "fetchback-grace") && c.Fetchback.Off {
		errs = append(errs, errors.New("--fetchback-grace is how long the fetch-back count goes on: it needs --fetchback"))
	}
	if c.Standalone {
		// --state and --admin name the running serve's elsewhere, and
		// the image's environment sets them for every command: only the
		// command line gives a standalone flood its own.
		c.AdminAddr = ""
		if onCommandLine(cmd, "admin") && f.admin.addr != defaultAdmin {
			c.AdminAddr = f.admin.addr
		}
		if !onCommandLine(cmd, "state") {
			c.World.StateDir = loadrun.StandaloneState // never a serve's state, running or not
		}
		if c.AdminToken = strings.TrimSpace(f.admin.token); c.AdminToken != "" {
			if err := checkAdminToken(c.AdminToken); err != nil {
				errs = append(errs, err)
			}
		}
	} else {
		var err error
		if c.Admin, err = f.admin.client(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return c, usage(errors.Join(errs...))
	}
	return c, nil
}

// runLoad runs a flood (audience nil) or a crowd run: flags, Config, Run.
func runLoad(cmd *cobra.Command, g *globalOptions, f *floodFlags, audience *loadrun.AudienceConfig) error {
	scenario, help, err := f.scn.apply(cmd)
	if help || err != nil {
		return err
	}
	c, err := f.config(cmd)
	if err != nil {
		return err
	}
	if onCommandLine(cmd, "tamper-share") && f.scn.tamper == "" {
		// The share of forgeries among no forgeries: a flag that would do
		// nothing. Only the command line's: a preset's share stays
		// quietly when --tamper= takes its forgeries away.
		return usage(fmt.Errorf("--tamper-share %g is the share of the sends --tamper forges: give --tamper too", f.scn.tamperShare))
	}
	c.Scenario = f.scn.config(scenario)
	c.Audience = audience
	if err := g.applyCrypto(&c.World); err != nil {
		return err
	}
	log, err := g.logger(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer log.Sync()
	if !c.Standalone {
		for _, name := range []string{"origins", "actors", "domain", "shard", "key-pool", "https", "http", "dns"} {
			if cmd.Flags().Changed(name) {
				log.Warn("--" + name + " applies to --standalone only: the running crowd's world is used")
			}
		}
	} else {
		if cmd.Flags().Changed("crowd-https") {
			log.Warn("--crowd-https applies to an attached flood only: with --standalone the crowd runs in this process")
		}
		for _, name := range []string{"state", "admin"} {
			if cmd.Flags().Changed(name) && !onCommandLine(cmd, name) {
				from := envName(name)
				if f := cmd.Flags().Lookup(name); f.Annotations[fromScenario] != nil {
					from = "the scenario's " + name
				}
				log.Info(from + " names a serve's --" + name + ": a standalone flood keeps its own unless its command line names one")
			}
		}
	}
	c.Log = log
	if logFormat(cmd) == "json" {
		c.Show = jsonShow(c.Show, log)
	}
	return runError(loadrun.Run(cmd.Context(), c))
}

// runError maps a load run's error to the CLI's: a usage mistake exits 2,
// an interruption 130, anything else 1.
func runError(err error) error {
	switch {
	case err == nil, isUsageError(err):
		return err
	case errors.Is(err, loadrun.ErrInterrupted):
		return exitCode{exitInterrupted, err}
	}
	return err
}
