package inbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/internal/dialguard"
	"github.com/crowdfed/crowd/signing"
	"github.com/crowdfed/crowd/webfinger"
)

// ErrBadRequest marks an admin request that cannot be carried out as
// asked (unknown sender, unsupported type, missing object, malformed
// resource); the admin API answers it with 400.
var ErrBadRequest = errors.New("bad request")

// ErrTarget marks a target that could not be resolved (WebFinger or the
// actor fetch failed); the admin API answers it with 502.
var ErrTarget = errors.New("target not resolved")

// ErrUndelivered marks a send the target's inbox did not answer (the
// connection, the TLS handshake or the request failed); the admin API
// answers it with 502. An answer of any status is a result, not this.
var ErrUndelivered = errors.New("the inbox did not answer")

// Lookup resolves q.Resource (acct:name@host, name@host, or an actor URL)
// as a real server would: WebFinger, then a GET signed by the instance
// actor of the crowd's first origin, then the WebFinger round trip from
// the document's preferredUsername. Every host is checked before anything
// is sent to it, as a send's are: the resource's or its actor's resolving
// to a public address, unless q.AllowPublicTarget, is the error (wrapping
// dialguard.ErrPublicTarget); the round trip's, once the document is in
// hand, a problem. Every other failure becomes a problem in the result;
// the error (wrapping ErrBadRequest) is otherwise only for a resource that
// is neither an acct nor a URL.
func (in *Inbox) Lookup(ctx context.Context, q adminapi.LookupQuery) (adminapi.LookupResult, error) {
	resource := q.Resource
	res := adminapi.LookupResult{Resource: resource, Problems: []string{}}
	as := in.world.Origins[0].Instance
	// One guard for the lookup, which checks each host before it is
	// contacted (the fetch resolves the name again as it dials).
	g := dialguard.NewGuard(dialguard.GuardOptions{AllowPublic: q.AllowPublicTarget, Resolve: in.cfg.ResolveTarget})
	// reachable checks a host before the lookup contacts it; a host with no
	// address is the lookup's problem, a public one its refusal.
	reachable := func(rawURL string) (bool, error) {
		err := in.checkHost(ctx, g, rawURL)
		if err == nil {
			return true, nil
		}
		if errors.Is(err, dialguard.ErrPublicTarget) {
			return false, err
		}
		res.Problems = append(res.Problems, err.Error())
		return false, nil
	}
	selfHref := ""
	switch {
	case strings.HasPrefix(resource, "https://") || strings.HasPrefix(resource, "http://"):
		res.URL = resource
		in.noteWeather(&res, actors.HostOf(resource))
	default:
		_, host, err := apclient.ParseAcct(resource)
		if err != nil {
			return res, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
		in.noteWeather(&res, host)
		if ok, err := reachable("https://" + host + "/"); !ok {
			return res, err
		}
		answers, err := in.confirmAcct(ctx, resource, func(host string) error { return in.checkHost(ctx, g, "https://"+host+"/") })
		if len(answers) > 0 {
			res.WebFinger = &answers[0]
		}
		if len(answers) > 1 {
			res.WebFingerRedirect = &answers[1]
		}
		if err != nil {
			if errors.Is(err, dialguard.ErrPublicTarget) {
				return res, err
			}
			res.Problems = append(res.Problems, "WebFinger: "+err.Error())
			return res, nil
		}
		jrd := answers[len(answers)-1]
		selfHref = jrd.Self()
		res.URL = selfHref
		if selfHref == "" {
			res.Problems = append(res.Problems, "WebFinger: no ActivityPub self link (rel self, type application/activity+json or application/ld+json): no actor to fetch")
			return res, nil
		}
		res.Problems = append(res.Problems, mastodonSelfProblems(jrd, selfHref)...)
	}
	if ok, err := reachable(res.URL); !ok {
		return res, err
	}
	f, err := in.fetch(ctx, as, res.URL)
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
		return res, nil
	}
	res.FinalURL, res.Status, res.ContentType = f.URL, f.Status, f.ContentType
	if json.Valid(f.Body) {
		res.Document = json.RawMessage(f.Body)
	}
	res.Problems = append(res.Problems, ActorProblems(res.URL, f.URL, f.Status, f.ContentType, f.Body, selfHref)...)
	// The round trip Mastodon makes: WebFinger of the actor's account (its
	// FEP-2c59 webfinger, else preferredUsername@the id's host) must lead
	// back to the same id.
	var doc struct {
		ID                string `json:"id"`
		PreferredUsername string `json:"preferredUsername"`
		WebFinger         any    `json:"webfinger"`
	}
	if f.Status == http.StatusOK && json.Unmarshal(f.Body, &doc) == nil && doc.ID != "" {
		acct := ""
		if wf, ok := doc.WebFinger.(string); ok {
			if user, host, err := apclient.ParseAcct(wf); err == nil {
				acct = "acct:" + user + "@" + host
			}
		}
		if acct == "" && doc.PreferredUsername != "" {
			acct = "acct:" + doc.PreferredUsername + "@" + actors.HostOf(doc.ID)
		}
		confirmed := res.WebFingerRedirect
		if confirmed == nil {
			confirmed = res.WebFinger
		}
		if acct != "" && (confirmed == nil || !sameAcct(confirmed.Subject, acct)) {
			// The document is in hand: a public host here is a problem to
			// list beside it, not a refusal that would drop it.
			answers, err := in.confirmAcct(ctx, acct, func(host string) error { return in.checkHost(ctx, g, "https://"+host+"/") })
			switch {
			case errors.Is(err, dialguard.ErrPublicTarget):
				res.Problems = append(res.Problems, fmt.Sprintf("WebFinger round trip: %s not asked: %v", acct, err))
			case err != nil:
				res.Problems = append(res.Problems, fmt.Sprintf("WebFinger round trip: %v; Mastodon cannot resolve this actor", err))
			case answers[len(answers)-1].Self() != doc.ID:
				res.Problems = append(res.Problems, fmt.Sprintf("WebFinger round trip: %s leads to %s, not back to %s", acct, answers[len(answers)-1].Self(), doc.ID))
			}
		}
	}
	return res, nil
}

// noteWeather notes on res that host, one of the crowd's own origins, is
// in weather: the lookup is served in-process and does not meet it, so
// its answer is the healthy origin's, not what a SUT fetching it gets.
func (in *Inbox) noteWeather(res *adminapi.LookupResult, host string) {
	if in.cfg.OriginWeather == nil {
		return
	}
	if _, own := in.world.Origin(host); !own {
		return
	}
	if c := in.cfg.OriginWeather(host); c != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("%s is %s in the crowd's weather: this lookup is served inside the crowd, where the weather does not reach, so it shows the healthy origin; a server fetching it over the network meets the weather", host, c))
	}
}

// confirmAcct asks WebFinger about acct as Mastodon resolves an account:
// the answer must have a subject, and a subject naming another account
// (a vanity domain's, or a moved one's) is asked in turn, whose answer must
// name that account itself (Mastodon stops at "Too many webfinger
// redirects" otherwise) and is the one whose self link counts. check is
// asked about each host before it is contacted, acct's own first (an error
// wrapping dialguard.ErrPublicTarget is returned as is). It returns the
// answers in order, none to two, and what would make Mastodon stop.
func (in *Inbox) confirmAcct(ctx context.Context, acct string, check func(host string) error) ([]apclient.JRD, error) {
	_, host, err := apclient.ParseAcct(acct)
	if err != nil {
		return nil, err
	}
	if err := check(host); err != nil {
		return nil, err
	}
	first, err := in.webfinger(ctx, acct)
	if err != nil {
		return nil, err
	}
	answers := []apclient.JRD{first}
	if first.Subject == "" {
		return answers, fmt.Errorf("the answer for %s has no subject: Mastodon refuses it", acct)
	}
	if sameAcct(first.Subject, acct) {
		return answers, nil
	}
	_, host, err = apclient.ParseAcct(first.Subject)
	if err != nil {
		return answers, fmt.Errorf("the answer for %s names subject %q, not an account: Mastodon cannot confirm it", acct, first.Subject)
	}
	if err := check(host); err != nil {
		if errors.Is(err, dialguard.ErrPublicTarget) {
			return answers, err
		}
		return answers, fmt.Errorf("the answer for %s names subject %s, whose host is not reached: %v", acct, first.Subject, err)
	}
	second, err := in.webfinger(ctx, first.Subject)
	if err != nil {
		return answers, fmt.Errorf("the answer for %s names subject %s, whose own WebFinger fails: %v", acct, first.Subject, err)
	}
	answers = append(answers, second)
	if !sameAcct(second.Subject, first.Subject) {
		return answers, fmt.Errorf("the answer for %s names subject %s, whose own answer names %s: Mastodon stops (\"Too many webfinger redirects\")", acct, first.Subject, cmp.Or(second.Subject, "no subject"))
	}
	return answers, nil
}

// sameAcct reports whether two accounts (acct:name@host, name@host) are
// one as Mastodon compares them: name and host each without regard to case.
func sameAcct(a, b string) bool {
	ua, ha, errA := apclient.ParseAcct(a)
	ub, hb, errB := apclient.ParseAcct(b)
	return errA == nil && errB == nil && strings.EqualFold(ua, ub) && strings.EqualFold(ha, hb)
}

// mastodonSelfProblems is what Mastodon objects to in the self links of
// jrd, the answer whose self link (fetched: selfHref) was found. Mastodon
// takes the first link of rel "self" whose type is exactly one of
// mastodonSelfTypes, and refuses an answer without one ("Missing self
// link"); older releases indexed the links by rel, so read the last
// "self" whatever its type, and fetched nothing unless that type was one
// of them.
func mastodonSelfProblems(jrd apclient.JRD, selfHref string) []string {
	var exact, last *apclient.Link
	for i := range jrd.Links {
		if l := &jrd.Links[i]; l.Rel == apclient.RelSelf {
			last = l
			if exact == nil && slices.Contains(mastodonSelfTypes(), l.Type) {
				exact = l
			}
		}
	}
	types := strings.Join(quoted(mastodonSelfTypes()), " or ")
	switch {
	case exact == nil:
		return []string{fmt.Sprintf("WebFinger: no self link of type exactly %s: Mastodon refuses the answer (\"Missing self link\")", types)}
	case exact.Href != selfHref:
		return []string{fmt.Sprintf("WebFinger: Mastodon fetches the self link %s, not %s", exact.Href, selfHref)}
	case last != exact && !slices.Contains(mastodonSelfTypes(), last.Type):
		return []string{fmt.Sprintf("WebFinger: older Mastodon releases read the last self link, of type %q, and fetch no actor (they want %s)", last.Type, types)}
	}
	return nil
}

// mastodonSelfTypes are the WebFinger self link types Mastodon fetches an
// actor for: compared as strings, so a profile written otherwise (no
// space after the ';') is not one of them.
func mastodonSelfTypes() []string {
	return []string{"application/activity+json", `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`}
}

// quoted is each of s in Go's double quotes.
func quoted(s []string) []string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return q
}

// webfinger looks acct up: a crowd account from the world, any other
// over the network.
func (in *Inbox) webfinger(ctx context.Context, acct string) (apclient.JRD, error) {
	user, host, err := apclient.ParseAcct(acct)
	if err != nil {
		return apclient.JRD{}, err
	}
	if o, ok := in.world.Origin(host); ok {
		a, ok := o.Actor(user)
		if !ok {
			return apclient.JRD{}, fmt.Errorf("%w: no account %q on %s", apclient.ErrNoAccount, user, host)
		}
		return webfinger.Describe(a), nil
	}
	return in.fetcher.Lookup(ctx, acct)
}

// actorTypes are the ActivityStreams actor types servers accept.
func actorTypes() []string {
	return []string{"Person", "Service", "Application", "Group", "Organization"}
}

// ActorProblems lists what a real server would object to in an actor
// document: requested is the URL that was fetched, final where it was
// served after redirects, status and contentType the answer's, body the
// document, and selfHref the WebFinger self link ("" when the lookup did
// not go through WebFinger). It never fails: a body that is not JSON is
// itself a problem.
func ActorProblems(requested, final string, status int, contentType string, body []byte, selfHref string) []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if status != http.StatusOK {
		add("GET %s answered HTTP %d, not 200", requested, status)
		return p
	}
	mt, params, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		add("Content-Type %q cannot be parsed; servers want application/activity+json", contentType)
	case mt == "application/activity+json":
	case mt == "application/ld+json":
		if !strings.Contains(params["profile"], "https://www.w3.org/ns/activitystreams") {
			add("Content-Type %q lacks profile=\"https://www.w3.org/ns/activitystreams\"; some servers refuse it", contentType)
		}
	default:
		add("Content-Type %q is not application/activity+json or application/ld+json: Mastodon and GoToSocial refuse the document", contentType)
	}
	var doc struct {
		Context           json.RawMessage `json:"@context"`
		ID                string          `json:"id"`
		Type              json.RawMessage `json:"type"`
		PreferredUsername string          `json:"preferredUsername"`
		WebFinger         json.RawMessage `json:"webfinger"`
		Inbox             string          `json:"inbox"`
		Outbox            string          `json:"outbox"`
		PublicKey         json.RawMessage `json:"publicKey"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		add("the document is not a JSON object: %v", err)
		return p
	}
	contexts := contextURLs(doc.Context)
	if !slices.Contains(contexts, "https://www.w3.org/ns/activitystreams") {
		add("@context does not include https://www.w3.org/ns/activitystreams")
	}
	if !slices.Contains(contexts, "https://w3id.org/security/v1") && len(doc.PublicKey) > 0 {
		add("@context does not include https://w3id.org/security/v1, which defines publicKey (JSON-LD processors such as Fedify drop it)")
	}
	switch {
	case doc.ID == "":
		add("no id")
	case doc.ID != requested && doc.ID != final:
		add("id %s is not the URL it was fetched from (%s): Mastodon refetches by id and refuses another host", doc.ID, requested)
	case final != "" && doc.ID != final:
		add("the document was served at %s after a redirect, but its id is %s", final, doc.ID)
	}
	if doc.ID != "" && actors.HostOf(doc.ID) != actors.HostOf(requested) {
		add("id %s is on another host than %s: servers refuse documents that claim another origin", doc.ID, requested)
	}
	if selfHref != "" && doc.ID != "" && selfHref != doc.ID {
		add("WebFinger self href %s differs from the actor id %s: the round trip fails", selfHref, doc.ID)
	}
	typ, _ := typeOf(doc.Type)
	if typ == "" {
		add("no type")
	} else if !slices.Contains(actorTypes(), typ) {
		add("type %q is not an actor type (%s)", typ, strings.Join(actorTypes(), ", "))
	}
	if doc.PreferredUsername == "" {
		if isNull(doc.WebFinger) {
			add("no preferredUsername (nor FEP-2c59 webfinger): Mastodon needs it for the WebFinger round trip")
		} else {
			add("no preferredUsername: only servers that read FEP-2c59's webfinger (recent Mastodon) can name this actor")
		}
	}
	if doc.Inbox == "" {
		add("no inbox: nobody can deliver to this actor")
	} else if u, err := url.Parse(doc.Inbox); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		add("inbox %q is not an absolute URL", doc.Inbox)
	}
	if doc.Outbox == "" {
		add("no outbox (required by ActivityPub; Mastodon tolerates it, Fedify's validators do not)")
	}
	p = append(p, keyProblems(doc.ID, doc.PublicKey)...)
	return p
}

// contextURLs are the context URLs a decoded @context names: the string
// itself, or the strings of an array (embedded term definitions are skipped).
// Judged on decoded JSON, never on raw bytes: servers that escape '/' (PHP
// writes https:\/\/) name the same URLs.
func contextURLs(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil {
		return nil
	}
	var urls []string
	for _, m := range many {
		if json.Unmarshal(m, &one) == nil {
			urls = append(urls, one)
		}
	}
	return urls
}

// keyProblems checks publicKey: present, with an id, owned by the actor,
// with a PEM that parses as RSA or Ed25519.
func keyProblems(actorID string, raw json.RawMessage) []string {
	if isNull(raw) {
		return []string{"no publicKey: signatures by this actor cannot be verified"}
	}
	type key struct {
		ID           string `json:"id"`
		Owner        string `json:"owner"`
		PublicKeyPem string `json:"publicKeyPem"`
	}
	var keys []key
	if strings.HasPrefix(strings.TrimSpace(string(raw)), "[") {
		if err := json.Unmarshal(raw, &keys); err != nil {
			return []string{"publicKey is not an array of keys"}
		}
	} else {
		var k key
		if err := json.Unmarshal(raw, &k); err != nil {
			return []string{"publicKey is not an object"}
		}
		keys = []key{k}
	}
	if len(keys) == 0 {
		return []string{"publicKey is an empty array"}
	}
	var p []string
	for _, k := range keys {
		if k.ID == "" {
			p = append(p, "publicKey has no id: senders cannot name it as keyId")
		}
		if k.Owner != actorID {
			p = append(p, fmt.Sprintf("publicKey.owner %q is not the actor id %q: Mastodon refuses the key", k.Owner, actorID))
		}
		if k.PublicKeyPem == "" {
			p = append(p, "publicKey has no publicKeyPem")
		} else if _, err := signing.ParsePublicKeyPEM(k.PublicKeyPem); err != nil {
			p = append(p, "publicKeyPem does not parse: "+err.Error())
		}
	}
	return p
}
