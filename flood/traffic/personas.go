package traffic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/signing"
)

// InboxMode says which of a persona's inboxes the flood posts to
// (--inbox).
type InboxMode string

// Inbox modes.
const (
	// InboxAuto posts to the persona's server's shared inbox when it has
	// one, else to the persona's own (GoToSocial has no shared inbox).
	InboxAuto InboxMode = "auto"
	// InboxShared posts to the shared inbox; a persona without one is an
	// error.
	InboxShared InboxMode = "shared"
	// InboxPersonal posts to the persona's own inbox.
	InboxPersonal InboxMode = "personal"
)

// ParseInboxMode reads --inbox: auto (also the empty string), shared or
// personal. Errors are *UsageError.
func ParseInboxMode(s string) (InboxMode, error) {
	switch m := InboxMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", InboxAuto:
		return InboxAuto, nil
	case InboxShared, InboxPersonal:
		return m, nil
	}
	return "", usage(s, "--inbox: want auto, shared or personal")
}

// Persona is an account on the server under test that the flood targets:
// Creates mention it, Likes like its posts, Follows follow it.
type Persona struct {
	Acct        string   // name@host, as named by the user
	ID          string   // its actor id
	Inbox       string   // its own inbox
	SharedInbox string   // its server's shared inbox; "" when there is none
	Outbox      string   // "" when the actor names none
	Followers   string   // its followers collection
	Posts       []string // ids of its posts, the objects of Likes; empty disables Likes of it
	Target      string   // the inbox the flood posts to (see ChooseTarget)
}

// Handle is the persona's mention handle, "@name@host".
func (p *Persona) Handle() string { return "@" + p.Acct }

// ChooseTarget sets Target by mode; it fails (naming the persona) when the
// shared inbox is asked for and the server has none, or when the actor
// has no inbox at all.
func (p *Persona) ChooseTarget(mode InboxMode) error {
	switch mode {
	case InboxShared:
		if p.SharedInbox == "" {
			return fmt.Errorf("persona %s: its server has no shared inbox (endpoints.sharedInbox); use --inbox=personal or auto", p.Acct)
		}
		p.Target = p.SharedInbox
	case InboxPersonal:
		p.Target = p.Inbox
	default:
		p.Target = p.SharedInbox
		if p.Target == "" {
			p.Target = p.Inbox
		}
	}
	if p.Target == "" {
		return fmt.Errorf("persona %s: its actor document has no inbox", p.Acct)
	}
	return nil
}

// maxPersonas bounds --count and persona files: each persona is looked up
// before the run.
const maxPersonas = 100000

// ExpandPersonas expands --personas and --count: pattern holds one %d,
// replaced by 0 … count-1 ("load%d@sut.test", 3 → load0, load1, load2, as
// the audience set-up names them). Errors are *UsageError.
func ExpandPersonas(pattern string, count int) ([]string, error) {
	if strings.Count(pattern, "%d") != 1 || strings.Count(pattern, "%") != 1 {
		return nil, usage(pattern, "--personas needs exactly one %%d, e.g. 'load%%d@sut.test'")
	}
	if count < 1 || count > maxPersonas {
		return nil, usage(pattern, "--count must be between 1 and %d with --personas, got %d", maxPersonas, count)
	}
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf(pattern, i)
		if _, err := personaAcct(out[i]); err != nil {
			return nil, usage(pattern, "%v", err)
		}
	}
	return out, nil
}

// ParsePersona reads one account (acct:name@host, name@host or
// @name@host) as name@host; the error, a *UsageError, says why it is
// none (no host, a port, …).
func ParsePersona(s string) (string, error) {
	acct, err := personaAcct(s)
	if err != nil {
		return "", usage(s, "%v", err)
	}
	return acct, nil
}

// personaAcct is s as name@host, or why it is no persona: not an account
// (apclient.ParseAcct), or one whose host names a port. The flood reaches
// a persona's server as servers federate, at https://HOST on port 443,
// and resolves HOST for it (a lookup or a send by hand keeps the port).
func personaAcct(s string) (string, error) {
	user, host, err := apclient.ParseAcct(s)
	if err != nil {
		return "", err
	}
	if name, port, err := net.SplitHostPort(host); err == nil {
		if port == "" {
			return "", fmt.Errorf("%q ends its host with ':' and no port", s)
		}
		return "", fmt.Errorf("%q names a port (%s): the flood reaches a persona's server as servers federate, at https://%s on port 443: serve the SUT there (or a proxy to it), and point the name at it", s, port, name)
	}
	return user + "@" + host, nil
}

// ParsePersonaList reads a --personas-file: one account per line
// (acct:name@host, name@host or @name@host); blank lines and lines
// starting with # are skipped, and a persona may be followed by a comment
// (# …), by nothing else.
// The accounts come back as name@host in file order. Errors are
// *UsageError naming the line.
func ParsePersonaList(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// One persona a line, then at most a comment: a second account on
		// the line would otherwise be dropped without a word.
		first, rest, _ := strings.Cut(strings.Join(strings.Fields(line), " "), " ")
		if rest != "" && !strings.HasPrefix(rest, "#") {
			return nil, usage(line, "line %d: one persona a line (%q follows it; a comment starts with #)", n, rest)
		}
		acct, err := personaAcct(first)
		if err != nil {
			return nil, usage(line, "line %d: %v", n, err)
		}
		out = append(out, acct)
		if len(out) > maxPersonas {
			return nil, usage(line, "more than %d personas", maxPersonas)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, usage("personas file", "%v", err)
	}
	return out, nil
}

// WorldPersonas makes personas of the crowd's own Person actors, for a
// self-flood: no lookup is needed, and each gets posts whose ids the crowd
// serves (notes it "wrote"), so Likes have objects too. Targets are chosen
// by mode (the crowd's origins always have a shared inbox). A world of
// more than MaxWorldPersonas Persons lends that many, spread evenly over
// it, so a self-flood of a million-actor world stays small.
func WorldPersonas(w *actors.World, mode InboxMode) []*Persona {
	var out []*Persona
	n := w.NumPersons()
	step := max(1, (n+MaxWorldPersonas-1)/MaxWorldPersonas)
	for i := 0; i < n; i += step {
		a := w.Person(i)
		p := &Persona{Acct: a.Acct(), ID: a.ID, Inbox: a.Inbox(), SharedInbox: a.SharedInbox(),
			Outbox: a.Outbox(), Followers: a.Followers()}
		for i := range 2 {
			p.Posts = append(p.Posts, a.NoteID(actors.NoteSpec{Published: a.Published, Seq: uint64(i), Bytes: 64,
				MentionID: a.ID, MentionHandle: "@" + a.Acct()}))
		}
		_ = p.ChooseTarget(mode) // cannot fail: crowd actors have both inboxes
		out = append(out, p)
	}
	return out
}

// MaxWorldPersonas bounds the personas of a self-flood (WorldPersonas).
const MaxWorldPersonas = 10000

// DiscoverOptions configures Discover.
type DiscoverOptions struct {
	// Client makes the requests (required). Give it a guarded transport
	// (Guard.DialContext) and roots that trust the SUT.
	Client *http.Client
	// Signer, KeyID and Key sign the GETs of actors and outboxes (required):
	// GoToSocial and Mastodon in authorized-fetch mode refuse unsigned ones.
	// Use an instance actor of the crowd's world, which the SUT can fetch.
	Signer *signing.Signer
	KeyID  string
	Key    signing.Key
	// Inbox chooses each persona's Target; default InboxAuto.
	Inbox InboxMode
	// Timeout bounds each request; default 10 s.
	Timeout time.Duration
	// Parallel is how many personas are looked up at once; default 8.
	Parallel int
	// MaxPosts is how many post ids are kept per persona; default 20.
	MaxPosts int
	// MaxPages is how many outbox pages are read per persona; default 3.
	MaxPages int
}

// maxDocBytes bounds every document discovery reads.
const maxDocBytes = 4 << 20

// Discover looks up every account (name@host) on its server: WebFinger,
// then a signed GET of the actor (inbox, endpoints.sharedInbox, outbox,
// followers), then signed GETs of its outbox for the ids of its posts. The
// personas come back in the order of accts. A persona whose outbox yields
// no post (empty, missing or unreadable) keeps going without Likes: that
// is a warning, returned for the caller to show. Any persona that cannot be
// found or has no usable inbox fails the whole discovery, with an error per
// persona naming it (a flood at fewer personas than asked would mislead).
func Discover(ctx context.Context, accts []string, o DiscoverOptions) ([]*Persona, []string, error) {
	if o.Client == nil || o.Signer == nil || o.Key == nil || o.KeyID == "" {
		return nil, nil, errors.New("flood: discovery needs a client, a signer and a key")
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.MaxPosts <= 0 {
		o.MaxPosts = 20
	}
	if o.MaxPages <= 0 {
		o.MaxPages = 3
	}
	if o.Inbox == "" {
		o.Inbox = InboxAuto
	}
	// One fetcher for every lookup: GETs signed as the given actor, each
	// bounded by Timeout and maxDocBytes, redirects kept on the persona's host.
	f := apclient.New(apclient.Options{Client: o.Client, Signer: o.Signer,
		As: apclient.SignAs(apclient.Identity{KeyID: o.KeyID, Key: o.Key}), MaxBodyBytes: maxDocBytes, Timeout: o.Timeout})
	type result struct {
		p    *Persona
		warn []string
		err  error
	}
	res := make([]result, len(accts))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, acct := range accts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				res[i].err = fmt.Errorf("persona %s: %w", acct, ctx.Err())
				return
			}
			defer func() { <-sem }()
			d := discoverer{o: o, f: f}
			res[i].p, res[i].err = d.persona(ctx, acct)
			res[i].warn = d.warn
		}()
	}
	wg.Wait()
	var out []*Persona
	var warns []string
	var errs []error
	for _, r := range res {
		warns = append(warns, r.warn...)
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		out = append(out, r.p)
	}
	if len(errs) > 0 {
		if len(errs) > 5 {
			errs = append(errs[:5], fmt.Errorf("… and %d more personas failed", len(errs)-5))
		}
		return nil, warns, errors.Join(errs...)
	}
	return out, warns, nil
}

// discoverer looks up one persona.
type discoverer struct {
	o    DiscoverOptions
	f    *apclient.Fetcher
	warn []string
}

func (d *discoverer) persona(ctx context.Context, acct string) (*Persona, error) {
	user, host, err := apclient.ParseAcct(acct)
	if err != nil {
		return nil, fmt.Errorf("persona %s: %w", acct, err)
	}
	acct = user + "@" + host
	jrd, err := d.f.Lookup(ctx, acct)
	if err != nil {
		return nil, fmt.Errorf("persona %s: %w", acct, err)
	}
	self := jrd.Self()
	doc, err := d.f.Actor(ctx, self)
	if err != nil {
		return nil, fmt.Errorf("persona %s: actor %s: %w", acct, self, err)
	}
	if doc.ID == "" {
		doc.ID = self
	}
	if doc.ID != self {
		d.warn = append(d.warn, fmt.Sprintf("persona %s: WebFinger names %s but the actor's id is %s; using the id", acct, self, doc.ID))
	}
	p := &Persona{Acct: acct, ID: doc.ID, Inbox: doc.Inbox, SharedInbox: doc.SharedInbox,
		Outbox: doc.Outbox, Followers: doc.Followers}
	for _, u := range []*string{&p.Inbox, &p.SharedInbox, &p.Outbox, &p.Followers} {
		if *u != "" && !apclient.IsHTTPURL(*u) {
			d.warn = append(d.warn, fmt.Sprintf("persona %s: ignoring %q, which is not an http(s) URL", acct, *u))
			*u = ""
		}
	}
	if err := p.ChooseTarget(d.o.Inbox); err != nil {
		return nil, err
	}
	if p.Outbox == "" {
		d.warn = append(d.warn, fmt.Sprintf("persona %s has no outbox: Likes of it are disabled", acct))
		return p, nil
	}
	p.Posts, err = d.posts(ctx, p.Outbox)
	switch {
	case err != nil:
		d.warn = append(d.warn, fmt.Sprintf("persona %s: cannot read its outbox %s (%v): Likes of it are disabled", acct, p.Outbox, err))
	case len(p.Posts) == 0:
		d.warn = append(d.warn, fmt.Sprintf("persona %s has no posts in its outbox %s: Likes of it are disabled", acct, p.Outbox))
	}
	return p, nil
}

// posts reads up to MaxPosts post ids from the outbox's items, through
// its pages (up to MaxPages).
func (d *discoverer) posts(ctx context.Context, outbox string) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	err := d.f.Items(ctx, outbox, d.o.MaxPages, func(it json.RawMessage) bool {
		if id := postID(it); id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
		return len(ids) < d.o.MaxPosts
	})
	return ids, err
}

// postID is the id of the persona's post an outbox item stands for: the
// object of a Create (embedded or by id), an object itself, or a bare id.
// Announces (someone else's post) and other activities give "".
func postID(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if apclient.IsHTTPURL(s) {
			return s
		}
		return ""
	}
	var it struct {
		ID     string          `json:"id"`
		Type   any             `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if json.Unmarshal(raw, &it) != nil {
		return ""
	}
	switch typeName(it.Type) {
	case "Create":
		var id string
		if json.Unmarshal(it.Object, &id) == nil {
			if apclient.IsHTTPURL(id) {
				return id
			}
			return ""
		}
		var obj struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(it.Object, &obj) == nil && apclient.IsHTTPURL(obj.ID) {
			return obj.ID
		}
		return ""
	case "Note", "Article", "Question", "Page", "Image", "Video", "Audio", "Event":
		if apclient.IsHTTPURL(it.ID) {
			return it.ID
		}
	}
	return ""
}

// typeName reads an ActivityStreams type, a string or the first of a list.
func typeName(t any) string {
	switch v := t.(type) {
	case string:
		return v
	case []any:
		if len(v) > 0 {
			s, _ := v[0].(string)
			return s
		}
	}
	return ""
}
