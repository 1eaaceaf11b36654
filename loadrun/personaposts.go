package loadrun

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/audience"
	"github.com/crowdfed/crowd/flood/traffic"
)

// PersonaPostsConfig lets a flood post, through the SUT's Mastodon client
// API, for each persona that has no post yet, so Likes (and, later,
// Announces and replies) have something to point at; `crowd run`'s
// set-up posts --posts itself.
type PersonaPostsConfig struct {
	// Tokens are NAME=TOKEN (--post-token): a bearer token of the client
	// API for persona NAME. A persona without one keeps no post (and gets
	// no Likes, as a deviation of the record says).
	Tokens []string
	// ClientAPI is the client API's base URL (--post-api; "" =
	// https://<the persona's host>).
	ClientAPI string
}

// tokens reads the --post-token flags; the error names the flag.
func (p PersonaPostsConfig) tokens() (map[string]string, error) {
	out := map[string]string{}
	for _, s := range p.Tokens {
		name, tok, err := audience.ParseTokenArg(s)
		if err != nil {
			return nil, fmt.Errorf("--post-token %q: %v", s, err)
		}
		out[name] = tok
	}
	if p.ClientAPI != "" {
		if _, err := audience.NewClient(p.ClientAPI, nil, ""); err != nil {
			return nil, fmt.Errorf("--post-api: %v", err)
		}
	}
	return out, nil
}

// postForEmpty posts once for each persona that has no post and a token,
// through the SUT's client API, and takes the post's id as the persona's
// post: the Likes drawn for it then have an object. A `crowd run` has a
// token for every persona (its audience's), so none of its personas is
// left without a post, whatever --posts says.
func (r *runner) postForEmpty(ctx context.Context, personas []*traffic.Persona) error {
	tokens, api, err := r.clientTokens()
	if err != nil || len(tokens) == 0 {
		return err
	}
	r.warnUnusedTokens(tokens, personas)
	for _, ps := range personas {
		name, _, _ := strings.Cut(ps.Acct, "@")
		tok, ok := tokens[name]
		if len(ps.Posts) > 0 || !ok {
			continue
		}
		base := clientAPI(api, ps.Acct)
		c, err := r.clientAt(base)
		if err != nil {
			return err
		}
		st, err := c.PostStatus(ctx, tok, audience.PostText(name, 1), "public")
		if err != nil {
			return fmt.Errorf("%s has no post, and posting one through the client API at %s failed: %w", ps.Acct, base, err)
		}
		ps.Posts = append(ps.Posts, st.URI)
		r.log.Info("posted for a persona that had none", zap.String("persona", ps.Acct), zap.String("post", st.URI))
	}
	return nil
}

// warnUnusedTokens warns of each --post-token whose name is no persona's
// (a typo, or a token list kept for a larger run): that persona's token
// posts nothing and judges no forgery. A warning, not a refusal, so that one
// token list serves runs over subsets of its personas.
func (r *runner) warnUnusedTokens(tokens map[string]string, personas []*traffic.Persona) {
	names := map[string]bool{}
	for _, ps := range personas {
		name, _, _ := strings.Cut(ps.Acct, "@")
		names[name] = true
	}
	var unused []string
	for name := range tokens {
		if !names[name] {
			unused = append(unused, name)
		}
	}
	if len(unused) == 0 {
		return
	}
	slices.Sort(unused)
	r.log.Warn("--post-token names no persona of this flood: its token is not used",
		zap.Strings("names", unused), zap.Int("personas", len(personas)))
}

// clientAPI is the client API that serves the persona acct: --post-api
// when given, else the persona's own host.
func clientAPI(api, acct string) string {
	if api != "" {
		return api
	}
	_, host, _ := strings.Cut(acct, "@")
	return "https://" + host
}

// clientAt is a client of the SUT's client API at base (--post-api, or a
// persona's host); a base that is no URL is a usage error naming the flag.
func (r *runner) clientAt(base string) (*audience.Client, error) {
	c, err := audience.NewClient(base, r.client(r.c.Timeout, 4), r.c.UserAgent)
	if err != nil {
		return nil, usage(fmt.Errorf("--post-api: %w", err))
	}
	return c, nil
}
