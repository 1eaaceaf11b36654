package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/audience"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// runFlags are the flags of `crowd run`: the flood's (but those that name
// personas) and the audience's.
type runFlags struct {
	flood floodFlags

	personas       string // the pattern, as in crowd flood (an integer: the old count)
	count          int
	sutHost        string
	personaPattern string // deprecated: --personas
	clientAPI      string
	tokens         []string
	tokensFile     string
	follows        int
	followers      int
	posts          int
	postEvery      time.Duration
	probeHz        float64
	setupTimeout   time.Duration
	drainTimeout   time.Duration
}

// floodPersonaFlags are the flood's flags that crowd run replaces with its
// own way of naming the personas.
func floodPersonaFlags() []string { return []string{"persona", "personas", "count", "personas-file"} }

func newRunCmd(g *globalOptions) *cobra.Command { return (&runFlags{}).command(g) }

// command is `crowd run` with its flags in f.
func (f *runFlags) command(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "A whole load run: set up an audience on the SUT, flood it, watch it from the personas' seats, keep the record",
		Long: `A whole load run against a server under test (SUT) that speaks the Mastodon client API
(Mastodon, GoToSocial, Akkoma …), driving its personas with bearer tokens: --personas PATTERN
--count N, as for crowd flood (default load0 … load2 on --sut-host):

 1. set-up: each persona follows its own share of the crowd's actors (--follows, disjoint shares
    where the crowd is big enough, so a note reaches some homes and not others), posts --posts
    times (the posts the crowd will Like), and --followers crowd actors follow each persona;
    then it waits for the Accepts (bounded by --setup-timeout);
 2. the flood, exactly as 'crowd flood' runs it, with the personas as targets; meanwhile each
    persona's home timeline is read --probe-hz times a second, and each persona posts every
    --post-every (the SUT delivers those posts to the crowd actors that follow it);
 3. the drain: after the flood, how long until the last note the SUT accepted is visible in its
    follower's home (bounded by --drain-timeout); then a sweep pages down the homes for notes
    still unseen, which a late SUT files below the newest page: found there, they count as
    buried, not as never seen.

Measured: the flood's own figures; the home timeline's latency (p50/p95/p99) and errors; the
visibility latency of every Create sent to a persona that follows its sender, from its send to
its note's first appearance in that persona's home (matched by URI), and the notes never seen;
the drain; each post's delivery to the crowd's inboxes (latency from the status's created_at,
and how many of the expected inboxes it reached).

Tokens: --token load0=TOKEN (repeatable), --tokens-file (lines name=TOKEN), or the environment
(CROWD_TOKEN_LOAD0=TOKEN). The record is the flood's JSON record with a "run" section, in
--out, with a per-note log beside it (.notes.jsonl) and a row in crowd-run.md.
Exit status: 0 when every --expect holds, 1 when one is missed or the run failed (a SUT
without the client API, a refused token, a persona that does not exist), 2 for a usage error,
130 when interrupted. Every flag can also be set as CROWD_<FLAG>.`,
		Example: `  crowd run --count 3 --sut-host sut.test --tokens-file tokens.txt --rate 10 --seconds 20
  crowd run --rate=300 --seconds=60 --personas 'load%d@gts.test' --count=20 --follows=50`,
		Args: noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd, g, f)
		},
	}
	// The flood's flags, less those that name the personas: they are
	// registered on a scratch command and moved over.
	scratch := &cobra.Command{}
	f.flood.register(scratch)
	skip := floodPersonaFlags()
	scratch.Flags().VisitAll(func(fl *pflag.Flag) {
		if !slices.Contains(skip, fl.Name) {
			cmd.Flags().AddFlag(fl)
		}
	})
	fl := cmd.Flags()
	fl.StringVar(&f.personas, "personas", "", "persona pattern with one %d, as in crowd flood, e.g. 'load%d@sut.test', numbered 0 … --count-1 (default load%d@<sut-host>; without @host, on --sut-host)")
	fl.IntVar(&f.count, "count", 3, "how many personas --personas names")
	fl.StringVar(&f.sutHost, "sut-host", "sut.test", "the SUT's host name: the personas are NAME@sut-host")
	fl.StringVar(&f.personaPattern, "persona-pattern", "", "persona names with one %d")
	fl.MarkDeprecated("persona-pattern", "use --personas PATTERN, as in crowd flood")
	fl.StringVar(&f.clientAPI, "client-api", "", "base URL of the SUT's Mastodon client API (default https://<the personas' host>)")
	fl.StringArrayVar(&f.tokens, "token", nil, "a persona's bearer token, NAME=TOKEN (repeatable)")
	fl.StringVar(&f.tokensFile, "tokens-file", "", "file of tokens, one NAME=TOKEN a line")
	fl.IntVar(&f.follows, "follows", 10, "crowd actors each persona follows (its share of the crowd)")
	fl.IntVar(&f.followers, "followers", 2, "crowd actors that follow each persona (they receive its posts)")
	fl.IntVar(&f.posts, "posts", 2, "posts each persona makes before the flood (the crowd likes them)")
	fl.DurationVar(&f.postEvery, "post-every", 5*time.Second, "each persona posts this often during the flood (0: never), to measure deliveries")
	fl.Float64Var(&f.probeHz, "probe-hz", 4, "home timeline reads per second per persona")
	fl.DurationVar(&f.setupTimeout, "setup-timeout", 60*time.Second, "bound on the set-up's wait for Accepts")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 60*time.Second, "bound on the wait, after the flood, for the last accepted note to be visible")
	return cmd
}

// runPlan is the audience part of a checked `crowd run` command line.
type runPlan struct {
	host   string   // the personas' host
	names  []string // persona user names, in order
	tokens map[string]string
	api    string // client API base URL
}

// check reads the run's own flags, points the flood at the personas, and
// resolves every persona's token. Every problem is a usage error.
func (f *runFlags) check(cmd *cobra.Command) (*runPlan, error) {
	bad := func(format string, args ...any) (*runPlan, error) {
		return nil, usageError{fmt.Errorf(format, args...)}
	}
	pattern, count, err := f.personaSpec(cmd)
	if err != nil {
		return nil, err
	}
	switch {
	case count < 1:
		return bad("--count %d: want 1 or more personas", count)
	case f.follows < 0:
		return bad("--follows %d: want 0 or more", f.follows)
	case f.followers < 0:
		return bad("--followers %d: want 0 or more", f.followers)
	case f.posts < 0:
		return bad("--posts %d: want 0 or more", f.posts)
	case f.postEvery < 0:
		return bad("--post-every %v: want 0 (never) or more", f.postEvery)
	case !(f.probeHz > 0 && f.probeHz <= 100):
		return bad("--probe-hz %g: want more than 0, at most 100", f.probeHz)
	case f.setupTimeout <= 0:
		return bad("--setup-timeout %v: want more than 0", f.setupTimeout)
	case f.drainTimeout < 0:
		return bad("--drain-timeout %v: want 0 or more", f.drainTimeout)
	}
	if pattern == "" {
		if strings.TrimSpace(f.sutHost) == "" {
			return bad("--sut-host is empty")
		}
		pattern = "load%d@" + strings.TrimSpace(f.sutHost)
	} else if !strings.Contains(pattern, "@") {
		pattern += "@" + strings.TrimSpace(f.sutHost)
	}
	accts, err := flood.ExpandPersonas(pattern, count)
	if err != nil {
		return bad("--personas %q: %v", pattern, err)
	}
	p := &runPlan{tokens: map[string]string{}}
	for _, a := range accts {
		name, host, _ := strings.Cut(a, "@")
		if p.host == "" {
			p.host = host
		} else if !strings.EqualFold(host, p.host) {
			return bad("--personas %q names personas on more than one host", pattern)
		}
		p.names = append(p.names, name)
	}
	p.api = f.clientAPI
	if p.api == "" {
		p.api = "https://" + p.host
	}
	if _, err := audience.NewClient(p.api, nil, ""); err != nil {
		return bad("--client-api: %v", err)
	}
	src := audience.TokenSources{Flags: map[string]string{}, Env: os.LookupEnv}
	for _, t := range f.tokens {
		name, tok, err := audience.ParseTokenArg(t)
		if err != nil {
			return bad("--token %q: %v", t, err)
		}
		src.Flags[name] = tok
	}
	if f.tokensFile != "" {
		fh, err := os.Open(f.tokensFile)
		if err != nil {
			return bad("--tokens-file: %v", err)
		}
		src.File, err = audience.ParseTokens(fh)
		fh.Close()
		if err != nil {
			return bad("--tokens-file %s: %v", f.tokensFile, err)
		}
	}
	for _, name := range p.names {
		tok, _, ok := src.Token(name)
		if !ok {
			return nil, usageError{audience.MissingTokenError(name)}
		}
		p.tokens[name] = tok
	}
	// The flood floods these personas.
	f.flood.personas, f.flood.count = pattern, count
	if f.flood.label == "" {
		f.flood.label = "run"
	}
	return p, nil
}

// personaSpec reads --personas and --count as crowd flood does, and the
// forms of older crowds: --personas N (the count, before --personas was
// the pattern in both commands) with a warning, and --persona-pattern.
func (f *runFlags) personaSpec(cmd *cobra.Command) (pattern string, count int, err error) {
	pattern, count = strings.TrimSpace(f.personas), f.count
	if n, convErr := strconv.Atoi(pattern); convErr == nil {
		if cmd.Flags().Changed("count") {
			return "", 0, usageError{fmt.Errorf("--personas %s with --count %d: --personas takes the pattern (e.g. 'load%%d@sut.test'), --count the number", pattern, count)}
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "crowd run: --personas %d read as --count %d; --personas is the persona pattern, as in crowd flood (write --count %d)\n", n, n, n)
		pattern, count = "", n
	}
	if f.personaPattern != "" {
		if pattern != "" {
			return "", 0, usageError{errors.New("--persona-pattern and --personas both give the pattern: keep --personas")}
		}
		pattern = f.personaPattern
	}
	return pattern, count, nil
}

func runRun(cmd *cobra.Command, g *globalOptions, f *runFlags) error {
	rp, err := f.check(cmd)
	if err != nil {
		return err
	}
	fp, err := f.flood.check(cmd)
	if err != nil {
		return err
	}
	if fp.ladder {
		return usageError{errors.New("crowd run floods at one rate: a ladder (--rate=a,b,c or --ramp) is crowd flood's")}
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	defer log.Sync()
	st := &runState{f: f, plan: rp, log: log.Named("audience"), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
	return floodWith(cmd, g, &f.flood, &floodHooks{beforeTargets: st.setup, around: st.around})
}

// runState carries a run from its set-up to its record.
type runState struct {
	f              *runFlags
	plan           *runPlan
	log            *zap.Logger
	stdout, stderr io.Writer

	env       *floodEnv
	client    *audience.Client
	personas  []audience.Persona
	start     time.Time                        // the set-up's
	follows   map[string][]audience.CrowdActor // persona → crowd actors it follows (accepted)
	followers map[string][]audience.CrowdActor // persona → crowd actors that follow it (sent)
	stats     audience.SetupStats
}

// setup is the audience's set-up, before the flood looks the personas up:
// checks, follows, posts, and the crowd's Follows of the personas.
func (st *runState) setup(ctx context.Context, env *floodEnv, guard *flood.Guard, tlsConfig *tls.Config) error {
	st.start = time.Now()
	st.env = env
	if err := guard.CheckURL(ctx, st.plan.api); err != nil {
		if errors.Is(err, flood.ErrPublicTarget) {
			return usageError{fmt.Errorf("--client-api %s: %w", st.plan.api, err)}
		}
		return fmt.Errorf("--client-api %s: %w", st.plan.api, err)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: guard.DialContext, TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: true, // a copy: enabling HTTP/2 adds "h2" to it
		MaxIdleConnsPerHost: 64, TLSHandshakeTimeout: 10 * time.Second}}
	c, err := audience.NewClient(st.plan.api, hc, userAgent())
	if err != nil {
		return usageError{err}
	}
	st.client = c
	in, err := audience.CheckSUT(ctx, c)
	if err != nil {
		return err
	}
	st.log.Info("the SUT's client API", zap.String("at", c.Base()), zap.String("uri", in.URI), zap.String("version", in.Version))
	for _, name := range st.plan.names {
		p, err := audience.CheckPersona(ctx, c, st.plan.host, name, st.plan.tokens[name])
		if err != nil {
			return err
		}
		st.personas = append(st.personas, p)
	}

	var crowd []audience.CrowdActor
	for _, a := range env.world.Actors() {
		crowd = append(crowd, audience.CrowdActor{ID: a.ID, Acct: a.Acct()})
	}
	shares, err := audience.AssignFollows(len(st.personas), st.f.follows, crowd)
	if err != nil {
		return usageError{err}
	}
	fans, err := audience.AssignFollowers(len(st.personas), st.f.followers, crowd)
	if err != nil {
		return usageError{err}
	}
	plans := make([]audience.FollowPlan, len(st.personas))
	for i := range st.personas {
		plans[i] = audience.FollowPlan{Persona: &st.personas[i], Actors: shares[i]}
	}
	sctx, cancel := context.WithTimeout(ctx, st.f.setupTimeout)
	defer cancel()
	res, err := audience.Follow(sctx, c, plans, audience.FollowOptions{Progress: func(s string) { st.log.Info(s) }})
	if err != nil {
		if ctx.Err() != nil {
			return exitCode{exitInterrupted, errors.New("interrupted during the set-up")}
		}
		return fmt.Errorf("setting up the audience: %w", err)
	}
	st.follows = map[string][]audience.CrowdActor{}
	for _, r := range res {
		st.follows[r.Persona] = r.Accepted
		st.stats.FollowsRequested += len(r.Requested)
		st.stats.FollowsAccepted += len(r.Accepted)
	}
	if st.stats.FollowsAccepted < st.stats.FollowsRequested {
		st.log.Warn("not every follow was accepted within --setup-timeout: the notes of the others are not owed to the homes",
			zap.Int("accepted", st.stats.FollowsAccepted), zap.Int("requested", st.stats.FollowsRequested))
	}

	// The posts the crowd will like: made now, so the flood finds them in
	// the personas' outboxes.
	for _, p := range st.personas {
		for k := 1; k <= st.f.posts; k++ {
			if _, err := c.PostStatus(ctx, p.Token, audience.PostText(p.Name, k), "public"); err != nil {
				return fmt.Errorf("%s could not post: %w", p.Name, err)
			}
			st.stats.Posts++
		}
	}

	// The crowd's Follows of the personas, through the crowd's admin API:
	// the SUT delivers the personas' posts to these crowd actors.
	st.followers = map[string][]audience.CrowdActor{}
	if st.f.followers > 0 && env.admin == nil {
		st.log.Warn("no admin API of the crowd: no crowd actor follows the personas, deliveries are not measured")
		return nil
	}
	fanPlans := make([]audience.FollowPlan, len(st.personas))
	rel, err := crowdRelations(ctx, env.admin)
	if err != nil {
		return err
	}
	for i, p := range st.personas {
		fanPlans[i].Persona = &st.personas[i]
		personaID, err := personaActorID(ctx, env.admin, p.Acct)
		if err != nil {
			return err
		}
		for _, a := range fans[i] {
			if personaID != "" && rel(a.ID, personaID) == adminapi.StateAccepted {
				// Following it since an earlier run: a second Follow would
				// be a new request for a relation the SUT already has
				// (GoToSocial answers it 500, "already exists").
				fanPlans[i].Actors = append(fanPlans[i].Actors, a)
				st.stats.CrowdFollowsRequested++
				continue
			}
			out, err := env.admin.Send(ctx, adminapi.SendRequest{From: a.Acct, Type: "Follow", To: "acct:" + p.Acct,
				AllowPublicTarget: st.f.flood.allowPublic})
			if err == nil && (out.Status < 200 || out.Status > 299) {
				err = fmt.Errorf("the SUT answered %d %s", out.Status, strings.TrimSpace(out.Body))
			}
			if err != nil {
				return fmt.Errorf("the crowd's %s could not follow %s: %w", a.Acct, p.Acct, err)
			}
			fanPlans[i].Actors = append(fanPlans[i].Actors, a)
			st.stats.CrowdFollowsRequested++
		}
	}
	fanned, err := audience.WaitFollowers(sctx, c, fanPlans, audience.FollowOptions{Progress: func(s string) { st.log.Info(s) }})
	if err != nil {
		return fmt.Errorf("setting up the audience: %w", err)
	}
	if ctx.Err() != nil {
		return exitCode{exitInterrupted, errors.New("interrupted during the set-up")}
	}
	for i, p := range st.personas {
		st.followers[p.Name] = fanned[i]
		st.stats.CrowdFollowsAccepted += len(fanned[i])
	}
	if st.stats.CrowdFollowsAccepted < st.stats.CrowdFollowsRequested {
		st.log.Warn("not every crowd Follow of a persona was accepted within --setup-timeout: their deliveries are not expected",
			zap.Int("accepted", st.stats.CrowdFollowsAccepted), zap.Int("requested", st.stats.CrowdFollowsRequested))
	}
	return nil
}

// personaActorID is the actor id of persona (acct) as the crowd finds it
// (WebFinger, as a server would); "" when the lookup finds no actor URL.
func personaActorID(ctx context.Context, admin *adminapi.Client, persona string) (string, error) {
	lr, err := admin.Lookup(ctx, "acct:"+persona)
	if err != nil {
		return "", fmt.Errorf("looking up %s through the crowd: %w", persona, err)
	}
	return lr.URL, nil
}

// around runs the flood with the probes: the Creates observed on their
// way out, the home timelines read, the personas posting, the crowd's
// inboxes watched; then the drain and the record.
func (st *runState) around(ctx context.Context, r *floodRunner, _ []*flood.Persona, run func(context.Context) error) error {
	follows := map[string][]string{}
	for name, list := range st.follows {
		for _, a := range list {
			follows[name] = append(follows[name], a.ID)
		}
	}
	vis := audience.NewVisibility(follows)
	r.transport = vis.Observe(r.transport)
	dl := audience.NewDeliveries(st.followers)
	st.stats.Seconds = time.Since(st.start).Seconds()

	// The crowd's inboxes, live: every Create that arrives.
	streamCtx, stopStream := context.WithCancel(context.WithoutCancel(ctx))
	var streamDone sync.WaitGroup
	if st.env.admin != nil && len(st.followers) > 0 {
		stream, err := st.env.admin.Stream(streamCtx, adminapi.StreamQuery{Filter: adminapi.Filter{Type: "Create", Direction: adminapi.DirIn}})
		if err != nil {
			stopStream()
			return fmt.Errorf("following the crowd's activity log: %w", err)
		}
		streamDone.Go(func() {
			defer stream.Close()
			stream.Read(func(ev adminapi.Event) error {
				if ev.Lost > 0 {
					dl.Lost(ev.Lost)
				}
				e := ev.Entry
				if e.Verdict == adminapi.VerdictAccepted {
					dl.Arrived(audience.Arrival{Time: e.Time, Inbox: e.URL, ID: e.ID, Object: e.Object})
				}
				return nil
			})
		})
	}
	defer func() {
		stopStream()
		streamDone.Wait()
	}()

	targets := make([]audience.ProbeTarget, len(st.personas))
	for i, p := range st.personas {
		targets[i] = audience.ProbeTarget{Persona: p.Name, Token: p.Token}
	}
	prober := &audience.Prober{Client: st.client, Targets: targets, Hz: st.f.probeHz, OnSeen: vis.Seen}

	// During the flood: probes and posts.
	fctx, stopFlood := context.WithCancel(ctx)
	homeDone := make(chan audience.HomeStats, 1)
	go func() { homeDone <- prober.Run(fctx) }()
	var posting sync.WaitGroup
	if st.f.postEvery > 0 {
		for i, p := range st.personas {
			posting.Go(func() { st.post(fctx, p, i, dl) })
		}
	}
	err := run(ctx)
	floodEnd := time.Now()
	stopFlood()
	posting.Wait()
	home := <-homeDone

	// The drain: probe on until every accepted note is visible and every
	// post delivered, or the bound.
	drainEnd := floodEnd
	if ctx.Err() == nil && st.f.drainTimeout > 0 && (vis.Outstanding() > 0 || dl.Outstanding() > 0) {
		st.log.Info("draining", zap.Int("notes_not_visible", vis.Outstanding()), zap.Int("deliveries_not_seen", dl.Outstanding()),
			zap.Duration("bound", st.f.drainTimeout))
		dctx, stop := context.WithTimeout(ctx, st.f.drainTimeout-time.Since(floodEnd))
		done := make(chan struct{})
		go func() { prober.Run(dctx); close(done) }()
		tick := time.NewTicker(50 * time.Millisecond)
		for dctx.Err() == nil && (vis.Outstanding() > 0 || dl.Outstanding() > 0) {
			select {
			case <-dctx.Done():
			case <-tick.C:
			}
		}
		tick.Stop()
		drainEnd = time.Now()
		stop()
		<-done
	}
	stopStream()
	streamDone.Wait()
	// Notes no probe saw may be in the home below the newest page: a bounded
	// read deeper tells "there, buried" from "never there".
	var sweep *audience.SweepStats
	if ctx.Err() == nil && vis.Outstanding() > 0 {
		tokens := map[string]string{}
		for _, p := range st.personas {
			tokens[p.Name] = p.Token
		}
		// As long again as the drain may take: a SUT slow enough to leave
		// notes unseen reads its homes slowly too.
		sctx, stop := context.WithTimeout(ctx, max(10*time.Second, st.f.drainTimeout))
		s := audience.Sweep(sctx, st.client, tokens, vis, audience.SweepOptions{})
		stop()
		sweep = &s
	}

	path := ""
	if r.file != nil {
		path = r.file.Path()
	}
	if path == "" {
		return err // the flood wrote no record: nothing to add to
	}
	frec, lerr := record.LoadRecord(path)
	if lerr != nil {
		return errors.Join(err, fmt.Errorf("reading back the flood's record: %w", lerr))
	}
	section := &audience.RunSection{Schema: audience.RunSchema, Version: audience.RunVersion, SUT: st.client.Base(),
		Follows: st.f.follows, Followers: st.f.followers, ProbeHz: st.f.probeHz, Setup: st.stats, Home: home,
		Delivery: dl.Summary(), Sweep: sweep}
	for _, p := range st.personas {
		section.Personas = append(section.Personas, p.Acct)
	}
	// The drain runs from the flood's last answer, as its record says
	// (run returned a little later: the record was written first).
	if !frec.End.IsZero() && frec.End.Before(floodEnd) {
		floodEnd = frec.End
	}
	section.Visibility, section.Drain = vis.Summary(floodEnd, drainEnd, st.f.drainTimeout)
	notes := audience.NotesPath(path)
	if werr := audience.WriteNotes(notes, vis.Notes()); werr != nil {
		st.log.Warn("writing the notes log", zap.String("path", notes), zap.Error(werr))
	} else {
		section.NotesFile = filepath.Base(notes)
	}
	rec := &audience.Record{Record: frec, Run: section}
	if werr := audience.WriteRecord(path, rec); werr != nil {
		return errors.Join(err, fmt.Errorf("writing the run record to %s: %w", path, werr))
	}
	if werr := audience.AppendRow(filepath.Dir(path), rec, filepath.Base(path)); werr != nil {
		return errors.Join(err, fmt.Errorf("adding the run to %s: %w", audience.RunsFile, werr))
	}
	fmt.Fprintln(st.stdout)
	if werr := audience.WriteSummary(st.stdout, section); werr != nil {
		return werr
	}
	fmt.Fprintf(st.stdout, "run record: %s\n", path)
	return err
}

// post makes persona p post every --post-every until ctx ends, the i-th
// persona offset by i/n of the period so the posts spread.
func (st *runState) post(ctx context.Context, p audience.Persona, i int, dl *audience.Deliveries) {
	every := st.f.postEvery
	next := time.Now().Add(every * time.Duration(i) / time.Duration(len(st.personas)))
	for k := st.f.posts + 1; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		s, err := st.client.PostStatus(ctx, p.Token, audience.PostText(p.Name, k), "public")
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			dl.PostFailed()
			st.log.Debug("a post during the run failed", zap.String("persona", p.Name), zap.Error(err))
		} else {
			dl.Posted(p.Name, s)
		}
		next = next.Add(every)
	}
}
