package loadrun

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/audience"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
)

// clientTokens are the personas' client-API tokens by local name and the
// API's base URL ("": https://<the persona's host>): the audience's in a
// `crowd run`, else --post-token's and --post-api.
func (r *runner) clientTokens() (map[string]string, string, error) {
	if a := r.p.audience; a != nil {
		return a.tokens, a.api, nil
	}
	tokens, err := r.c.PersonaPosts.tokens()
	return tokens, r.c.PersonaPosts.ClientAPI, err
}

// judgeForgeries gives the SUT --forgery-settle from ended, the flood's
// end, to process the forgeries it answered 2xx, then looks for each one's
// effect through its client API as the persona it targeted, and writes the
// verdicts into rec's security section. Without a token they stay
// "accepted, effect unknown", as the section then says.
func (r *runner) judgeForgeries(ctx context.Context, rec *record.Record, ended time.Time) {
	if rec == nil || rec.Security == nil || rec.Security.Total().Accepted == 0 || r.p.scenario == nil {
		return
	}
	tokens, api, err := r.clientTokens()
	if err != nil {
		r.log.Warn("the personas' tokens could not be read: the effects of the forgeries answered 2xx stay unknown", zap.Error(err))
		return
	}
	if len(tokens) == 0 {
		return
	}
	marks := r.forg.Accepted()
	settle := r.p.scenario.settle
	r.c.Show.note(r.c.Stderr, "looking for the effects of %d forged request(s) answered 2xx, %v after the flood (--forgery-settle)", len(marks), settle)
	t := time.NewTimer(time.Until(ended.Add(settle)))
	select {
	case <-ctx.Done():
		t.Stop()
		return
	case <-t.C:
	}
	byBase := map[string][]audience.ForgeryProbe{}
	for _, m := range marks {
		base := clientAPI(api, m.Persona)
		byBase[base] = append(byBase[base], probeOf(m))
	}
	bases := make([]string, 0, len(byBase))
	for b := range byBase {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	lookup := &record.EffectLookup{Via: "the Mastodon client API at " + strings.Join(bases, ", "), SettleSeconds: settle.Seconds()}
	for _, base := range bases {
		c, err := r.clientAt(base)
		if err != nil {
			lookup.Unread = append(lookup.Unread, err.Error())
			continue
		}
		verdicts, unread := audience.EffectLookup{Client: c, Tokens: tokens}.Look(ctx, byBase[base])
		for _, v := range verdicts {
			rec.Security.Judge(v.Activity, v.Effect, v.Where)
		}
		lookup.Unread = append(lookup.Unread, unread...)
	}
	lookup.Unread = lookup.Unread[:min(len(lookup.Unread), record.MaxUnread)]
	rec.Security.Effects = lookup
}

// probeOf is what the look-up looks for of a forgery.
func probeOf(m traffic.ForgeryMark) audience.ForgeryProbe {
	return audience.ForgeryProbe{Activity: m.Activity, Type: string(m.Type), Actor: m.Actor, Object: m.Object, Persona: m.Persona, Marker: m.Marker}
}
