package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/report"
	"github.com/crowdfed/crowd/internal/statedir"
	"github.com/crowdfed/crowd/pasture"
	"github.com/crowdfed/crowd/signing"
)

// exitInterrupted is the status of a flood stopped by SIGINT or SIGTERM
// (128 + SIGINT, as shells report it) after its partial record is written:
// an interrupted run neither met nor missed its gates.
const exitInterrupted = 130

// floodFlags are the flags of `crowd flood`.
type floodFlags struct {
	world worldFlags // --origins, --actors, --domain, --state, --shard
	admin adminFlags // --admin

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
			return runFlood(cmd, g, f)
		},
	}
	f.register(cmd)
	return cmd
}

// register adds the flood's flags to cmd (crowd flood, and crowd run,
// which floods with the same flags).
func (f *floodFlags) register(cmd *cobra.Command) {
	f.world.register(cmd)
	f.admin.register(cmd)
	fl := cmd.Flags()
	// The world's shape is the running crowd's unless the world runs here.
	for _, name := range []string{"origins", "actors", "domain", "shard"} {
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
	fl.IntVar(&f.maxInflight, "max-inflight", flood.DefaultMaxInflight, "concurrent sends; a send due with all of them busy is dropped and counted")
	fl.DurationVar(&f.timeout, "timeout", flood.DefaultTimeout, "bound on each send (and each discovery request)")
	fl.StringVar(&f.signing, "signing", string(flood.SigningPipeline), "when requests are signed: pipeline (background signers), presign (all before the run) or jit (in the dispatcher)")
	fl.IntVar(&f.signerNice, "signer-nice", 0, "with --signing=pipeline: OS nice value (1-19) of the signer threads; 0 leaves them at the crowd's priority. Lowering it keeps sends on time on a machine the crowd has to itself, but beside a SUT it lets the SUT starve the signers")
	fl.StringVar(&f.mix, "mix", record.DefaultMix().String(), "weighted mix of activity types")
	fl.Float64Var(&f.zipf, "zipf", 0, "draw senders from a Zipf distribution with this exponent (> 1); 0 = uniform")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of the random draws (types, senders, personas, Poisson arrivals); default a fresh one each run, printed and recorded so --seed replays it")
	fl.IntVar(&f.noteBytes, "note-bytes", 200, "approximate length of each note's text")
	fl.StringArrayVar(&f.persona, "persona", nil, "a persona to flood, acct:name@host (repeatable)")
	fl.StringVar(&f.personas, "personas", "", "persona pattern with one %d, e.g. 'load%d@sut.test', numbered 0 … --count-1")
	fl.IntVar(&f.count, "count", 0, "how many personas --personas names")
	fl.StringVar(&f.personasFile, "personas-file", "", "file naming the personas, one name@host a line")
	fl.StringVar(&f.inbox, "inbox", string(flood.InboxAuto), "where to post: auto (the shared inbox, else the persona's own), shared or personal")
	fl.StringArrayVar(&f.expect, "expect", nil, "a gate, e.g. 'p95<100ms', 'errors<1%', 'rate>=0.95*offered' (repeatable); exit 1 when one is missed")
	fl.StringVar(&f.out, "out", filepath.Join("out", "load"), "directory of the run records and runs.md")
	fl.StringVar(&f.label, "label", "", "name of the run, in its record's file name and row")
	fl.BoolVar(&f.allowPublic, "allow-public-target", false, "allow targets that resolve to public addresses (a flood is a denial of service: only your own servers)")
	fl.BoolVar(&f.standalone, "standalone", false, "run the crowd's world in this process instead of driving a running 'crowd serve'")
	fl.StringVar(&f.https, "https", "127.0.0.1:0", "with --standalone: HTTPS listen address of the in-process crowd")
	fl.StringVar(&f.http, "http", "", "with --standalone: HTTP listen address (empty disables)")
	fl.StringVar(&f.dns, "dns", "", "with --standalone: DNS listen address (empty disables)")
	fl.StringVar(&f.crowdHTTPS, "crowd-https", "", "attached: ip:port of the running crowd's HTTPS listener, for a self-flood when this machine cannot resolve the crowd's names")
	fl.StringVar(&f.algorithm, "algorithm", string(signing.RSASHA256), "signature algorithm label: rsa-sha256 or hs2019")
	fl.Int64Var(&f.presignMaxBytes, "presign-max-bytes", flood.DefaultPresignMaxBytes, "with --signing=presign: refuse a run whose presigned requests would take more memory")
}

// floodPlan is the checked command line of a flood.
type floodPlan struct {
	rates    []float64
	ladder   bool
	gates    []record.Gate
	stops    []record.Gate
	mix      record.Mix
	signing  flood.SigningMode
	arrivals flood.Arrivals
	inbox    flood.InboxMode
	accts    []string
	alg      signing.Algorithm
	duration time.Duration // measured seconds
}

// check reads the flags into a plan; every problem is a usage error (2).
func (f *floodFlags) check(cmd *cobra.Command) (*floodPlan, error) {
	p := &floodPlan{}
	var err error
	bad := func(err error) (*floodPlan, error) { return nil, usageError{err} }
	if f.ramp != "" {
		if cmd.Flags().Changed("rate") {
			return bad(errors.New("--rate and --ramp are exclusive: a ramp is its own list of rates"))
		}
		if p.rates, err = flood.ParseRamp(f.ramp); err != nil {
			return bad(fmt.Errorf("--ramp %w", err))
		}
		p.ladder = true
	} else {
		if p.rates, err = flood.ParseRates(f.rate); err != nil {
			return bad(fmt.Errorf("--rate %w", err))
		}
		p.ladder = len(p.rates) > 1
	}
	if p.gates, err = record.ParseGates(f.expect); err != nil {
		return bad(fmt.Errorf("--expect %w", err))
	}
	if p.stops, err = record.ParseGates(f.stopWhen); err != nil {
		return bad(fmt.Errorf("--stop-when %w", err))
	}
	if len(p.stops) > 0 && !p.ladder {
		return bad(errors.New("--stop-when needs a ladder (--rate=a,b,c or --ramp)"))
	}
	if p.mix, err = record.ParseMix(f.mix); err != nil {
		return bad(fmt.Errorf("--mix %w", err))
	}
	if p.signing, err = flood.ParseSigning(f.signing); err != nil {
		return bad(err)
	}
	if p.inbox, err = flood.ParseInboxMode(f.inbox); err != nil {
		return bad(err)
	}
	switch a := signing.Algorithm(strings.ToLower(f.algorithm)); a {
	case signing.RSASHA256, signing.HS2019:
		p.alg = a
	default:
		return bad(fmt.Errorf("--algorithm %q: want rsa-sha256 or hs2019", f.algorithm))
	}
	if p.arrivals, err = flood.ParseArrivals(f.arrivals); err != nil {
		return bad(err)
	}
	if f.zipf != 0 && !(f.zipf > 1 && !math.IsInf(f.zipf, 0)) {
		return bad(fmt.Errorf("--zipf %g: want a number > 1, or 0 for uniform senders", f.zipf))
	}
	switch {
	case math.IsNaN(f.seconds) || f.seconds < 0 || f.seconds > 7*24*3600:
		return bad(fmt.Errorf("--seconds %g: want 0 to a week", f.seconds))
	case f.seconds == 0 && f.maxSends == 0 && !p.ladder:
		return bad(errors.New("--seconds 0 needs --max-sends: the run must end"))
	case f.maxSends < 0:
		return bad(fmt.Errorf("--max-sends %d: want >= 0", f.maxSends))
	case f.maxInflight < 1:
		return bad(fmt.Errorf("--max-inflight %d: want >= 1", f.maxInflight))
	case f.signerNice < 0 || f.signerNice > 19:
		return bad(fmt.Errorf("--signer-nice %d: want 0 (unchanged) to 19", f.signerNice))
	case f.timeout <= 0:
		return bad(fmt.Errorf("--timeout %v: want > 0", f.timeout))
	case f.warmup < 0:
		return bad(fmt.Errorf("--warmup %v: want >= 0", f.warmup))
	case p.ladder && f.maxSends > 0:
		return bad(errors.New("--max-sends does not apply to a ladder: each rung runs --step after --warmup"))
	case p.ladder && cmd.Flags().Changed("seconds"):
		return bad(errors.New("--seconds does not apply to a ladder: each rung runs --step after --warmup"))
	case p.ladder && f.step <= 0:
		return bad(fmt.Errorf("--step %v: a ladder needs rungs > 0", f.step))
	case f.noteBytes < 1 || f.noteBytes > 1<<20:
		return bad(fmt.Errorf("--note-bytes %d: want 1 to 1048576", f.noteBytes))
	case strings.TrimSpace(f.out) == "":
		return bad(errors.New("--out is empty"))
	}
	// Before the first send: a record that cannot be written after the
	// flood is a flood lost.
	if err := record.CheckOutDir(f.out); err != nil {
		return bad(fmt.Errorf("--out %s cannot take the run's record: %w", f.out, err))
	}
	p.duration = time.Duration(f.seconds * float64(time.Second))
	// Personas: the union of the three ways to name them, in order.
	seen := map[string]bool{}
	add := func(list []string) {
		for _, a := range list {
			if !seen[a] {
				seen[a] = true
				p.accts = append(p.accts, a)
			}
		}
	}
	var one []string
	for _, a := range f.persona {
		l, err := flood.ParsePersonaList(strings.NewReader(a))
		if err != nil || len(l) != 1 {
			return bad(fmt.Errorf("--persona %q: want acct:name@host", a))
		}
		one = append(one, l...)
	}
	add(one)
	switch {
	case f.personas != "":
		l, err := flood.ExpandPersonas(f.personas, f.count)
		if err != nil {
			return bad(err)
		}
		add(l)
	case cmd.Flags().Changed("count"):
		return bad(errors.New("--count needs --personas 'name%d@host'"))
	}
	if f.personasFile != "" {
		fh, err := os.Open(f.personasFile)
		if err != nil {
			return bad(fmt.Errorf("--personas-file: %w", err))
		}
		l, err := flood.ParsePersonaList(fh)
		fh.Close()
		if err != nil {
			return bad(fmt.Errorf("--personas-file %s: %w", f.personasFile, err))
		}
		if len(l) == 0 {
			return bad(fmt.Errorf("--personas-file %s names no persona", f.personasFile))
		}
		add(l)
	}
	return p, nil
}

// floodEnv is where a flood runs: the world whose actors send, how to
// reach targets, and how Follows get registered.
type floodEnv struct {
	world    *actors.World
	roots    *x509.CertPool
	hosts    map[string]string // host → ip:port for the crowd's own origins, when known
	register func(context.Context, flood.FollowRegistration) error
	admin    *adminapi.Client // the crowd's admin API (crowd run sends Follows and reads the activity log through it)
	what     string           // for the log: which crowd
	shard    string
	close    func()
}

// crowdRelations reads the crowd's follow graph through its admin API and
// answers the state of crowd actor local's relation to remote (pending,
// accepted, rejected; "" for none), as it stood when read.
func crowdRelations(ctx context.Context, admin *adminapi.Client) (func(local, remote string) string, error) {
	infos, err := admin.Follows(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("reading the crowd's follows: %w", err)
	}
	type pair struct{ local, remote string }
	state := map[pair]string{}
	for _, fi := range infos {
		for _, rel := range fi.Following {
			state[pair{rel.Local, rel.Remote}] = rel.State
		}
	}
	return func(local, remote string) string { return state[pair{local, remote}] }, nil
}

// warnStalePending reports the crowd's Follows pending (unanswered) for
// longer than defaultPruneAge: they keep their pairs from being followed
// again. A crowd that cannot say is not an error here.
func warnStalePending(ctx context.Context, log *zap.Logger, admin *adminapi.Client) {
	res, err := admin.Prune(ctx, adminapi.PruneRequest{OlderThan: defaultPruneAge.String(), DryRun: true})
	if err != nil || len(res.Stale) == 0 {
		return
	}
	log.Warn("some of the crowd's Follows were never answered: their pairs are not followed again until `crowd follows prune` clears them",
		zap.Int("pending", len(res.Stale)), zap.Duration("older_than", defaultPruneAge))
}

// floodHooks let crowd run drive a flood (nil for crowd flood).
type floodHooks struct {
	// beforeTargets runs once the crowd is reached and before the personas
	// are looked up (crowd run sets up its audience there).
	beforeTargets func(ctx context.Context, env *floodEnv, guard *flood.Guard, tlsConfig *tls.Config) error
	// around runs the single run: it may wrap r.transport, and calls run.
	around func(ctx context.Context, r *floodRunner, personas []*flood.Persona, run func(context.Context) error) error
}

func runFlood(cmd *cobra.Command, g *globalOptions, f *floodFlags) error {
	return floodWith(cmd, g, f, nil)
}

// floodWith runs a flood with the flags f, and hooks h when not nil.
func floodWith(cmd *cobra.Command, g *globalOptions, f *floodFlags, h *floodHooks) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	p, err := f.check(cmd)
	if err != nil {
		return err
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	defer log.Sync()

	var env *floodEnv
	if f.standalone {
		if !cmd.Flags().Changed("state") {
			f.world.cfg.StateDir = standaloneState // never a running serve's ./crowd-state
		}
		env, err = f.standaloneEnv(ctx, log)
	} else {
		env, err = f.attachedEnv(ctx, cmd, log)
	}
	if err != nil {
		return err
	}
	defer env.close()
	world := env.world

	guard := flood.NewGuard(flood.GuardOptions{AllowPublic: f.allowPublic, Hosts: env.hosts})
	tlsConfig := &tls.Config{RootCAs: env.roots, MinVersion: tls.VersionTLS12}
	signer := signing.NewSigner(signing.SignerOptions{Algorithm: p.alg, UserAgent: userAgent()})

	if h != nil && h.beforeTargets != nil {
		if err := h.beforeTargets(ctx, env, guard, tlsConfig); err != nil {
			return err
		}
	}
	personas, target, err := f.targets(ctx, log, p, env, guard, tlsConfig, signer)
	if err != nil {
		return err
	}

	// A fresh seed per run unless --seed: the same seed every run would
	// draw the same pairs again. It is printed first and recorded.
	if !cmd.Flags().Changed("seed") || f.seed == 0 {
		f.seed = freshSeed()
	}
	fmt.Fprintf(stderr, "seed %d (--seed %d replays the draws)\n", f.seed, f.seed)

	// Follows are registered off the send path, once sent and answered
	// 2xx (flood.Generator.Settled); a presigned run may answer all of its
	// Follows in one window, so its queue holds them all.
	queue := 10000
	if p.signing == flood.SigningPresign {
		total := 0.0
		for _, r := range p.rates {
			total += r * (f.warmup + max(p.duration, f.step)).Seconds()
		}
		queue = max(queue, int(total*p.mix.Follow/(p.mix.Create+p.mix.Like+p.mix.Follow))+1000)
	}
	reg := flood.NewRegistrar(env.register, flood.RegistrarOptions{Queue: queue, Timeout: 10 * time.Second})
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st := reg.Close(cctx)
		if st.Failed > 0 {
			log.Warn("some Follows could not be registered with the crowd: their Accepts will not be recognised",
				zap.Int64("failed", st.Failed), zap.Int64("registered", st.Registered), zap.String("first_error", st.FirstError))
		} else if st.Registered > 0 {
			log.Debug("follows registered", zap.Int64("registered", st.Registered))
		}
	}()

	// A Follow the crowd has sent already, answered or not, is not sent
	// again: no server takes a Follow it has.
	var following func(local, remote string) bool
	if p.mix.Follow > 0 && env.admin != nil {
		rel, err := crowdRelations(ctx, env.admin)
		if err != nil {
			return err
		}
		following = func(local, remote string) bool {
			s := rel(local, remote)
			return s != "" && s != actors.StateRejected
		}
	}
	if env.admin != nil {
		warnStalePending(ctx, log, env.admin)
	}
	gen, err := flood.NewGenerator(flood.GeneratorConfig{Senders: world.Actors(), Personas: personas, Mix: p.mix,
		Zipf: f.zipf, Seed: f.seed, NoteBytes: f.noteBytes, Start: time.Now(), OnFollowSent: reg.Add, Following: following})
	if err != nil {
		var ue *record.UsageError
		if errors.As(err, &ue) {
			return usageError{err}
		}
		return err
	}
	defer func() {
		if n := gen.FollowsDiverted(); n > 0 {
			log.Warn("some Follows were sent as Creates: every crowd actor already followed the persona, and a server does not take a Follow it already has",
				zap.Int64("diverted", n))
		}
	}()
	if nop := gen.PersonasWithoutPosts(); len(nop) > 0 {
		log.Warn("some personas have no post to like: they get Creates and Follows instead of Likes", zap.Strings("personas", nop))
	}

	tr := flood.NewTransport(f.maxInflight, tlsConfig)
	tr.DialContext = guard.DialContext
	defer tr.CloseIdleConnections()

	r := &floodRunner{f: f, p: p, log: log, gen: gen, signer: signer, transport: tr, stdout: stdout, stderr: stderr, seed: f.seed,
		settings: record.Settings{Label: f.label, Arrivals: string(p.arrivals), Mix: p.mix.String(), Signing: string(p.signing),
			Target: target, Shard: env.shard}}
	if p.signing != flood.SigningPresign {
		maxRate := 0.0
		for _, x := range p.rates {
			maxRate = max(maxRate, x)
		}
		if p.signing == flood.SigningPipeline {
			runtime.GOMAXPROCS(flood.PipelineProcs()) // the signers fill the cores; the dispatcher keeps a P
			pl := flood.NewPipeline(gen, signer, flood.PipelineOptions{Buffer: flood.PipelineBuffer(maxRate), Nice: f.signerNice})
			defer pl.Close()
			fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := pl.Fill(fctx)
			cancel()
			if err != nil && ctx.Err() != nil {
				return exitCode{exitInterrupted, errors.New("interrupted before the run")}
			}
			r.shared = pl
		} else {
			r.shared = flood.NewJIT(gen, signer)
		}
	}
	log.Info("flooding", zap.String("crowd", env.what), zap.String("target", target), zap.Float64s("rates", p.rates),
		zap.String("mix", p.mix.String()), zap.String("signing", string(p.signing)), zap.Int("senders", len(world.Actors())))
	if p.ladder {
		return r.ladder(ctx)
	}
	if h != nil && h.around != nil {
		return h.around(ctx, r, personas, r.single)
	}
	return r.single(ctx)
}

// targets returns the personas to flood and a description for the record:
// the named ones, checked and looked up, or the crowd's own actors.
func (f *floodFlags) targets(ctx context.Context, log *zap.Logger, p *floodPlan, env *floodEnv, guard *flood.Guard,
	tlsConfig *tls.Config, signer *signing.Signer) ([]*flood.Persona, string, error) {
	refuse := func(err error) error {
		if errors.Is(err, flood.ErrPublicTarget) {
			return usageError{err}
		}
		return err
	}
	if len(p.accts) == 0 {
		personas := flood.WorldPersonas(env.world, p.inbox)
		for _, o := range env.world.Origins {
			if _, err := guard.Check(ctx, o.Host); err != nil {
				return nil, "", refuse(fmt.Errorf("self-flood of %s: %w (start the crowd with its DNS in this machine's resolv.conf, pass --crowd-https, or use --standalone)", env.what, err))
			}
		}
		return personas, fmt.Sprintf("self-flood: %d crowd actors, inbox %s", len(personas), p.inbox), nil
	}
	// Every persona's host is resolved and checked before anything is sent
	// to it, WebFinger included.
	checked := map[string]bool{}
	for _, a := range p.accts {
		_, host, _ := strings.Cut(a, "@")
		if checked[host] {
			continue
		}
		checked[host] = true
		if _, err := guard.Check(ctx, host); err != nil {
			return nil, "", refuse(fmt.Errorf("persona %s: %w", a, err))
		}
	}
	client := &http.Client{Timeout: f.timeout, Transport: &http.Transport{
		DialContext: guard.DialContext, TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: true, // a copy: enabling HTTP/2 adds "h2" to it
		MaxIdleConnsPerHost: 16, TLSHandshakeTimeout: 10 * time.Second}}
	defer client.CloseIdleConnections()
	inst := env.world.Origins[0].Instance
	start := time.Now()
	personas, warns, err := flood.Discover(ctx, p.accts, flood.DiscoverOptions{Client: client, Signer: signer,
		KeyID: inst.KeyID, Key: inst.Key, Inbox: p.inbox, Timeout: f.timeout})
	for _, w := range warns {
		log.Warn(w)
	}
	if err != nil {
		return nil, "", refuse(fmt.Errorf("discovering the personas: %w", err))
	}
	for _, ps := range personas {
		if err := guard.CheckURL(ctx, ps.Target); err != nil {
			return nil, "", refuse(fmt.Errorf("persona %s: inbox %s: %w", ps.Acct, ps.Target, err))
		}
	}
	log.Info("personas discovered", zap.Int("personas", len(personas)), zap.Duration("took", time.Since(start)))
	desc := fmt.Sprintf("%d personas (%s", len(personas), personas[0].Acct)
	if len(personas) > 1 {
		desc += " … " + personas[len(personas)-1].Acct
	}
	return personas, desc + "), inbox " + string(p.inbox), nil
}

// standaloneEnv runs the world in this process, on the listeners of the
// --https/--http/--dns flags and an admin API on 127.0.0.1:0 (or --admin
// when given), and points the flood at it.
func (f *floodFlags) standaloneEnv(ctx context.Context, log *zap.Logger) (*floodEnv, error) {
	wcfg := f.world.cfg
	if f.https == "" {
		return nil, usageError{errors.New("--standalone needs --https: the flood reaches the in-process crowd over HTTPS")}
	}
	admin := "127.0.0.1:0"
	if f.admin.addr != defaultAdmin {
		admin = f.admin.addr
	}
	pcfg := pasture.Config{HTTPSAddr: f.https, HTTPAddr: f.http, DNSAddr: f.dns, AdminAddr: admin,
		Advertise: []net.IP{net.IPv4(127, 0, 0, 1)}}
	// The in-process crowd logs only what needs attention: the flood's
	// output is the report.
	quiet := quietLogger(log.Named("crowd"))
	cw, err := pasture.StartCrowd(ctx, pasture.CrowdConfig{World: wcfg, Listen: pcfg, Version: version, UserAgent: userAgent(),
		Logger: quiet, WorldLogger: log.Named("crowd")}) // a first start's key making is worth seeing
	if errors.Is(err, statedir.ErrNotDir) || errors.Is(err, pasture.ErrConfig) {
		return nil, usageError{err}
	}
	if err != nil {
		return nil, err
	}
	addr := dialable(cw.Pasture.Addr("https"))
	hosts := map[string]string{}
	for _, h := range cw.World.Hosts() {
		hosts[h] = addr
	}
	log.Info("in-process crowd", zap.Int("origins", len(cw.World.Origins)), zap.Int("actors", len(cw.World.Actors())),
		zap.String("https", addr), zap.String("admin", cw.Pasture.Addr("admin")), zap.String("state", wcfg.StateDir))
	ac, _ := (&adminFlags{addr: dialable(cw.Pasture.Addr("admin"))}).client() // nil only without an admin listener
	return &floodEnv{
		world: cw.World, roots: pasture.RootsWith(cw.Pasture.CA().CertPEM()), hosts: hosts, admin: ac,
		register: flood.GraphRegister(cw.World.Graph), what: "the in-process crowd", shard: wcfg.Shard,
		close: func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := cw.Shutdown(sctx); err != nil {
				log.Warn("in-process crowd shutdown", zap.Error(err))
			}
		},
	}, nil
}

// dialable turns a listener's address into one to dial: a wildcard host
// (":8443", "[::]:8443") becomes loopback.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// attachedEnv drives the crowd serving at --admin: its world's shape comes
// from /api/world, its keys from --state (checked against the ones it
// serves), its CA from /ca.pem, and Follows are registered through
// /api/following.
func (f *floodFlags) attachedEnv(ctx context.Context, cmd *cobra.Command, log *zap.Logger) (*floodEnv, error) {
	c, err := f.admin.client()
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"origins", "actors", "domain", "shard", "https", "http", "dns"} {
		if cmd.Flags().Changed(name) {
			log.Warn("--" + name + " applies to --standalone only: the running crowd's world is used")
		}
	}
	info, err := c.World(ctx)
	if err != nil {
		var nc *adminapi.UnreachableError
		if errors.As(err, &nc) {
			return nil, fmt.Errorf("no crowd answers at %s (--admin): start one with `crowd serve`, or pass --standalone to run the world in this process", f.admin.addr)
		}
		return nil, err
	}
	if len(info.Origins) == 0 || len(info.Origins[0].Actors) == 0 {
		return nil, fmt.Errorf("the crowd at %s (--admin) describes an empty world", f.admin.addr)
	}
	shard, err := actors.ParseShard(info.Shard)
	if err != nil {
		return nil, fmt.Errorf("the crowd at %s (--admin): %w", f.admin.addr, err)
	}
	state := f.world.cfg.StateDir
	if st, err := os.Stat(filepath.Join(state, "keys")); err != nil || !st.IsDir() {
		return nil, usageError{fmt.Errorf("--state %s holds no keys: pass the --state of the crowd serving at %s, whose keys the flood signs with", state, f.admin.addr)}
	}
	cfg := actors.Config{Actors: len(info.Origins[0].Actors), Domain: info.Domain, StateDir: state, Shard: shard,
		EphemeralGraph: true, BorrowKeys: true}
	want := map[string]string{}
	for _, o := range info.Origins {
		cfg.Origins = max(cfg.Origins, o.Index)
		for _, a := range o.Actors {
			want[a.ID] = a.KeySHA256
		}
		want[o.Instance.ID] = o.Instance.KeySHA256
	}
	world, err := actors.Open(cfg)
	if errors.Is(err, actors.ErrKeyFile) {
		return nil, usageError{err} // a key missing or unreadable: --state is not that crowd's
	}
	if err != nil {
		return nil, fmt.Errorf("loading the crowd's keys from --state %s: %w", state, err)
	}
	for _, a := range append(world.Actors(), world.Origins[0].Instance) {
		der, err := x509.MarshalPKIXPublicKey(a.Key.Public())
		sum := sha256.Sum256(der)
		if err != nil || want[a.ID] != hex.EncodeToString(sum[:]) {
			world.Close()
			return nil, usageError{fmt.Errorf("the key of %s in --state %s is not the one the crowd at %s serves: pass that crowd's --state", a.Acct(), state, f.admin.addr)}
		}
	}
	caPEM, err := c.CA(ctx)
	if err != nil {
		world.Close()
		return nil, fmt.Errorf("the crowd's CA from %s: %w", f.admin.addr, err)
	}
	hosts := map[string]string{}
	if f.crowdHTTPS != "" {
		if _, _, err := net.SplitHostPort(f.crowdHTTPS); err != nil {
			world.Close()
			return nil, usageError{fmt.Errorf("--crowd-https %q is not ip:port", f.crowdHTTPS)}
		}
		for _, h := range world.Hosts() {
			hosts[h] = f.crowdHTTPS
		}
	}
	log.Info("attached", zap.String("admin", f.admin.addr), zap.Int("origins", len(world.Origins)),
		zap.Int("actors", len(world.Actors())), zap.String("state", state))
	return &floodEnv{
		world: world, roots: pasture.RootsWith(caPEM), hosts: hosts,
		register: func(ctx context.Context, f flood.FollowRegistration) error {
			_, err := c.RegisterFollowing(ctx, adminapi.FollowingRequest(f))
			return err
		}, admin: c, what: "the crowd at " + f.admin.addr, shard: info.Shard,
		close: func() { world.Close() },
	}, nil
}

// floodRunner runs the single run or the ladder of a flood.
type floodRunner struct {
	f         *floodFlags
	p         *floodPlan
	log       *zap.Logger
	gen       *flood.Generator
	signer    *signing.Signer
	transport http.RoundTripper
	shared    flood.Source // pipeline or jit; nil for presign (a source per run)
	seed      uint64       // the draws' seed, in every record
	diverted  int64        // gen.FollowsDiverted() when the current run began
	settings  record.Settings
	stdout    io.Writer
	stderr    io.Writer
	file      *record.RecordFile // the current run's record: checkpoints, then the final write
}

// source returns the run's Source: the shared one, or n freshly presigned
// requests for a window of w.
func (r *floodRunner) source(ctx context.Context, n int64, w time.Duration) (flood.Source, error) {
	if r.shared != nil {
		return r.shared, nil
	}
	ps, err := flood.Presign(ctx, r.gen, r.signer, n, flood.PresignOptions{Window: w, MaxBytes: r.f.presignMaxBytes})
	if err != nil {
		if errors.Is(err, flood.ErrInvalidPlan) {
			return nil, usageError{err}
		}
		return nil, err
	}
	fmt.Fprintf(r.stderr, "presigned %d requests in %v (%.0f/s, about %.0f MiB)\n", ps.Len(), ps.Took.Round(time.Millisecond),
		float64(ps.Len())/ps.Took.Seconds(), float64(ps.Bytes)/(1<<20))
	return ps, nil
}

// run runs one plan with a live line and returns its record.
func (r *floodRunner) run(ctx context.Context, plan flood.Plan, s record.Settings) (*record.Record, error) {
	live := report.NewLive(r.stderr, isTerminal(os.Stderr) && r.stderr == io.Writer(os.Stderr))
	plan.Progress = live.Update
	plan.Settled = r.gen.Settled
	plan.Transport = r.transport
	plan.MaxInflight = r.f.maxInflight
	plan.Timeout = r.f.timeout
	// Checkpoints (every flood.DefaultCheckpointEvery) go where the final
	// record will, so a flood killed with SIGKILL leaves a partial record.
	file := record.NewRecordFile(r.f.out)
	r.file = file
	r.diverted = r.gen.FollowsDiverted()
	plan.Checkpoint = func(res *record.Result) {
		rec, err := r.record(res, s)
		if err == nil {
			err = file.Checkpoint(rec)
		}
		if err != nil {
			r.log.Warn("checkpoint of the record", zap.String("out", r.f.out), zap.Error(err))
		}
	}
	res, err := flood.Run(ctx, plan)
	live.Done()
	if err != nil {
		return nil, usageError{err}
	}
	if res.Err != nil {
		r.log.Error("the source failed", zap.Error(res.Err))
	}
	return r.record(res, s)
}

// record is res's record with what the flood knows beyond the engine: the
// seed, and what the run changed from what was asked (the Follows it sent
// as Creates since it began, the personas without posts).
func (r *floodRunner) record(res *record.Result, s record.Settings) (*record.Record, error) {
	rec, err := res.Record(s)
	if err != nil {
		return nil, err
	}
	for i := range rec.Parts {
		rec.Parts[i].Seed = r.seed
	}
	rec.Deviations = record.Deviations{FollowsDiverted: r.gen.FollowsDiverted() - r.diverted,
		PersonasWithoutPosts: r.gen.PersonasWithoutPosts()}
	return rec, nil
}

// closeSource gives back what a run's own source drew and never sent (a
// presigned run's tail); the shared pipeline is closed when the flood ends.
func closeSource(src flood.Source) {
	if ps, ok := src.(*flood.Presigned); ok {
		ps.Close()
	}
}

// freshSeed is a random, non-zero seed for a run without --seed.
func freshSeed() uint64 {
	for {
		if s := rand.Uint64(); s != 0 {
			return s
		}
	}
}

func (r *floodRunner) write(rec *record.Record) (string, error) {
	path, err := r.file.Final(rec)
	if err != nil {
		return path, fmt.Errorf("writing the record to %s (--out): %w", r.f.out, err)
	}
	return path, nil
}

func (r *floodRunner) single(ctx context.Context) error {
	f, p := r.f, r.p
	pacer, err := flood.NewPacer(p.arrivals, p.rates[0], f.seed)
	if err != nil {
		return usageError{err}
	}
	var window time.Duration
	if p.duration > 0 {
		window = f.warmup + p.duration
	}
	n := flood.PresignCount(p.arrivals, p.rates[0], window, f.maxSends)
	// How long presigned requests wait: the window, or the time max-sends
	// take at the rate when no window bounds the run.
	wait := window
	if wait == 0 {
		wait = time.Duration(float64(n) / p.rates[0] * float64(time.Second))
	}
	src, err := r.source(ctx, n, wait)
	if err != nil {
		return r.interrupted(ctx, err)
	}
	defer closeSource(src)
	rec, err := r.run(ctx, flood.Plan{Pacer: pacer, Duration: window, MaxSends: f.maxSends, Warmup: f.warmup, Source: src}, r.settings)
	if err != nil {
		return err
	}
	path, werr := r.write(rec)
	if err := report.WriteTable(r.stdout, rec); err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	fmt.Fprintf(r.stdout, "record: %s\n", path)
	return r.finish(ctx, rec, []*record.Record{rec})
}

func (r *floodRunner) ladder(ctx context.Context) error {
	f, p := r.f, r.p
	lad := flood.Ladder{Rates: p.rates, Step: f.step, Warmup: f.warmup, StopWhen: p.stops}
	var paths []string
	header := false
	run := func(ctx context.Context, rate float64, d time.Duration) (*record.Record, error) {
		pacer, err := flood.NewPacer(p.arrivals, rate, f.seed)
		if err != nil {
			return nil, usageError{err}
		}
		plan := lad.RungPlan(flood.Plan{}, pacer)
		src, err := r.source(ctx, flood.PresignCount(p.arrivals, rate, plan.Duration, 0), plan.Duration)
		if err != nil {
			return nil, err
		}
		defer closeSource(src)
		plan.Source = src
		s := r.settings
		s.Label = fmt.Sprintf("%s-%g", cmp.Or(f.label, "ladder"), rate)
		return r.run(ctx, plan, s)
	}
	// A rung's record is written once the ladder has put its capacity
	// verdict so far in it.
	onRow := func(row record.RungRow) error {
		path, err := r.write(row.Record)
		if err != nil {
			return err
		}
		paths = append(paths, path)
		if !header {
			fmt.Fprint(r.stderr, strings.ReplaceAll(report.LadderHeader(), "\t", "  "))
			header = true
		}
		fmt.Fprint(r.stderr, strings.ReplaceAll(report.LadderRowLine(row), "\t", "  "))
		return nil
	}
	res, err := lad.Run(ctx, run, onRow)
	if len(res.Rows) > 0 {
		fmt.Fprintln(r.stdout)
		if werr := report.WriteLadder(r.stdout, res); werr != nil {
			return werr
		}
		for _, path := range paths {
			fmt.Fprintf(r.stdout, "record: %s\n", path)
		}
	}
	if err != nil {
		var ec exitCode
		if errors.As(err, &ec) {
			return ec
		}
		return r.interrupted(ctx, err)
	}
	if res.Shoulder >= 0 {
		fmt.Fprintf(r.stdout, "shoulder at %g/s (rung %d)\n", res.Rows[res.Shoulder].Rate, res.Shoulder+1)
	}
	// The gates judge the rungs below the shoulder: load broke there by
	// definition (or the shoulder itself when it is the first rung).
	var recs []*record.Record
	for i, row := range res.Rows {
		if i == res.Shoulder && i > 0 {
			break
		}
		recs = append(recs, row.Record)
	}
	var last *record.Record
	if len(res.Rows) > 0 {
		last = res.Rows[len(res.Rows)-1].Record
	}
	return r.finish(ctx, last, recs)
}

// finish evaluates the gates on recs and picks the exit status; last is
// the last record written, for the interruption message.
func (r *floodRunner) finish(ctx context.Context, last *record.Record, recs []*record.Record) error {
	var all []record.GateResult
	for _, rec := range recs {
		results, _ := record.CheckGates(rec, r.p.gates)
		for _, res := range results {
			prefix := "expect "
			if len(recs) > 1 {
				prefix = fmt.Sprintf("expect at %g/s: ", rec.Settings.Rate)
			}
			fmt.Fprintln(r.stdout, prefix+res.String())
		}
		all = append(all, results...)
	}
	if ctx.Err() != nil || last != nil && last.Partial && last.PartialReason == record.ReasonInterrupted {
		return exitCode{exitInterrupted, errors.New("interrupted: the partial record is written")}
	}
	if last != nil && last.Partial {
		return exitCode{1, fmt.Errorf("the run stopped early: %s", last.PartialReason)}
	}
	if code := flood.ExitCode(nil, all); code != 0 {
		return exitCode{code, errors.New("an expectation was missed")}
	}
	return nil
}

// interrupted turns an error that came from an interruption into the
// interrupted exit status.
func (r *floodRunner) interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return exitCode{exitInterrupted, errors.New("interrupted before the run")}
	}
	return err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// quietLogger is log raised to warnings, or log itself when --log-level
// already asks for less: zap refuses, and complains on stderr, to "increase"
// to a level below the one set.
func quietLogger(log *zap.Logger) *zap.Logger {
	if !log.Core().Enabled(zap.InfoLevel) {
		return log
	}
	return log.WithOptions(zap.IncreaseLevel(zap.WarnLevel))
}
