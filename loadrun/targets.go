package loadrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
)

// client is the run's guarded client for everything but the flood's sends
// (discovery, the audience's client API): the dial guard that refuses
// public targets, roots that trust the crowd's CA, a bound per request.
func (r *runner) client(timeout time.Duration, perHost int) *http.Client {
	return &http.Client{Timeout: timeout, Transport: fromOrigins(&http.Transport{
		DialContext: r.guard.DialContext, TLSClientConfig: r.tls.Clone(), ForceAttemptHTTP2: true, // a copy: enabling HTTP/2 adds "h2" to it
		MaxIdleConnsPerHost: perHost, TLSHandshakeTimeout: 10 * time.Second}, r.env.Plan)}
}

// refusePublic makes a refused public target a usage error.
func refusePublic(err error) error {
	if errors.Is(err, flood.ErrPublicTarget) {
		return usage(err)
	}
	return err
}

// resolveHint is what a lookup of one of the crowd's own names that
// failed tells to do: this machine's resolver does not know the crowd's
// names unless its DNS is in resolv.conf, and the crowd's HTTPS listener
// was not there to send to (none, or it did not answer from here).
func (env *Environment) resolveHint() string {
	hint := "pass --crowd-https with where the crowd serve's HTTPS listener (its --https) answers from here"
	if env.unreached != "" {
		hint = env.unreached + ": " + hint
	}
	return hint + ", start the crowd with its DNS in this machine's resolv.conf, or use --standalone"
}

// refuseUnresolved makes a crowd's own name this machine cannot resolve a
// usage error, as a public target is: the flood is set up wrong, nothing
// was sent, and the error names the flag that mends it (exit 2, not the 1
// of a missed gate). An interrupted lookup stays an interruption; one
// that timed out is still the resolver not knowing the name.
func refuseUnresolved(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return usage(err)
}

// noAnswerSaid is err, a request of the run's that got no answer, with
// the reason a flood's record would give it (flood.NoAnswerReason) when
// the error's own words do not already say it: "context deadline
// exceeded" is a timeout past --timeout, an x509 error a certificate the
// crowd does not accept.
func noAnswerSaid(err error, timeout time.Duration) error {
	reason := flood.NoAnswerReason(err)
	if strings.Contains(err.Error(), reason) {
		return err
	}
	if reason == record.NoAnswerTimeout {
		reason += " (--timeout " + timeout.String() + ")"
	}
	return fmt.Errorf("%w (no answer: %s)", err, reason)
}

// unknownNameHint is err, a check of a persona's host, with where to
// make the name known when this machine's resolver does not know it.
func unknownNameHint(err error, host string) error {
	if dnsErr := (*net.DNSError)(nil); errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return fmt.Errorf("%w (the flood looks personas' hosts up with this machine's resolver: run it where %s resolves, as a compose network, the crowd's DNS with --dns-record in resolv.conf, or /etc/hosts make it)", err, host)
	}
	return err
}

// otherShards refuses host when it is an origin of the crowd's world that
// another shard serves: this crowd (what) cannot answer for it, and the
// machine's resolver would only be asked a name it does not know.
func otherShards(c actors.Config, host, what string) error {
	n, ok := c.OriginNumber(host)
	if !ok || n < 1 || n > c.Origins || c.Shard.Has(n) {
		return nil
	}
	return fmt.Errorf("%s is an origin of shard %d/%d of the crowd's world, and %s serves shard %s (%s): flood a persona of its origins, or attach to the crowd serving %s",
		host, (n-1)%c.Shard.N, c.Shard.N, what, c.Shard, strings.Join(c.Hosts(), ", "), host)
}

// targets returns the personas to flood and a description for the record:
// the named ones, checked and looked up, or the crowd's own actors.
func (r *runner) targets(ctx context.Context) ([]*traffic.Persona, string, error) {
	env, p := r.env, r.p
	if len(p.accts) == 0 {
		personas := traffic.WorldPersonas(env.World, p.inbox)
		for _, o := range env.World.Origins {
			if _, err := r.guard.Check(ctx, o.Host); err != nil {
				return nil, "", refuseUnresolved(fmt.Errorf("self-flood of %s: %w (%s)", env.What, err, env.resolveHint()))
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
		if err := otherShards(env.World.Config, host, env.What); err != nil {
			return nil, "", usage(fmt.Errorf("persona %s: %w", a, err))
		}
		if _, err := r.guard.Check(ctx, host); err != nil {
			if _, own := env.World.Origin(host); own {
				return nil, "", refuseUnresolved(fmt.Errorf("persona %s: %w (one of the crowd's own: %s)", a, err, env.resolveHint()))
			}
			return nil, "", refusePublic(fmt.Errorf("persona %s: %w", a, unknownNameHint(err, host)))
		}
	}
	client := r.client(r.c.Timeout, 16)
	defer client.CloseIdleConnections()
	inst := env.World.Origins[0].Instance
	start := time.Now()
	personas, warns, err := traffic.Discover(ctx, p.accts, traffic.DiscoverOptions{Client: client, Signer: r.signer,
		KeyID: inst.KeyID, Key: inst.SigningKey(), Inbox: p.inbox, Timeout: r.c.Timeout})
	for _, w := range warns {
		r.log.Warn(w)
	}
	if err != nil {
		return nil, "", refusePublic(fmt.Errorf("discovering the personas: %w", noAnswerSaid(err, r.c.Timeout)))
	}
	for _, ps := range personas {
		if err := r.guard.CheckURL(ctx, ps.Target); err != nil {
			return nil, "", refusePublic(fmt.Errorf("persona %s: inbox %s: %w", ps.Acct, ps.Target, err))
		}
	}
	r.log.Info("personas discovered", zap.Int("personas", len(personas)), zap.Duration("took", time.Since(start)))
	noun := "personas"
	if len(personas) == 1 {
		noun = "persona"
	}
	desc := fmt.Sprintf("%d %s (%s", len(personas), noun, personas[0].Acct)
	if len(personas) > 1 {
		desc += " … " + personas[len(personas)-1].Acct
	}
	return personas, desc + "), inbox " + string(p.inbox), nil
}
