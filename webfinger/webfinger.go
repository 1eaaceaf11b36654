// Package webfinger serves the discovery documents of the crowd's origins
// (WebFinger, host-meta, NodeInfo). The JRD is apclient's, the client that
// reads it from other servers, so both sides speak one wire type.
package webfinger

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/apclient"
)

// Media types of the discovery documents.
const (
	ContentTypeJRD = "application/jrd+json; charset=utf-8"
	ContentTypeXRD = "application/xrd+xml; charset=utf-8"
	// RelProfile is the link relation of an account's web page.
	RelProfile = "http://webfinger.net/rel/profile-page"
)

// Errors a lookup can end in; they map to 400 and 404 at the handler.
var (
	ErrBadResource = errors.New("bad resource")
	ErrNotFound    = errors.New("not found")
)

// Resolve finds the crowd actor a WebFinger resource names on origin o:
// "acct:name@host" (host must be o's) or the actor's id URL. Errors wrap
// ErrBadResource or ErrNotFound with a reason fit to show a user.
func Resolve(o *actors.Origin, resource string) (*actors.Actor, error) {
	switch {
	case resource == "":
		return nil, fmt.Errorf("%w: the resource parameter is missing", ErrBadResource)
	case strings.HasPrefix(resource, "acct:"):
		user, host, ok := strings.Cut(strings.TrimPrefix(resource, "acct:"), "@")
		user = strings.TrimPrefix(user, "@")
		if !ok || user == "" || host == "" || strings.Contains(host, "@") {
			return nil, fmt.Errorf("%w: %q is not of the form acct:name@host", ErrBadResource, resource)
		}
		if !strings.EqualFold(host, o.Host) {
			return nil, fmt.Errorf("%w: %s is not served by %s", ErrNotFound, host, o.Host)
		}
		a, found := o.Actor(user)
		if !found {
			a, found = o.Actor(strings.ToLower(user))
		}
		if !found {
			return nil, fmt.Errorf("%w: no account %q on %s", ErrNotFound, user, o.Host)
		}
		return a, nil
	case strings.HasPrefix(resource, "https://") || strings.HasPrefix(resource, "http://"):
		u, err := url.Parse(resource)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%w: %q is not a URL", ErrBadResource, resource)
		}
		if !strings.EqualFold(u.Hostname(), o.Host) {
			return nil, fmt.Errorf("%w: %s is not served by %s", ErrNotFound, u.Hostname(), o.Host)
		}
		if a, ok := byPath(o, strings.TrimSuffix(u.Path, "/")); ok {
			return a, nil
		}
		return nil, fmt.Errorf("%w: no account at %s", ErrNotFound, resource)
	default:
		return nil, fmt.Errorf("%w: %q is neither acct:name@host nor an actor URL", ErrBadResource, resource)
	}
}

// byPath finds the actor of o whose id or profile page has this path: an
// actor id (/users/NAME, /actor) or a Person's profile (/@NAME). It parses
// the path, so it costs the same on an origin of any size.
func byPath(o *actors.Origin, path string) (*actors.Actor, bool) {
	if name, ok := strings.CutPrefix(path, "/@"); ok {
		a, found := o.Actor(name)
		return a, found && a.Kind == actors.KindPerson
	}
	a, ok := o.World().ActorByID("https://" + o.Host + path)
	return a, ok && a.Origin.Index == o.Index
}

// Describe is the JRD of a crowd actor: its subject is its acct: URI, its
// self link's href is exactly the actor id (servers check the round trip).
// It reads only what the actor's origin and name give, never its key
// (keys rotate): NewHandlers keeps its answers for as long as it runs.
func Describe(a *actors.Actor) apclient.JRD {
	return apclient.JRD{
		Subject: "acct:" + a.Acct(),
		Aliases: []string{a.ID, a.ProfileURL()},
		Links: []apclient.Link{
			{Rel: RelProfile, Type: "text/html", Href: a.ProfileURL()},
			{Rel: apclient.RelSelf, Type: actors.ContentTypeActivity, Href: a.ID},
		},
	}
}

// Handlers serves the discovery documents of a world's origins; each
// request is answered for the origin its Host names.
type Handlers struct {
	// World is the crowd's world.
	World *actors.World
	// Version is the crowd's version, shown in NodeInfo.
	Version string
	// Origin is the origin a request is for, as the caller's router
	// already found it from the Host (nil: none it serves), so that a
	// request's Host is looked up once; nil looks the Host up in World.
	Origin func(r *http.Request) *actors.Origin

	answers *lru.Cache[question, answer] // resolved questions, when made by NewHandlers
	// The header values of a rendered JRD, made once by NewHandlers, so
	// that answering one allocates no header. net/http only reads them, and a
	// later Add appends to a full slice, which copies it.
	jrdType, anyOrigin []string
}

// JRDCacheSize bounds how many answered WebFinger questions (an origin and
// a raw query) NewHandlers' Handlers keep: the accounts a SUT looks up most
// stay resolved and rendered, in a world of any size. Each spelling of a
// question is kept apart, its JRD with it: at most about 8 MB in all
// (maxCachedQuery, and a JRD of about 0.4 KB).
const JRDCacheSize = 8192

// maxCachedQuery is the longest raw query a resolved question is kept
// under: the key holds the query as it came, and a client's own padding
// (up to net/http's megabyte of header) must not grow the cache beyond
// JRDCacheSize × this. Every query a server sends (resource=acct:… or an
// actor URL) is far shorter.
const maxCachedQuery = 512

// question is a WebFinger request as it arrived: the origin its Host
// named and its raw query. A question resolves to the same actor every
// time (actors are derived from their names), and the actor's JRD is made
// of what a name gives (Describe), so its answer can be kept.
type question struct {
	origin *actors.Origin
	query  string
}

// answer is a resolved question: the actor's id and acct, which the
// deletion check and its 410 need on every request (a deletion can come
// after the answer was kept), and its rendered JRD.
type answer struct {
	id, acct string
	jrd      []byte
}

// NewHandlers returns Handlers that resolve and render each WebFinger
// question once and keep the latest JRDCacheSize of them, so answering
// WebFinger mostly costs a lookup, the deletion check and a write; a
// Handlers literal works too, resolving and rendering per request.
func NewHandlers(world *actors.World, version string) (Handlers, error) {
	answers, err := lru.New[question, answer](JRDCacheSize)
	if err != nil {
		return Handlers{}, err
	}
	return Handlers{World: world, Version: version, answers: answers, jrdType: []string{ContentTypeJRD}, anyOrigin: []string{"*"}}, nil
}

func (h Handlers) origin(w http.ResponseWriter, r *http.Request) (*actors.Origin, bool) {
	var o *actors.Origin
	if h.Origin != nil {
		o = h.Origin(r)
	} else {
		o, _ = h.World.Origin(r.Host)
	}
	ok := o != nil
	if !ok {
		http.Error(w, fmt.Sprintf("no origin %q is served here", r.Host), http.StatusNotFound)
	}
	return o, ok
}

// WebFinger answers /.well-known/webfinger: 400 for a missing or malformed
// resource, 404 for an unknown account, 410 for a deleted one (a leaver
// after its Delete, as Mastodon answers for a deleted account), otherwise
// the JRD.
func (h Handlers) WebFinger(w http.ResponseWriter, r *http.Request) {
	o, ok := h.origin(w, r)
	if !ok {
		return
	}
	q := question{origin: o, query: r.URL.RawQuery}
	if h.answers != nil {
		if ans, ok := h.answers.Get(q); ok {
			h.writeAnswer(w, ans)
			return
		}
	}
	a, err := Resolve(o, queryValue(r.URL.RawQuery, "resource"))
	switch {
	case errors.Is(err, ErrBadResource):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if h.answers == nil {
		if !h.gone(w, a.ID, a.Acct()) {
			writeJSON(w, ContentTypeJRD, Describe(a))
		}
		return
	}
	b, err := actors.MarshalDoc(Describe(a))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ans := answer{id: a.ID, acct: a.Acct(), jrd: b}
	if len(q.query) <= maxCachedQuery {
		h.answers.Add(q, ans)
	}
	h.writeAnswer(w, ans)
}

// writeAnswer answers with a resolved question's JRD, or 410 when its
// account was deleted.
func (h Handlers) writeAnswer(w http.ResponseWriter, ans answer) {
	if h.gone(w, ans.id, ans.acct) {
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = h.jrdType
	hdr["Access-Control-Allow-Origin"] = h.anyOrigin
	w.Write(ans.jrd)
}

// gone answers 410 and reports true when the account id was deleted (a
// leaver after its Delete).
func (h Handlers) gone(w http.ResponseWriter, id, acct string) bool {
	if h.World.Changes == nil {
		return false
	}
	if _, deleted := h.World.Changes.Deleted(id); deleted {
		http.Error(w, acct+" was deleted", http.StatusGone)
		return true
	}
	return false
}

// queryValue is the first value of key in a raw query, as
// url.Values.Get(key) of url.ParseQuery(raw) would return it (a value
// that does not unescape is skipped, as ParseQuery drops it), without
// building the map. Before answers were kept, every WebFinger request
// parsed its query, and the WebFinger row of `go run ./bench -only
// documents` gave 0.91 of a bare handler with it, 0.73-0.75 with
// url.Query (pasture's BenchmarkHandlerOnly: 13 allocations against 17);
// now only a question not kept is parsed, the first of each and any a
// client varies. FuzzQueryValue holds it to url.ParseQuery.
func queryValue(raw, key string) string {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if strings.Contains(pair, ";") {
			continue // ParseQuery refuses a pair with a semicolon
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil || k != key {
			continue
		}
		if v, err = url.QueryUnescape(v); err == nil {
			return v
		}
	}
	return ""
}

// HostMeta answers /.well-known/host-meta (XRD) and, for a JSON Accept or
// the .json path, its JRD form.
func (h Handlers) HostMeta(w http.ResponseWriter, r *http.Request) {
	o, ok := h.origin(w, r)
	if !ok {
		return
	}
	tmpl := "https://" + o.Host + "/.well-known/webfinger?resource={uri}"
	if strings.HasSuffix(r.URL.Path, ".json") || strings.Contains(r.Header.Get("Accept"), "json") {
		writeJSON(w, ContentTypeJRD, struct {
			Links []apclient.Link `json:"links"`
		}{[]apclient.Link{{Rel: "lrdd", Template: tmpl}}})
		return
	}
	w.Header().Set("Content-Type", ContentTypeXRD)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<XRD xmlns="http://docs.oasis-open.org/ns/xri/xrd-1.0">
  <Link rel="lrdd" template="%s"/>
</XRD>
`, tmpl)
}

func writeJSON(w http.ResponseWriter, contentType string, doc any) {
	b, err := actors.MarshalDoc(doc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Write(b)
}
