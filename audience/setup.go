package audience

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Persona is one member of the SUT the audience acts as.
type Persona struct {
	Name    string  // local user name, e.g. "load0"
	Acct    string  // name@host, e.g. "load0@sut.test"
	Token   string  // bearer token of the client API
	Account Account // the persona's account, as verify_credentials answered it
}

// CheckSUT asks the SUT for its instance (GET /api/v1/instance): an error
// that says so when the SUT has no Mastodon client API at c's base.
func CheckSUT(ctx context.Context, c *Client) (Instance, error) {
	in, err := c.Instance(ctx)
	if errors.Is(err, ErrNoClientAPI) {
		detail := "GET /api/v1/instance answered no instance"
		var ae *APIError
		if errors.As(err, &ae) {
			detail = ae.Error()
		}
		return in, noAPIError{base: c.Base(), detail: detail}
	}
	if err != nil {
		return in, fmt.Errorf("the SUT's client API at %s: %w", c.Base(), err)
	}
	return in, nil
}

// noAPIError is CheckSUT's error for a SUT without the client API.
type noAPIError struct{ base, detail string }

func (e noAPIError) Error() string {
	return fmt.Sprintf("the SUT has no Mastodon client API at %s (%s): crowd run drives its personas through it; "+
		"if it is served elsewhere, point --client-api there", e.base, e.detail)
}

// Unwrap is ErrNoClientAPI.
func (e noAPIError) Unwrap() error { return ErrNoClientAPI }

// CheckPersona checks that persona name exists on the SUT (host, for
// messages) and that token acts as it, and returns it. Its errors say
// which: the persona does not exist, the token was refused (401), the
// token belongs to another account, or the account is locked. The lookup is tried without the token
// first (Mastodon answers it for anyone), so an unknown persona is told
// apart from a bad token; a server that wants a token there gets it.
func CheckPersona(ctx context.Context, c *Client, host, name, token string) (Persona, error) {
	p := Persona{Name: name, Acct: name + "@" + host, Token: token}
	_, err := c.Lookup(ctx, "", name)
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrForbidden) {
		_, err = c.Lookup(ctx, token, name)
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return p, fmt.Errorf("persona %s does not exist on %s (%v): create it on the SUT, or run fewer personas", name, host, err)
	case errors.Is(err, ErrUnauthorized):
		return p, fmt.Errorf("the token for %s was refused (401): %v", name, err)
	case err != nil:
		return p, fmt.Errorf("looking up persona %s: %w", name, err)
	}
	acc, err := c.VerifyCredentials(ctx, token)
	switch {
	case errors.Is(err, ErrUnauthorized):
		return p, fmt.Errorf("the token for %s was refused (401): %v", name, err)
	case err != nil:
		return p, fmt.Errorf("checking the token for %s: %w", name, err)
	case !strings.EqualFold(acc.Username, name):
		return p, fmt.Errorf("the token for %s acts as %s, another account: give %s its own token", name, cmpString(acc.Acct, acc.Username), name)
	case acc.Locked:
		// A locked account holds every Follow for its owner's approval: the
		// crowd's followers and the flood's Follows would wait forever, and
		// its posts would reach no crowd inbox. GoToSocial creates accounts
		// locked.
		return p, fmt.Errorf("persona %s is locked (follow requests wait for approval), so the crowd could not follow it: unlock it in its settings, "+
			"or with PATCH /api/v1/accounts/update_credentials locked=false", p.Acct)
	}
	p.Account = acc
	return p, nil
}

func cmpString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// FollowPlan is one persona and the crowd actors it is to follow.
type FollowPlan struct {
	Persona *Persona
	Actors  []CrowdActor
}

// FollowResult is what became of one persona's follows.
type FollowResult struct {
	Persona   string
	Requested []CrowdActor // Follow sent through the client API
	Accepted  []CrowdActor // the relationship shows following=true
	ids       map[string]string
}

// FollowOptions tune Follow.
type FollowOptions struct {
	// Concurrency of the client-API calls; 0 = 8.
	Concurrency int
	// Poll is the period of the relationship checks while waiting for the
	// Accepts; 0 = 500 ms.
	Poll time.Duration
	// Progress, when set, hears what the set-up is doing.
	Progress func(string)
}

// withDefaults is o with each unset field at its default.
func (o FollowOptions) withDefaults() FollowOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	return o
}

// Follow makes each persona follow its crowd actors through the client API
// (look the actor up, resolving it on the SUT, then follow it) and waits
// until the relationships show following=true (the Accepts came) or ctx
// ends: the wait's bound. A failed lookup or follow ends the set-up with
// an error naming the persona and the actor; follows still not accepted
// when ctx ends are left out of Accepted, without an error.
func Follow(ctx context.Context, c *Client, plans []FollowPlan, o FollowOptions) ([]FollowResult, error) {
	o = o.withDefaults()
	res := make([]FollowResult, len(plans))
	total := 0
	for i, pl := range plans {
		res[i] = FollowResult{Persona: pl.Persona.Name, ids: map[string]string{}}
		total += len(pl.Actors)
	}
	o.Progress(fmt.Sprintf("%d personas follow %d crowd actors", len(plans), total))
	if err := requestFollows(ctx, c, plans, res, o.Concurrency); err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, awaitAccepts(ctx, c, plans, res, o)
}

// followJob is one Follow to send: plan i's persona follows a.
type followJob struct {
	i int
	a CrowdActor
}

// requestFollows sends every plan's Follows from conc workers and records
// each sent one in res (plan i's in res[i]); the first failure stops the
// rest and is the error.
func requestFollows(ctx context.Context, c *Client, plans []FollowPlan, res []FollowResult, conc int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan followJob)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for j := range jobs {
				id, err := followOne(ctx, c, plans[j.i].Persona, j.a)
				mu.Lock()
				switch {
				case err == nil:
					res[j.i].Requested = append(res[j.i].Requested, j.a)
					res[j.i].ids[j.a.ID] = id
				case firstErr == nil:
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i, pl := range plans {
		for _, a := range pl.Actors {
			select {
			case jobs <- followJob{i, a}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

// followOne looks crowd actor a up on the SUT as persona p (resolving it
// there) and follows it; it returns a's account id on the SUT.
func followOne(ctx context.Context, c *Client, p *Persona, a CrowdActor) (string, error) {
	acc, err := c.Lookup(ctx, p.Token, a.Acct)
	if err != nil {
		return "", fmt.Errorf("%s could not find %s on the SUT: %w", p.Name, a.Acct, err)
	}
	if _, err := c.Follow(ctx, p.Token, acc.ID); err != nil {
		return "", fmt.Errorf("%s could not follow %s: %w", p.Name, a.Acct, err)
	}
	return acc.ID, nil
}

// awaitAccepts polls the relationships every o.Poll until every follow in
// res shows following=true, filling each Accepted, or until ctx ends (not
// an error: the wait's bound).
func awaitAccepts(ctx context.Context, c *Client, plans []FollowPlan, res []FollowResult, o FollowOptions) error {
	for {
		waiting := 0
		for i := range res {
			acc, err := acceptedOf(ctx, c, plans[i].Persona, &res[i])
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%s's relationships: %w", plans[i].Persona.Name, err)
			}
			res[i].Accepted = acc
			waiting += len(res[i].Requested) - len(acc)
		}
		if waiting == 0 {
			return nil
		}
		o.Progress(fmt.Sprintf("waiting for %d Accepts", waiting))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Poll):
		}
	}
}

// acceptedOf reads persona p's relationships to its requested follows, 40
// ids a request, and returns those it follows.
func acceptedOf(ctx context.Context, c *Client, p *Persona, r *FollowResult) ([]CrowdActor, error) {
	byID := map[string]CrowdActor{}
	var ids []string
	for _, a := range r.Requested {
		id := r.ids[a.ID]
		byID[id] = a
		ids = append(ids, id)
	}
	var out []CrowdActor
	for len(ids) > 0 {
		n := min(len(ids), 40)
		rels, err := c.Relationships(ctx, p.Token, ids[:n])
		if err != nil {
			return nil, err
		}
		for _, rel := range rels {
			if a, ok := byID[rel.ID]; ok && rel.Following {
				out = append(out, a)
				delete(byID, rel.ID)
			}
		}
		ids = ids[n:]
	}
	return out, nil
}

// PostText is the text of a persona's k-th post of a run (1-based).
func PostText(persona string, k int) string {
	return fmt.Sprintf("crowd run: post %d by %s, for the crowd to like and to receive", k, persona)
}

// WaitFollowers waits until the SUT shows each persona followed by its
// crowd actors (plans: persona → the crowd actors that sent it a Follow):
// the persona's relationship to the actor's account says followed_by, the
// SUT's own word that it accepted the Follow. It returns, per plan, the
// actors that do by the time ctx ends (the wait's bound); a failed lookup
// is an error.
func WaitFollowers(ctx context.Context, c *Client, plans []FollowPlan, o FollowOptions) ([][]CrowdActor, error) {
	o = o.withDefaults()
	ids := make([]map[string]CrowdActor, len(plans)) // account id → actor
	for i, pl := range plans {
		ids[i] = map[string]CrowdActor{}
		for _, a := range pl.Actors {
			acc, err := c.Lookup(ctx, pl.Persona.Token, a.Acct)
			if err != nil {
				if ctx.Err() != nil {
					return make([][]CrowdActor, len(plans)), nil
				}
				return nil, fmt.Errorf("%s could not find its follower %s on the SUT: %w", pl.Persona.Name, a.Acct, err)
			}
			ids[i][acc.ID] = a
		}
	}
	out := make([][]CrowdActor, len(plans))
	for {
		waiting := 0
		for i, pl := range plans {
			out[i] = out[i][:0]
			list := slices.Sorted(maps.Keys(ids[i]))
			for len(list) > 0 {
				n := min(len(list), 40)
				rels, err := c.Relationships(ctx, pl.Persona.Token, list[:n])
				if err != nil {
					if ctx.Err() != nil {
						return out, nil
					}
					return out, fmt.Errorf("%s's relationships: %w", pl.Persona.Name, err)
				}
				for _, rel := range rels {
					if a, ok := ids[i][rel.ID]; ok && rel.FollowedBy {
						out[i] = append(out[i], a)
					}
				}
				list = list[n:]
			}
			waiting += len(ids[i]) - len(out[i])
		}
		if waiting == 0 {
			return out, nil
		}
		o.Progress(fmt.Sprintf("waiting for %d Accepts of the crowd's Follows", waiting))
		select {
		case <-ctx.Done():
			return out, nil
		case <-time.After(o.Poll):
		}
	}
}
