package audience

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/crowdfed/crowd/flood/record"
)

// ForgeryProbe is one forged activity the SUT answered 2xx: what its
// effect would be, and where it would land.
type ForgeryProbe struct {
	Activity string // the forged activity's id: the verdict's key
	Type     string // Create, Reply, Media, Like, Announce or Follow (others get no verdict)
	Actor    string // the actor it spoke for
	Object   string // the note; the liked or boosted post; the followed persona
	Persona  string // the persona it targets, name@host
	Marker   string // the token a forged note's content carries
}

// ForgeryVerdict is the look-up's verdict on one probe: Effect is
// record.EffectSeen (Where says where) or record.EffectNone.
type ForgeryVerdict struct {
	Activity string
	Effect   string
	Where    string
}

// DefaultMaxPages bounds each list the look-up reads (80 entries a page).
const DefaultMaxPages = 50

// EffectLookup looks for forgeries' effects through the SUT's Mastodon
// client API, as their personas: a forged note in the persona's
// notifications (a mention whose content carries the marker), a forged
// Like or Announce among the post's favourites or boosts and the
// notifications, a forged Follow among the persona's followers and the
// notifications.
type EffectLookup struct {
	// Client reads the SUT's client API.
	Client *Client
	// Tokens are the personas' bearer tokens by local name.
	Tokens map[string]string
	// MaxPages bounds each list read; 0 = DefaultMaxPages. A list longer
	// than that is unread: what it holds past its last page is unknown.
	MaxPages int
}

// Look judges each probe it can: seen where it shows; none when every
// place it would land was read whole and it shows in none. The rest get
// no verdict, and unread names the places that could not be read.
func (l EffectLookup) Look(ctx context.Context, probes []ForgeryProbe) (verdicts []ForgeryVerdict, unread []string) {
	byPersona := map[string][]ForgeryProbe{}
	var order []string
	for _, p := range probes {
		if _, ok := byPersona[p.Persona]; !ok {
			order = append(order, p.Persona)
		}
		byPersona[p.Persona] = append(byPersona[p.Persona], p)
	}
	for _, persona := range order {
		name, _, _ := strings.Cut(persona, "@")
		tok, ok := l.Tokens[name]
		if !ok {
			unread = append(unread, persona+" (no token)")
			continue
		}
		seat := &seat{l: l, ctx: ctx, persona: persona, token: tok, lists: map[string]*list{}}
		for _, p := range byPersona[persona] {
			if v, ok := seat.judge(p); ok {
				verdicts = append(verdicts, v)
			}
		}
		for _, k := range seat.order {
			if ls := seat.lists[k]; ls.err != nil {
				unread = append(unread, fmt.Sprintf("%s (%v)", k, ls.err))
			}
		}
	}
	return verdicts, unread
}

// list is one place, named by key, read whole (err nil) or not.
type list struct {
	key      string
	accounts []Account
	notes    []Notification
	statuses []Status
	err      error
}

// seat reads a persona's places once each, as it needs them.
type seat struct {
	l              EffectLookup
	ctx            context.Context
	persona, token string
	id             *list // verify_credentials: the persona's account id in accounts[0]
	lists          map[string]*list
	order          []string
}

// read reads the place named key once with f.
func (s *seat) read(key string, f func() (*list, bool, error)) *list {
	if ls, ok := s.lists[key]; ok {
		return ls
	}
	ls, complete, err := f()
	if ls == nil {
		ls = &list{}
	}
	if err == nil && !complete {
		err = fmt.Errorf("longer than %d pages", s.pages())
	}
	ls.key, ls.err = key, err
	s.lists[key] = ls
	s.order = append(s.order, key)
	return ls
}

// pages is the bound on each list's pages.
func (s *seat) pages() int {
	if s.l.MaxPages > 0 {
		return s.l.MaxPages
	}
	return DefaultMaxPages
}

// account is the persona's own account id.
func (s *seat) account() (string, error) {
	if s.id == nil {
		a, err := s.l.Client.VerifyCredentials(s.ctx, s.token)
		s.id = &list{accounts: []Account{a}, err: err}
	}
	return s.id.accounts[0].ID, s.id.err
}

func (s *seat) notifications() *list {
	return s.read("the notifications of "+s.persona, func() (*list, bool, error) {
		ns, complete, err := s.l.Client.Notifications(s.ctx, s.token, s.pages())
		return &list{notes: ns}, complete, err
	})
}

func (s *seat) followers() *list {
	return s.read("the followers of "+s.persona, func() (*list, bool, error) {
		id, err := s.account()
		if err != nil {
			return nil, false, err
		}
		as, complete, err := s.l.Client.Followers(s.ctx, s.token, id, s.pages())
		return &list{accounts: as}, complete, err
	})
}

// reactions are the accounts that favourited (or boosted) the persona's
// post uri: the post found among the persona's statuses.
func (s *seat) reactions(uri string, boosts bool) *list {
	what := "favourites"
	if boosts {
		what = "boosts"
	}
	return s.read("the "+what+" of "+uri, func() (*list, bool, error) {
		own := s.read("the posts of "+s.persona, func() (*list, bool, error) {
			id, err := s.account()
			if err != nil {
				return nil, false, err
			}
			st, complete, err := s.l.Client.AccountStatuses(s.ctx, s.token, id, s.pages())
			return &list{statuses: st}, complete, err
		})
		if own.err != nil {
			return nil, false, own.err
		}
		for _, st := range own.statuses {
			if st.URI != uri {
				continue
			}
			read := s.l.Client.FavouritedBy
			if boosts {
				read = s.l.Client.RebloggedBy
			}
			as, complete, err := read(s.ctx, s.token, st.ID, s.pages())
			return &list{accounts: as}, complete, err
		}
		return nil, false, fmt.Errorf("not among %s's posts", s.persona)
	})
}

// judge looks for p where it would land.
func (s *seat) judge(p ForgeryProbe) (ForgeryVerdict, bool) {
	v := ForgeryVerdict{Activity: p.Activity, Effect: record.EffectNone}
	var places []*list
	var seen string
	switch p.Type {
	case "Create", "Reply", "Media":
		if p.Marker == "" {
			return v, false
		}
		ns := s.notifications()
		places = append(places, ns)
		for _, n := range ns.notes {
			if n.Status != nil && strings.Contains(n.Status.Content, p.Marker) {
				seen = fmt.Sprintf("the notifications of %s (a %s of %s carrying the forgery's marker)", s.persona, n.Type, n.Status.URI)
				break
			}
		}
	case "Like", "Announce", "Follow":
		var own *list
		var types []string
		switch p.Type {
		case "Like":
			own, types = s.reactions(p.Object, false), []string{"favourite"}
		case "Announce":
			own, types = s.reactions(p.Object, true), []string{"reblog"}
		default:
			own, types = s.followers(), []string{"follow", "follow_request"}
		}
		ns := s.notifications()
		places = append(places, own, ns)
		if slices.ContainsFunc(own.accounts, func(a Account) bool { return sameActor(a, p.Actor) }) {
			seen = fmt.Sprintf("%s (%s, the actor the forgery spoke for)", own.key, acctOf(p.Actor))
		}
		for _, n := range ns.notes {
			if seen == "" && slices.Contains(types, n.Type) && sameActor(n.Account, p.Actor) && (p.Type == "Follow" || n.Status != nil && n.Status.URI == p.Object) {
				seen = fmt.Sprintf("the notifications of %s (a %s by %s, the actor the forgery spoke for)", s.persona, n.Type, acctOf(p.Actor))
			}
		}
	default:
		return v, false
	}
	if seen != "" {
		return ForgeryVerdict{Activity: p.Activity, Effect: record.EffectSeen, Where: seen}, true
	}
	for _, pl := range places {
		if pl.err != nil {
			return v, false
		}
	}
	return v, true
}

// acctOf is the acct a server gives the actor with id: its last path
// segment (the crowd's actors' preferredUsername) at its host.
func acctOf(id string) string {
	u, err := url.Parse(id)
	if err != nil {
		return id
	}
	return path.Base(u.Path) + "@" + u.Host
}

// sameActor tells whether a is the account of the actor with id.
func sameActor(a Account, id string) bool {
	return a.URL == id || strings.EqualFold(a.Acct, acctOf(id))
}
