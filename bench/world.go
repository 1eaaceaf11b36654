package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// benchDomain is the host pattern of the bench's worlds, the default
// world's.
const benchDomain = "flood%d.test"

// worldDir is where the keys of a world of origins × actors live under
// the bench's -state: one directory per shape, so a larger world never
// reuses (or disturbs) a smaller one's files.
func worldDir(state string, origins, nactors int) string {
	return filepath.Join(state, fmt.Sprintf("o%d-a%d", origins, nactors))
}

// openWorld opens (generating missing keys, as `crowd serve` would) the
// world of origins × actors whose state is dir. Its follow graph stays in
// memory: nothing the bench sends changes it. Its actors sign, and an inbox
// over it verifies, with backend (nil: Go's crypto/rsa).
func openWorld(dir string, origins, nactors int, backend signing.Backend) (*actors.World, error) {
	return actors.Open(actors.Config{Origins: origins, Actors: nactors, Domain: benchDomain, StateDir: dir, EphemeralGraph: true,
		Backend: backend})
}

// newSigner is the signer of every request the bench sends: the
// defaults (rsa-sha256) and a real User-Agent, as `crowd flood` uses.
func newSigner() *signing.Signer {
	return signing.NewSigner(signing.SignerOptions{UserAgent: "crowd-bench/dev (+https://github.com/crowdfed/crowd)"})
}

// newGenerator draws activities of mix from the world's actors to the
// world's actors (a self-flood's shape), each posted to target(persona).
func newGenerator(world *actors.World, mix string, target func(*traffic.Persona) string) (*traffic.Generator, error) {
	m, err := record.ParseMix(mix)
	if err != nil {
		return nil, err
	}
	personas := traffic.WorldPersonas(world, traffic.InboxShared)
	for _, p := range personas {
		p.Target = target(p)
	}
	return traffic.NewGenerator(traffic.GeneratorConfig{SenderSet: traffic.WorldSenders(world), Personas: personas, Mix: m, Seed: 1})
}

// sinkTarget posts everything to the null sink at addr.
func sinkTarget(addr string) func(*traffic.Persona) string {
	return func(*traffic.Persona) string { return "http://" + addr + "/inbox" }
}

// sharedInboxTarget posts to the persona's origin's shared inbox over
// plain HTTP (the client dials the listener under test whatever the host).
func sharedInboxTarget(p *traffic.Persona) string {
	return "http://" + actors.HostOf(p.ID) + "/inbox"
}

// sinkPool is the presigned rows' pool: -pool requests of the bench's
// mix from its world to the null sink, presigned (presignPool), and how
// long that took.
func (b *bench) sinkPool(ctx context.Context) ([]*flood.Prepared, time.Duration, error) {
	gen, err := newGenerator(b.world, b.cfg.Mix, sinkTarget(b.sinkAddr))
	if err != nil {
		return nil, 0, err
	}
	return presignPool(ctx, gen, b.cfg.Pool)
}

// presignPool signs n requests of gen with traffic.Presign (the shipped
// presigning) and returns them in order, for replaying round robin.
func presignPool(ctx context.Context, gen *traffic.Generator, n int) ([]*flood.Prepared, time.Duration, error) {
	ps, err := traffic.Presign(ctx, gen, newSigner(), int64(n), traffic.PresignOptions{Window: 30 * time.Minute})
	if err != nil {
		return nil, 0, err
	}
	pool := make([]*flood.Prepared, 0, ps.Len())
	for {
		p, err := ps.Next(ctx)
		if err != nil {
			break
		}
		pool = append(pool, p)
	}
	return pool, ps.Took, nil
}

// cycle is a Source replaying a presigned pool round robin: what
// traffic.Presigned does (hand out the next ready request) without needing
// rate × trial signatures per trial. It never ends; the plan's Duration
// bounds the run.
type cycle struct {
	reqs []*flood.Prepared
	next int
}

// NextReady is true: Next never waits (flood.NextReady).
func (c *cycle) NextReady() bool { return true }

// AlwaysReady is true: the requests were presigned (flood.AlwaysReady).
func (c *cycle) AlwaysReady() bool { return true }

// Next returns the next request of the pool, or ctx's error.
func (c *cycle) Next(ctx context.Context) (*flood.Prepared, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := c.reqs[c.next]
	c.next++
	if c.next == len(c.reqs) {
		c.next = 0
	}
	return p, nil
}
