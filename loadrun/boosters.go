package loadrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/audience"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
)

// boosterFollowTimeout bounds the wait for the Accepts of the personas'
// follows of the boosters: a SUT that never accepts must not hold the flood.
const boosterFollowTimeout = time.Minute

// followBoosters has each persona with a client-API token (--post-token)
// follow its share of the crowd's actors before a flood with Announces, so
// every one that may boost has a local follower: Mastodon keeps a boost of
// a post not its own only from such an account. crowd run's audience does
// this in its own set-up; without a token nothing is done (docs/vocabulary.md
// says what the SUT then drops).
func (r *runner) followBoosters(ctx context.Context, targets []*traffic.Persona) (*record.Boosters, error) {
	if r.p.mix.Announce == 0 || r.p.audience != nil {
		return nil, nil
	}
	tokens, api, err := r.clientTokens()
	if err != nil || len(tokens) == 0 {
		return nil, err
	}
	crowd := make([]audience.CrowdActor, 0, r.env.World.NumPersons())
	for _, a := range r.env.World.Actors() {
		crowd = append(crowd, audience.CrowdActor{ID: a.ID, Acct: a.Acct()})
	}
	// The personas by the client API that serves them (--post-api, or each one's host).
	byBase := map[string][]audience.Persona{}
	for _, t := range targets {
		acct := t.Acct
		name, _, _ := strings.Cut(acct, "@")
		tok, ok := tokens[name]
		if !ok {
			continue
		}
		base := clientAPI(api, acct)
		byBase[base] = append(byBase[base], audience.Persona{Name: name, Acct: acct, Token: tok})
	}
	out := &record.Boosters{Actors: len(crowd)}
	sctx, cancel := context.WithTimeout(ctx, boosterFollowTimeout)
	defer cancel()
	var res []audience.FollowResult
	for base, personas := range byBase {
		c, err := r.clientAt(base)
		if err != nil {
			return nil, err
		}
		for i, p := range personas {
			_, host, _ := strings.Cut(p.Acct, "@")
			if personas[i], err = audience.CheckPersona(ctx, c, host, p.Name, p.Token); err != nil {
				return nil, err
			}
		}
		got, err := audience.FollowShares(sctx, c, personas, audience.FollowsCovering(len(personas), len(crowd)), crowd,
			audience.FollowOptions{Progress: func(s string) { r.log.Info(s) }})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("following the boosters through the client API at %s: %w", base, err)
		}
		res = append(res, got...)
		out.Personas += len(personas)
	}
	if out.Personas == 0 {
		return nil, nil
	}
	out.Followed = audience.Followed(res)
	r.c.Show.note(r.c.Stderr, "boosters: %d of the %d crowd actors that may boost are followed by a persona (%d with a token), so the SUT keeps their boosts",
		out.Followed, out.Actors, out.Personas)
	if out.Followed < out.Actors {
		r.log.Warn("not every booster's follow was accepted in time: a server like Mastodon drops the boosts of the others' posts not its own",
			zap.Int("followed", out.Followed), zap.Int("boosters", out.Actors))
	}
	return out, nil
}
