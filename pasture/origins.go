package pasture

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/crowdfed/crowd/actors"
	crowdinbox "github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/pasture/fetchback"
	"github.com/crowdfed/crowd/pasture/weather"
	"github.com/crowdfed/crowd/webfinger"
)

// originRouter routes the requests of every origin (HTTPS and HTTP
// listeners alike) by path; the Host is resolved to its origin once, by
// lookup (the world's Origin), and handed down in the request's context.
// The weather answers after the metrics and the fetch-back windows, so
// they count its answers with their status.
func originRouter(world *actors.World, lookup func(host string) (*actors.Origin, bool), version string, inbox http.Handler, m *httpMetrics, fetch *fetchback.Windows, sky *weather.HTTP) (http.Handler, error) {
	r := chi.NewRouter()
	// Every route, the direct ones below included, goes through these in this order.
	mws := chi.Middlewares{m.middleware, fetch.Middleware} // fetch: what the SUT fetches back, by run (pasture/fetchback)
	// A nil sky is no weather at all: the benchmark's baseline.
	if sky != nil {
		sky.Host = originHost
		if wl, ok := inbox.(weatherLog); ok {
			sky.Deliveries = func(r *http.Request, c weather.Condition) func(int, string) {
				if held, waited, ok := weather.Held(r.Context()); ok { // a slow origin's client gave up
					r = r.WithContext(crowdinbox.WithWeathered(r.Context(), crowdinbox.Weathered{Condition: held.String(), Held: waited}))
				}
				return wl.LogWeathered(r, c.String())
			}
		}
		mws = append(mws, sky.Wrap)
	}
	mws = append(mws, knownOrigin(world))
	r.Use(mws...)
	wf, err := webfinger.NewHandlers(world, version)
	if err != nil {
		return nil, err
	}
	wf.Origin = originOf
	r.Get("/.well-known/webfinger", wf.WebFinger)
	r.Get("/.well-known/host-meta", wf.HostMeta)
	r.Get("/.well-known/host-meta.json", wf.HostMeta)
	r.Get("/.well-known/nodeinfo", wf.NodeInfoDiscovery)
	r.Get("/nodeinfo/2.0", wf.NodeInfo("2.0"))
	r.Get("/nodeinfo/2.1", wf.NodeInfo("2.1"))

	d := documents{world: world, images: actors.NewImages(16), headers: newDocHeaders()}
	r.Get("/", d.home)
	r.Get("/actor", d.instanceActor)
	r.Get("/actor/{collection:outbox|followers|following}", d.instanceCollection)
	r.Get("/actor/collections/{featured:featured|tags}", d.instanceFeatured)
	r.Get("/@{name}", d.profile)
	r.Get("/users/{name}", d.actor)
	r.Get("/users/{name}/{collection:outbox|followers|following}", d.collection)
	r.Get("/users/{name}/collections/{featured:featured|tags}", d.featured)
	r.Get("/users/{name}/{kind:notes|likes|follows|announces}/*", d.object)
	r.Get("/media/*", d.media)
	r.Get("/tags/{tag}", d.tag)
	if inbox == nil {
		inbox = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "this crowd serves no inboxes", http.StatusServiceUnavailable)
		})
	}
	r.Post("/inbox", addressed(inbox, func(*http.Request) crowdinbox.Recipient { return crowdinbox.Recipient{} }))
	r.Post("/actor/inbox", addressed(inbox, func(*http.Request) crowdinbox.Recipient { return crowdinbox.Recipient{Instance: true} }))
	r.Post("/users/{name}/inbox", addressed(inbox, func(r *http.Request) crowdinbox.Recipient {
		return crowdinbox.Recipient{Name: chi.URLParam(r, "name")}
	}))
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		http.Error(w, fmt.Sprintf("nothing at %s on %s", req.URL.Path, req.Host), http.StatusNotFound)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		http.Error(w, fmt.Sprintf("%s is not allowed on %s", req.Method, req.URL.Path), http.StatusMethodNotAllowed)
	})
	s := newOriginServer(lookup, r)
	s.actor = mws.HandlerFunc(routed(actorPattern, d.actor))
	s.webfinger = mws.HandlerFunc(routed(webfingerPattern, wf.WebFinger))
	return s, nil
}

// hostKey carries the origin a request's Host names, as originServer found it.
type hostKey struct{}

// originServer looks a request's Host up once, before anything else, for the metrics, the
// 404 of an unknown host, the documents and the inboxes alike, and hands the router the
// request with the origin and chi's routing context in one context value: chi would
// otherwise add its own (a copy of the request and a context), and those two copies were
// a third of what a GET of a rendered document allocated.
//
// The two documents a SUT fetches most, an actor (to verify a signature) and its WebFinger
// JRD, go to their handlers directly, through the same middleware, with the routing context
// chi would have made (the route pattern, the name): chi's tree walk and the path values it
// sets on the request were a third of the router's own cost for a GET of either.
type originServer struct {
	lookup func(host string) (*actors.Origin, bool)
	mux    *chi.Mux
	routes sync.Pool // *chi.Context, reset and reused as chi's own Mux does

	// actor and webfinger answer GET /users/{name} and GET /.well-known/webfinger
	// behind the mux's middleware; nil: the mux routes them too.
	actor, webfinger http.Handler
}

func newOriginServer(lookup func(host string) (*actors.Origin, bool), mux *chi.Mux) *originServer {
	return &originServer{lookup: lookup, mux: mux, routes: sync.Pool{New: func() any { return chi.NewRouteContext() }}}
}

// ServeHTTP routes r with its origin resolved; the mux finds the routing context ready and
// uses it, as it does a parent router's.
func (s *originServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o, _ := s.lookup(r.Host)
	rc := s.routes.Get().(*chi.Context)
	rc.Reset()
	rc.Routes = s.mux
	req := r.WithContext(&originContext{Context: r.Context(), route: rc, origin: o})
	req.Pattern = "" // the router's to set, as it reaches a route
	s.direct(r).ServeHTTP(w, req)
	s.routes.Put(rc)
}

// Route patterns of the direct routes, as the mux has them.
const (
	actorPattern     = "/users/{name}"
	webfingerPattern = "/.well-known/webfinger"
)

// direct is the handler of r: one of the direct routes', or the mux itself for any request
// the mux would route anywhere else (another method, an escaped path, an empty name, a
// deeper path).
func (s *originServer) direct(r *http.Request) http.Handler {
	if s.actor == nil || r.Method != http.MethodGet || r.URL.RawPath != "" {
		return s.mux
	}
	path := r.URL.Path
	if path == webfingerPattern {
		return s.webfinger
	}
	if name, ok := strings.CutPrefix(path, "/users/"); ok && name != "" && strings.IndexByte(name, '/') < 0 {
		return s.actor
	}
	return s.mux
}

// routed is h behind what chi's routing would have done on reaching it, once the middleware
// let the request through: the route's pattern in the routing context and on the request,
// and its one parameter, a name taken from the path's last segment (originServer.direct
// checked its shape). A middleware that answers first (the weather, an unknown host) leaves
// the request unrouted, as with chi. The parameter is chi's only: chi also copies it into the
// request's PathValue, which allocates, so a handler behind a direct route reads it with
// chi.URLParam (every handler here does).
func routed(pattern string, h http.HandlerFunc) http.HandlerFunc {
	_, param, hasParam := strings.Cut(strings.TrimSuffix(pattern, "}"), "{")
	return func(w http.ResponseWriter, r *http.Request) {
		rc := chi.RouteContext(r.Context())
		if hasParam {
			rc.URLParams.Add(param, r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:])
		}
		rc.RoutePatterns = append(rc.RoutePatterns, pattern)
		r.Pattern = pattern
		h(w, r)
	}
}

// originContext is a request's context with its origin (nil for a host the crowd doesn't
// serve) and chi's routing context, answered without a chain of context.WithValue.
type originContext struct {
	context.Context
	route  *chi.Context
	origin *actors.Origin
}

// Value answers the two keys originServer set and asks the parent for any other.
func (c *originContext) Value(key any) any {
	switch key {
	case chi.RouteCtxKey:
		return c.route
	case hostKey{}:
		return c.origin
	}
	return c.Context.Value(key)
}

// originOf is the origin originServer found for r; nil for a host the crowd doesn't serve
// (knownOrigin answers those before any handler).
func originOf(r *http.Request) *actors.Origin {
	o, _ := r.Context().Value(hostKey{}).(*actors.Origin)
	return o
}

// originHost is the host name of the origin originServer found for r; "" for a host the crowd
// doesn't serve.
func originHost(r *http.Request) string {
	if o := originOf(r); o != nil {
		return o.Host
	}
	return ""
}

// weatherLog is an inbox that logs the deliveries the weather answers in its stead (the
// crowd's inbox.Inbox): LogWeathered reads the body and returns the func that logs the line.
type weatherLog interface {
	LogWeathered(r *http.Request, condition string) func(status int, reason string)
}

// knownOrigin answers 404 naming the host for a Host the crowd doesn't serve.
func knownOrigin(world *actors.World) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if originOf(r) == nil {
				http.Error(w, fmt.Sprintf("no origin %q is served here (this crowd serves %d origins such as %s)",
					r.Host, len(world.Origins), world.Origins[0].Host), http.StatusNotFound)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// addressed hands an inbox request to in with its recipient: the origin resolved from the
// Host and the inbox chi routed the path to, so the inbox reads neither again.
func addressed(in http.Handler, at func(r *http.Request) crowdinbox.Recipient) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rc := at(r)
		rc.Origin = originOf(r)
		ctx := crowdinbox.WithRecipient(r.Context(), rc)
		if c, waited, ok := weather.Held(ctx); ok { // a slow origin's wait, for the inbox's log line
			ctx = crowdinbox.WithWeathered(ctx, crowdinbox.Weathered{Condition: c.String(), Held: waited})
		}
		in.ServeHTTP(w, r.WithContext(ctx))
	}
}

type documents struct {
	world   *actors.World
	images  *actors.Images // the media's pixels, kept per size
	headers docHeaders
}

// docHeaders are the header values a rendered document is answered with, made once, so
// that answering one allocates no header. net/http only reads them, and a later Add
// appends to a full slice, which copies it: the shared arrays are never written.
type docHeaders struct {
	activity, ld, vary []string
}

func newDocHeaders() docHeaders {
	return docHeaders{activity: []string{actors.ContentTypeActivity}, ld: []string{actors.ContentTypeLD}, vary: []string{"Accept"}}
}

func (d documents) actorOf(w http.ResponseWriter, r *http.Request) (*actors.Actor, bool) {
	o := originOf(r)
	name := chi.URLParam(r, "name")
	a, ok := o.SharedActor(name) // every route here only reads its actor
	if !ok || a.Kind != actors.KindPerson {
		http.Error(w, fmt.Sprintf("no actor %q on %s", name, o.Host), http.StatusNotFound)
		return nil, false
	}
	return a, true
}

// accepted is what a client's Accept asked for, read once: the document
// handlers ask twice (which form, then which media type).
type accepted struct {
	// json: it named a JSON type (an ActivityPub client does).
	json bool
	// html: a web page rather than an ActivityPub document. With no
	// preference, the document wins.
	html bool
	// ld: ld+json and not activity+json.
	ld bool
}

func acceptOf(r *http.Request) accepted {
	accept := r.Header.Get("Accept")
	var a accepted
	a.json = strings.Contains(accept, "json")
	a.html = !a.json && strings.Contains(accept, "text/html")
	a.ld = a.json && strings.Contains(accept, "application/ld+json") && !strings.Contains(accept, "application/activity+json")
	return a
}

// apContentType answers in the media type the client asked for: ld+json
// with the ActivityStreams profile if it asked for that, else activity+json.
func apContentType(r *http.Request) string {
	if acceptOf(r).ld {
		return actors.ContentTypeLD
	}
	return actors.ContentTypeActivity
}

func writeDoc(w http.ResponseWriter, r *http.Request, doc any) {
	b, err := actors.MarshalDoc(doc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", apContentType(r))
	w.Header().Set("Vary", "Accept")
	w.Write(b)
}

func (d documents) actor(w http.ResponseWriter, r *http.Request) {
	a, ok := d.actorOf(w, r)
	if !ok || d.gone(w, r, a, "") {
		return
	}
	accept := acceptOf(r)
	if p := d.world.Profile(a); p != nil && !accept.html {
		writeDoc(w, r, p)
		return
	}
	if accept.html {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Vary", "Accept")
		w.Write(a.ProfileHTML())
		return
	}
	d.writeRaw(w, accept, a.DocumentJSON())
}

func (d documents) instanceActor(w http.ResponseWriter, r *http.Request) {
	o := originOf(r)
	d.writeRaw(w, acceptOf(r), o.Instance.DocumentJSON())
}

// writeRaw answers with an already rendered document, in the media type
// the client asked for (accept.ld).
func (d documents) writeRaw(w http.ResponseWriter, accept accepted, doc []byte) {
	if doc == nil { // actors.Actor.DocumentJSON: a key file damaged since the start
		http.Error(w, "this actor's key cannot be loaded from the crowd's state directory; the crowd's log names the file", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h["Content-Type"] = d.headers.activity
	if accept.ld {
		h["Content-Type"] = d.headers.ld
	}
	h["Vary"] = d.headers.vary
	w.Write(doc)
}

func (d documents) profile(w http.ResponseWriter, r *http.Request) {
	a, ok := d.actorOf(w, r)
	if !ok {
		return
	}
	if accept := acceptOf(r); accept.json {
		d.writeRaw(w, accept, a.DocumentJSON())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(a.ProfileHTML())
}

func (d documents) collection(w http.ResponseWriter, r *http.Request) {
	if a, ok := d.actorOf(w, r); ok {
		d.writeCollection(w, r, a)
	}
}

// instanceCollection serves the collections the instance actor's document
// links, with true counts, like any actor's.
func (d documents) instanceCollection(w http.ResponseWriter, r *http.Request) {
	o := originOf(r)
	d.writeCollection(w, r, o.Instance)
}

func (d documents) writeCollection(w http.ResponseWriter, r *http.Request, a *actors.Actor) {
	page := 0
	if p := r.URL.Query().Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			http.Error(w, fmt.Sprintf("page %q is not a positive number", p), http.StatusBadRequest)
			return
		}
		page = n
	}
	switch chi.URLParam(r, "collection") {
	case "followers":
		writeDoc(w, r, d.world.FollowersDoc(a, page))
	case "following":
		writeDoc(w, r, d.world.FollowingDoc(a, page))
	default:
		writeDoc(w, r, d.world.OutboxDoc(a, page))
	}
}

func (d documents) featured(w http.ResponseWriter, r *http.Request) {
	if a, ok := d.actorOf(w, r); ok {
		writeFeatured(w, r, a)
	}
}

func (d documents) instanceFeatured(w http.ResponseWriter, r *http.Request) {
	o := originOf(r)
	writeFeatured(w, r, o.Instance)
}

// writeFeatured serves the featured (pinned posts) or featured hashtags
// collection the actor document links.
func writeFeatured(w http.ResponseWriter, r *http.Request, a *actors.Actor) {
	if chi.URLParam(r, "featured") == "tags" {
		writeDoc(w, r, actors.FeaturedTagsDoc(a))
		return
	}
	writeDoc(w, r, actors.FeaturedDoc(a))
}

func (d documents) object(w http.ResponseWriter, r *http.Request) {
	a, ok := d.actorOf(w, r)
	if !ok {
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/users/"+a.Name)
	if d.gone(w, r, a, path) {
		return
	}
	obj, err := d.world.Current(a, path)
	if errors.Is(err, actors.ErrNoObject) {
		http.Error(w, fmt.Sprintf("%s never sent %s: %v", a.Acct(), r.URL.Path, err), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeDoc(w, r, obj)
}

func (d documents) home(w http.ResponseWriter, r *http.Request) {
	o := originOf(r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n<h1>%s</h1>\n<p>One of the crowd's fake fediverse servers.</p>\n<ul>\n", o.Host, o.Host)
	for _, a := range o.Persons() {
		fmt.Fprintf(w, "<li><a href=\"%s\">@%s</a></li>\n", a.ProfileURL(), a.Acct())
	}
	fmt.Fprint(w, "</ul>\n</body></html>\n")
}
