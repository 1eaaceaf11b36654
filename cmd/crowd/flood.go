package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/loadrun"
)

// floodFlags are the flags of `crowd flood`.
type floodFlags struct {
	world worldFlags // --origins, --actors, --domain, --state, --shard
	admin adminFlags // --admin
	vocab vocabFlags // --reply-depth, --mentions, --hashtags, --media-count, --media-size

	rate, ramp             string
	step, warmup           time.Duration
	stopWhen, expect       []string
	seconds                float64
	maxSends               int64
	arrivals               string
	maxInflight            int
	timeout                time.Duration
	signing                string
	signerNice             int
	mix                    string
	zipf                   float64
	seed                   uint64
	noteBytes              int
	persona                []string
	personas, personasFile string
	count                  int
	inbox                  string
	out, label             string
	allowPublic            bool
	standalone             bool
	https, http, dns       string
	crowdHTTPS             string
	algorithm              string
	presignMaxBytes        int64
	fetchback              fetchbackFlags    // what the SUT fetches back (fetchback.go)
	posts                  personaPostsFlags // crowd flood only: posts for personas without (fetchback.go)

	scn       scenarioFlags // --scenario, --tamper, --tamper-share, --origin-zipf, --target-posts
	signature string        // --signature: cavage, rfc9421 or both

	metricsAddr   string
	metricsLinger time.Duration
}

func newFloodCmd(g *globalOptions) *cobra.Command {
	f := &floodFlags{}
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

Output: a live line each second on stderr; the final table on stdout; a JSON record and a
Markdown row in --out. Exit status: 0 when every --expect holds, 1 when one is missed (or the
run failed), 2 for a usage error, 130 when interrupted (the partial record is written).
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
	fl.Lookup("state").Usage = "directory of the crowd's keys (attached: the running crowd's --state, read only), CA, follow graph and activity log (--standalone: default ./" + standaloneState + ")"
	fl.StringVar(&f.rate, "rate", "100", "sends per second; a comma list (100,300,600) runs a ladder")
	fl.StringVar(&f.ramp, "ramp", "", "a ladder from:to:step of rates, e.g. 100:1000:100 (instead of --rate)")
	fl.DurationVar(&f.step, "step", 20*time.Second, "measured length of each ladder rung")
	fl.DurationVar(&f.warmup, "warmup", 0, "start of the run (of each rung) that is sent but not measured")
	fl.StringArrayVar(&f.stopWhen, "stop-when", nil, "stop a ladder after the rung where this holds, e.g. 'p95>2s' (repeatable)")
	fl.Float64Var(&f.seconds, "seconds", 60, "measured length of the run, after --warmup (0 with --max-sends: bounded by sends only)")
	fl.Int64Var(&f.maxSends, "max-sends", 0, "stop after this many sends, warm-up included (0 = no limit)")
	fl.StringVar(&f.arrivals, "arrivals", "constant", "arrival process: constant (start + n/rate) or poisson")
	fl.IntVar(&f.maxInflight, "max-inflight", def.MaxInflight, "concurrent sends; a send due with all of them busy is dropped and counted")
	fl.DurationVar(&f.timeout, "timeout", def.Timeout, "bound on each send (and each discovery request)")
	fl.StringVar(&f.signing, "signing", def.Signing, "when requests are signed: pipeline (background signers), presign (all before the run) or jit (in the dispatcher)")
	fl.IntVar(&f.signerNice, "signer-nice", 0, "with --signing=pipeline: OS nice value (1-19) of the signer threads; 0 leaves them at the crowd's priority. Lowering it keeps sends on time on a machine the crowd has to itself, but beside a SUT it lets the SUT starve the signers")
	fl.StringVar(&f.mix, "mix", def.Mix, "weighted mix of activity types")
	fl.Float64Var(&f.zipf, "zipf", 0, "draw senders from a Zipf distribution with this exponent (> 1); 0 = uniform")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of the random draws (types, senders, personas, Poisson arrivals); default a fresh one each run, printed and recorded so --seed replays it")
	fl.IntVar(&f.noteBytes, "note-bytes", 200, "approximate length of each note's text")
	fl.StringArrayVar(&f.persona, "persona", nil, "a persona to flood, acct:name@host (repeatable)")
	fl.StringVar(&f.personas, "personas", "", "persona pattern with one %d, e.g. 'load%d@sut.test', numbered 0 … --count-1")
	fl.IntVar(&f.count, "count", 0, "how many personas --personas names")
	fl.StringVar(&f.personasFile, "personas-file", "", "file naming the personas, one name@host a line")
	fl.StringVar(&f.inbox, "inbox", def.Inbox, "where to post: auto (the shared inbox, else the persona's own), shared or personal")
	fl.StringArrayVar(&f.expect, "expect", nil, "a gate, e.g. 'p95<100ms', 'errors<1%', 'rate>=0.95*offered' (repeatable); exit 1 when one is missed")
	fl.StringVar(&f.out, "out", filepath.Join("out", "load"), "directory of the run records and runs.md")
	fl.StringVar(&f.label, "label", "", "name of the run, in its record's file name and row")
	fl.BoolVar(&f.allowPublic, "allow-public-target", false, "allow targets that resolve to public addresses (a flood is a denial of service: only your own servers)")
	fl.BoolVar(&f.standalone, "standalone", false, "run the crowd's world in this process instead of driving a running 'crowd serve'")
	fl.StringVar(&f.https, "https", "127.0.0.1:0", "with --standalone: HTTPS listen address of the in-process crowd")
	fl.StringVar(&f.http, "http", "", "with --standalone: HTTP listen address (empty disables)")
	fl.StringVar(&f.dns, "dns", "", "with --standalone: DNS listen address (empty disables)")
	fl.StringVar(&f.crowdHTTPS, "crowd-https", "", "attached: ip:port of the running crowd's HTTPS listener, for a self-flood when this machine cannot resolve the crowd's names")
	fl.StringVar(&f.algorithm, "algorithm", def.Algorithm, "signature algorithm label: rsa-sha256 or hs2019")
	fl.Int64Var(&f.presignMaxBytes, "presign-max-bytes", def.PresignMaxBytes, "with --signing=presign: refuse a run whose presigned requests would take more memory")
	fl.StringVar(&f.signature, "signature", def.Signature, "HTTP signature scheme: cavage (draft-cavage-12), rfc9421 (RFC 9421 with Content-Digest), or both (RFC 9421 first, cavage again on a 4xx, the scheme that worked remembered per host, as Fedify >= 1.6 sends)")
	f.fetchback.register(cmd)
	f.scn.register(cmd)

	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the run's live Prometheus metrics at http://ADDR/metrics (host:port; :port listens on loopback; empty: off)")
	fl.DurationVar(&f.metricsLinger, "metrics-linger", 0, "with --metrics-addr: keep serving the metrics this long after the run, so a scraper takes the final values")
}

// config is the flood's command line as a load run's Config; it checks
// only what is the CLI's own (--admin), Validate the rest.
func (f *floodFlags) config(cmd *cobra.Command) (loadrun.Config, error) {
	c := loadrun.Config{Standalone: f.standalone, World: f.world.cfg, AdminAddr: f.admin.addr,
		HTTPS: f.https, HTTP: f.http, DNS: f.dns, CrowdHTTPS: f.crowdHTTPS,
		Ramp: f.ramp, Step: f.step, Warmup: f.warmup, StopWhen: f.stopWhen, Expect: f.expect,
		Seconds: f.seconds, SecondsSet: cmd.Flags().Changed("seconds"), MaxSends: f.maxSends, Arrivals: f.arrivals,
		MaxInflight: f.maxInflight, Timeout: f.timeout, Signing: f.signing, SignerNice: f.signerNice, Mix: f.mix,
		Zipf: f.zipf, NoteBytes: f.noteBytes, Persona: f.persona, Personas: f.personas, Count: f.count,
		PersonasFile: f.personasFile, Inbox: f.inbox, Out: f.out, Label: f.label, AllowPublic: f.allowPublic,
		Algorithm: f.algorithm, PresignMaxBytes: f.presignMaxBytes, Signature: f.signature,
		Version: version, UserAgent: userAgent(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		Fetchback: f.fetchback.config(), PersonaPosts: f.posts.config(), Vocab: loadrun.VocabOptions(f.vocab)}
	c.Live = isTerminal(os.Stderr) && c.Stderr == io.Writer(os.Stderr)
	c.Metrics = loadrun.MetricsConfig{Addr: f.metricsAddr, Linger: f.metricsLinger}
	if cmd.Flags().Changed("rate") {
		c.Rate = f.rate
	}
	if cmd.Flags().Changed("seed") {
		c.Seed = f.seed
	}
	if f.standalone {
		c.AdminAddr = ""
		if f.admin.addr != defaultAdmin {
			c.AdminAddr = f.admin.addr
		}
		if !cmd.Flags().Changed("state") {
			c.World.StateDir = loadrun.StandaloneState // never a running serve's ./crowd-state
		}
		return c, nil
	}
	admin, err := f.admin.client()
	c.Admin = admin
	return c, err
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
	c.Scenario = f.scn.config(scenario)
	c.Audience = audience
	if err := g.applyCrypto(&c.World); err != nil {
		return err
	}
	if errs := c.Validate(); len(errs) > 0 {
		return usage(errors.Join(errs...))
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	defer log.Sync()
	if !f.standalone {
		for _, name := range []string{"origins", "actors", "domain", "shard", "key-pool", "https", "http", "dns"} {
			if cmd.Flags().Changed(name) {
				log.Warn("--" + name + " applies to --standalone only: the running crowd's world is used")
			}
		}
	}
	c.Log = log
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
