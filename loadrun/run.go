package loadrun

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// Run runs the load run c asks for: it validates c and starts it (reads
// the files its flags name, probes --out; every problem in one usage
// error), opens the environment, sets the observers up, looks the
// targets up, floods (one rate or a ladder), and writes the record. An
// interrupted run returns an error wrapping ErrInterrupted; a missed
// expectation or a run stopped early, a plain error.
func Run(ctx context.Context, c Config) (err error) {
	p, err := c.start()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			p.undoOut() // only what is still empty: a partial record stays
		}
	}()
	defer p.results.close(&err)
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	if c.Audience != nil && c.Label == "" {
		c.Label = "run"
	}
	env, err := openEnvironment(ctx, c, c.Log)
	if err != nil {
		return err
	}
	defer env.Close()
	r := &runner{c: c, p: p, log: c.Log, env: env, results: p.results}
	r.guard = flood.NewGuard(flood.GuardOptions{AllowPublic: c.AllowPublic, Hosts: env.Hosts})
	r.tls = &tls.Config{RootCAs: env.Roots, MinVersion: tls.VersionTLS12}
	r.signer = signing.NewSigner(signing.SignerOptions{Algorithm: p.alg, UserAgent: c.UserAgent})
	r.knock = traffic.NewKnocker(p.scheme, r.signer)
	if err := r.setupAudience(ctx); err != nil {
		return err
	}
	personas, target, err := r.targets(ctx)
	if err != nil {
		return err
	}
	if err := r.postForEmpty(ctx, personas); err != nil {
		return err
	}
	if r.boosters, err = r.followBoosters(ctx, personas); err != nil {
		return err
	}
	r.trimPosts(personas)
	// A fresh seed per run unless one is given: the same seed every run
	// would draw the same pairs again. It is printed first and recorded.
	r.seed = cmp.Or(c.Seed, freshSeed())
	c.Show.note(c.Stderr, "seed %d (--seed %d replays the draws)", r.seed, r.seed)
	reg := traffic.NewRegistrar(env.Register, traffic.RegistrarOptions{Queue: r.queueSize(), Timeout: 10 * time.Second})
	defer r.closeRegistrar(reg)
	// Closed before the environment (defers run last first), so the last
	// batch reaches an in-process world before it closes.
	r.feed = traffic.NewOutboxFeed(env.Outbox, traffic.OutboxFeedOptions{})
	defer r.closeFeed()
	r.startVocab()
	defer r.closeVocab()
	if err := r.generator(ctx, personas, reg); err != nil {
		return err
	}
	defer r.warnDiverted()
	defer r.dial()()
	logPlan(c.Log, env.Plan, env.World.Config.Shard.I)
	r.settings = record.Settings{Label: c.Label, Arrivals: string(p.arrivals), Mix: p.mix.String(), Signing: string(p.signing),
		Target: target, Shard: env.Shard, Scenario: p.scenarioName()}
	r.forg = traffic.NewForgeries() // forged requests, and keys the SUT refused before it accepted them
	stop, err := r.sharedSource(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if env.Admin != nil || p.metricsAddr != "" {
		if r.live, err = r.startLive(ctx); err != nil {
			return err
		}
		defer r.live.stop()
	}
	c.Log.Info("flooding", zap.String("crowd", env.What), zap.String("target", target), zap.Float64s("rates", p.rates),
		zap.String("mix", p.mix.String()), zap.String("signing", string(p.signing)), zap.String("signature", string(p.scheme)), zap.String("client", string(p.client)), zap.Int("senders", env.World.NumPersons()),
		zap.String("signing_backend", env.World.Backend().Describe()))
	if err := r.startWeather(ctx); err != nil {
		return err
	}
	if p.ladder {
		return r.ladder(ctx)
	}
	err = r.single(ctx)
	return errors.Join(err, r.weather.failed(), r.weather.restore())
}

// setupAudience sets the observer up, when the run has an audience.
func (r *runner) setupAudience(ctx context.Context) error {
	if r.p.audience == nil {
		return nil
	}
	obs := newAudience(r.p.audience, r.c, r.log.Named("audience"))
	obs.boosts = r.p.mix.Announce > 0
	r.obs = obs
	return r.obs.Setup(ctx, Setup{Env: r.env, Guard: r.guard, Client: r.client(30*time.Second, 64), UserAgent: r.c.UserAgent})
}

// dial makes the flood's transport: a keep-alive pool sized to the run,
// its dials guarded and routed by the origins' addresses. The function
// returned closes its idle connections.
func (r *runner) dial() func() {
	sending := floodTransport(flood.TransportOptions{Client: r.p.client, MaxInflight: r.c.MaxInflight, Timeout: r.c.Timeout, TLS: r.tls},
		r.guard.DialContext, r.env.Plan)
	r.transport = sending
	return sending.CloseIdleConnections
}

// queueSize is the registrar's queue. Follows are registered off the send
// path, once sent and answered 2xx (traffic.Generator.Settled); a presigned
// run may answer all of its Follows in one window, so its queue holds them
// all.
func (r *runner) queueSize() int {
	queue := 10000
	if r.p.signing == traffic.SigningPresign {
		total := 0.0
		for _, rate := range r.p.rates {
			total += rate * (r.c.Warmup + max(r.p.duration, r.c.Step)).Seconds()
		}
		m := r.p.mix
		queue = max(queue, int(total*m.Follow/m.Total())+1000)
	}
	return queue
}

// closeRegistrar drains the registrar and says what could not be
// registered.
func (r *runner) closeRegistrar(reg *traffic.Registrar) {
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := reg.Close(cctx)
	if st.Failed > 0 {
		r.log.Warn("some Follows could not be registered with the crowd: their Accepts will not be recognised",
			zap.Int64("failed", st.Failed), zap.Int64("registered", st.Registered), zap.String("first_error", st.FirstError))
	} else if st.Registered > 0 {
		r.log.Debug("follows registered", zap.Int64("registered", st.Registered))
	}
}

// closeFeed sends the outbox feed's last batch and says what could not be
// listed.
func (r *runner) closeFeed() {
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if st := r.feed.Close(cctx); st.Failed > 0 {
		r.log.Warn("some Creates sent could not be listed in the crowd's outboxes",
			zap.Int64("failed", st.Failed), zap.Int64("fed", st.Fed), zap.String("first_error", st.FirstError))
	}
}

// generator draws the run's activities. A Follow the crowd has sent
// already, answered or not, is not sent again: no server takes a Follow
// it has.
func (r *runner) generator(ctx context.Context, personas []*traffic.Persona, reg *traffic.Registrar) error {
	var following func(local, remote string) bool
	if r.p.mix.Follow > 0 && r.env.Admin != nil {
		rel, err := crowdRelations(ctx, r.env.Admin)
		if err != nil {
			return err
		}
		following = func(local, remote string) bool {
			s := rel(local, remote)
			return s != "" && s != actors.StateRejected
		}
	}
	if r.env.Admin != nil {
		warnStalePending(ctx, r.log, r.env.Admin)
	}
	var reacted func(actor, object string, kind record.ActivityKind) bool
	if (r.p.mix.Like > 0 || r.p.mix.Announce > 0 || r.p.mix.Undo > 0) && r.env.Admin != nil {
		var err error
		if reacted, err = crowdReactions(ctx, r.env.Admin); err != nil {
			return err
		}
	}
	c := r.c
	gen, err := traffic.NewGenerator(traffic.GeneratorConfig{SenderSet: traffic.WorldSenders(r.env.World), Personas: personas, Mix: r.p.mix,
		Zipf: c.Zipf, Seed: r.seed, NoteBytes: c.NoteBytes, Start: time.Now(), OnFollowSent: reg.Add, Following: following,
		Reacted: reacted, Vocab: r.vocabConfig(), Draws: r.p.draws()})
	if err != nil {
		var ue *record.UsageError
		if errors.As(err, &ue) {
			return usage(err)
		}
		return err
	}
	r.gen = gen
	if nop := gen.PersonasWithoutPosts(); len(nop) > 0 {
		r.log.Warn("some personas have no post to like: they get Creates and Follows instead of Likes", zap.Strings("personas", nop))
	}
	return nil
}

// warnDiverted says, at the end, how many Follows, Likes and Announces
// went out as Creates.
func (r *runner) warnDiverted() {
	if n := r.gen.FollowsDiverted(); n > 0 {
		r.log.Warn("some Follows were sent as Creates: every crowd actor already followed the persona, and a server does not take a Follow it already has",
			zap.Int64("diverted", n))
	}
	if likes, boosts := r.gen.ReactionsDiverted(); likes+boosts > 0 {
		r.log.Warn("some Likes and Announces were sent as Creates: every crowd actor had already reacted so to every post of the persona, and a server keeps one reaction per account and post (a larger world has more)",
			zap.Int64("likes", likes), zap.Int64("announces", boosts))
	}
}

// sharedSource starts the source every run of a pipeline or jit flood
// shares (a presigned run signs its own); stop closes it.
func (r *runner) sharedSource(ctx context.Context) (stop func(), err error) {
	switch r.p.signing {
	case traffic.SigningPresign:
		return func() {}, nil
	case traffic.SigningJIT:
		r.shared = traffic.NewJIT(r.gen, r.signer, r.knock)
		return func() {}, nil
	}
	maxRate := 0.0
	for _, x := range r.p.rates {
		maxRate = max(maxRate, x)
	}
	restore := traffic.PipelineRuntime(0) // the signers fill the cores; the dispatcher keeps a P
	pl := traffic.NewPipeline(r.gen, r.signer, traffic.PipelineOptions{Buffer: traffic.PipelineBuffer(maxRate), Nice: r.c.SignerNice, Knocker: r.knock})
	stop = func() {
		pl.Close()
		restore()
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = pl.Fill(fctx)
	cancel()
	if err != nil && ctx.Err() != nil {
		stop()
		return nil, fmt.Errorf("%w before the run", ErrInterrupted)
	}
	r.shared = pl
	return stop, nil
}

// freshSeed is a random, non-zero seed for a run without --seed, below
// 2^53: records and results files write it as a JSON number, which jq,
// JavaScript and pandas read as a float64, and a larger one would come
// back rounded and replay another run. --seed still takes any uint64.
func freshSeed() uint64 {
	for {
		if s := rand.Uint64N(1 << 53); s != 0 {
			return s
		}
	}
}
