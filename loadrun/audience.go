package loadrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/audience"
)

// audienceObserver is `crowd run`'s audience as an Observer: set up on
// the SUT before the flood, probing and posting during it, drained and
// swept after it; its "run" section is added to the record.
type audienceObserver struct {
	p      *audiencePlan
	cfg    AudienceConfig
	log    *zap.Logger
	public bool // AllowPublic, for the crowd's Follows of the personas
	boosts bool // the mix has Announces: every crowd actor gets a local follower first
	stdout io.Writer

	env       *Environment
	client    *audience.Client
	personas  []audience.Persona
	start     time.Time                        // the set-up's
	follows   map[string][]audience.CrowdActor // persona → crowd actors it follows (accepted)
	followers map[string][]audience.CrowdActor // persona → crowd actors that follow it (sent)
	stats     audience.SetupStats
	watch     *watch // while the flood runs
}

func newAudience(p *audiencePlan, c Config, log *zap.Logger) *audienceObserver {
	return &audienceObserver{p: p, cfg: p.cfg, log: log, public: c.AllowPublic, stdout: c.Stdout}
}

// setupInterrupted is the set-up stopped by the run's context.
func setupInterrupted() error { return fmt.Errorf("%w during the set-up", ErrInterrupted) }

// Setup checks the SUT and the personas, makes each persona follow its
// share of the crowd and post, and has crowd actors follow the personas.
func (a *audienceObserver) Setup(ctx context.Context, s Setup) error {
	a.start = time.Now()
	a.env = s.Env
	if err := s.Guard.CheckURL(ctx, a.p.api); err != nil {
		if a.cfg.ClientAPI == "" {
			// The default, from the personas' host: name where it came from.
			return refusePublic(fmt.Errorf("the SUT's client API %s (the personas' host; --client-api to give another): %w", a.p.api, err))
		}
		return refusePublic(fmt.Errorf("--client-api %s: %w", a.p.api, err))
	}
	c, err := audience.NewClient(a.p.api, s.Client, s.UserAgent)
	if err != nil {
		return usage(err)
	}
	a.client = c
	in, err := audience.CheckSUT(ctx, c)
	if err != nil {
		return err
	}
	a.log.Info("the SUT's client API", zap.String("at", c.Base()), zap.String("uri", in.URI), zap.String("version", in.Version))
	for _, name := range a.p.names {
		p, err := audience.CheckPersona(ctx, c, a.p.host, name, a.p.tokens[name])
		if err != nil {
			return err
		}
		a.personas = append(a.personas, p)
	}
	var crowd []audience.CrowdActor
	for _, ac := range s.Env.World.Actors() {
		crowd = append(crowd, audience.CrowdActor{ID: ac.ID, Acct: ac.Acct()})
	}
	sctx, cancel := context.WithTimeout(ctx, a.cfg.SetupTimeout)
	defer cancel()
	if err := a.followCrowd(ctx, sctx, crowd); err != nil {
		return err
	}
	if err := a.post(ctx); err != nil {
		return err
	}
	return a.followPersonas(ctx, sctx, crowd)
}

// followCrowd makes each persona follow its share of the crowd and waits
// (within sctx) for the Accepts.
func (a *audienceObserver) followCrowd(ctx, sctx context.Context, crowd []audience.CrowdActor) error {
	follows := a.cfg.Follows
	if a.boosts {
		// Mastodon keeps a boost of a post not its own only from an
		// account a local one follows: every crowd actor may boost.
		follows = max(follows, audience.FollowsCovering(len(a.personas), len(crowd)))
	}
	res, err := audience.FollowShares(sctx, a.client, a.personas, follows, crowd, audience.FollowOptions{Progress: func(s string) { a.log.Info(s) }})
	if errors.Is(err, audience.ErrShares) {
		return usage(err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return setupInterrupted()
		}
		return fmt.Errorf("setting up the audience: %w", err)
	}
	a.follows = map[string][]audience.CrowdActor{}
	for _, r := range res {
		a.follows[r.Persona] = r.Accepted
		a.stats.FollowsRequested += len(r.Requested)
		a.stats.FollowsAccepted += len(r.Accepted)
	}
	if a.boosts {
		a.stats.Boosters, a.stats.BoostersFollowed = len(crowd), audience.Followed(res)
	}
	if a.stats.FollowsAccepted < a.stats.FollowsRequested {
		a.log.Warn("not every follow was accepted within --setup-timeout: the notes of the others are not owed to the homes",
			zap.Int("accepted", a.stats.FollowsAccepted), zap.Int("requested", a.stats.FollowsRequested))
	}
	return nil
}

// post makes the posts the crowd will like: made now, so the flood finds
// them in the personas' outboxes.
func (a *audienceObserver) post(ctx context.Context) error {
	for _, p := range a.personas {
		for k := 1; k <= a.cfg.Posts; k++ {
			if _, err := a.client.PostStatus(ctx, p.Token, audience.PostText(p.Name, k), "public"); err != nil {
				return fmt.Errorf("%s could not post: %w", p.Name, err)
			}
			a.stats.Posts++
		}
	}
	return nil
}

// followPersonas has crowd actors follow the personas, through the
// crowd's admin API: the SUT delivers the personas' posts to them.
func (a *audienceObserver) followPersonas(ctx, sctx context.Context, crowd []audience.CrowdActor) error {
	a.followers = map[string][]audience.CrowdActor{}
	admin := a.env.Admin
	if a.cfg.Followers > 0 && admin == nil {
		a.log.Warn("no admin API of the crowd: no crowd actor follows the personas, deliveries are not measured")
		return nil
	}
	fans, err := audience.AssignFollowers(len(a.personas), a.cfg.Followers, crowd)
	if err != nil {
		return usage(err)
	}
	rel, err := crowdRelations(ctx, admin)
	if err != nil {
		return err
	}
	fanPlans := make([]audience.FollowPlan, len(a.personas))
	for i, p := range a.personas {
		fanPlans[i].Persona = &a.personas[i]
		if fanPlans[i].Actors, err = a.fanFollow(ctx, p, fans[i], rel); err != nil {
			return err
		}
		a.stats.CrowdFollowsRequested += len(fanPlans[i].Actors)
	}
	fanned, err := audience.WaitFollowers(sctx, a.client, fanPlans, audience.FollowOptions{Progress: func(s string) { a.log.Info(s) }})
	if err != nil {
		return fmt.Errorf("setting up the audience: %w", err)
	}
	if ctx.Err() != nil {
		return setupInterrupted()
	}
	for i, p := range a.personas {
		a.followers[p.Name] = fanned[i]
		a.stats.CrowdFollowsAccepted += len(fanned[i])
	}
	if a.stats.CrowdFollowsAccepted < a.stats.CrowdFollowsRequested {
		a.log.Warn("not every crowd Follow of a persona was accepted within --setup-timeout: their deliveries are not expected",
			zap.Int("accepted", a.stats.CrowdFollowsAccepted), zap.Int("requested", a.stats.CrowdFollowsRequested))
	}
	return nil
}

// fanFollow sends the Follows of persona p by fans, but for those that
// follow it since an earlier run: a second Follow would be a new request
// for a relation the SUT already has (GoToSocial answers it 500).
func (a *audienceObserver) fanFollow(ctx context.Context, p audience.Persona, fans []audience.CrowdActor,
	rel func(local, remote string) string) ([]audience.CrowdActor, error) {
	admin := a.env.Admin
	lr, err := admin.Lookup(ctx, adminapi.LookupQuery{Resource: "acct:" + p.Acct, AllowPublicTarget: a.public})
	if err != nil {
		return nil, fmt.Errorf("looking up %s through the crowd: %w", p.Acct, err)
	}
	var sent []audience.CrowdActor
	for _, f := range fans {
		if lr.URL != "" && rel(f.ID, lr.URL) == adminapi.StateAccepted {
			sent = append(sent, f)
			continue
		}
		out, err := admin.Send(ctx, adminapi.SendRequest{From: f.Acct, Type: "Follow", To: "acct:" + p.Acct,
			AllowPublicTarget: a.public})
		if err == nil && (out.Status < 200 || out.Status > 299) {
			err = fmt.Errorf("the SUT answered %d %s", out.Status, strings.TrimSpace(out.Body))
		}
		if err != nil {
			return nil, fmt.Errorf("the crowd's %s could not follow %s: %w", f.Acct, p.Acct, err)
		}
		sent = append(sent, f)
	}
	return sent, nil
}
