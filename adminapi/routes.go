package adminapi

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Route is one route of the admin API as net/http's ServeMux and chi take a
// pattern: "METHOD /path". A GET route also answers HEAD.
type Route string

// Method is the route's HTTP method.
func (r Route) Method() string { m, _, _ := strings.Cut(string(r), " "); return m }

// Path is the route's path.
func (r Route) Path() string { _, p, _ := strings.Cut(string(r), " "); return p }

// The admin API's routes. Every one is behind pasture's admin guard: a Host
// that is not one of the admin's own names is answered 421, a write from a
// web page's origin 403, a write whose body is not application/json 403.
// When the admin API listens off loopback, every route but RouteHealth,
// RouteReady, RouteMetrics, RouteCA and RouteLogin also requires the admin
// token (Options.Token), or the admin page's session cookie: without it,
// 401 with WWW-Authenticate: Bearer, and nothing done.
// Errors are JSON {"error": reason} unless a route says otherwise.
const (
	// RoutePage answers the admin page (HTML): the world, the follows and
	// the live activity log, read from the routes below.
	RoutePage Route = "GET /"

	// RouteHealth answers 200 "ok" while the process serves at all.
	RouteHealth Route = "GET /healthz"

	// RouteReady answers 200 "ready" once every listener is up, and 503 with
	// a plain-text reason while they start or stop.
	RouteReady Route = "GET /readyz"

	// RouteMetrics answers the Prometheus exposition of the crowd's metrics.
	RouteMetrics Route = "GET /metrics"

	// RouteCA answers the crowd's CA certificate (PEM,
	// application/x-pem-file), the one a SUT must trust. Its key never leaves
	// the state directory.
	RouteCA Route = "GET /ca.pem"

	// RouteLogin is the admin page's login link (?once=CODE, a single-use
	// code `crowd serve` logs at start): off loopback it sets the page's
	// session cookie (HttpOnly, SameSite=Strict) and answers 303 to
	// RoutePage, or 401 for a code used already or never made; on loopback
	// it only answers 303 to RoutePage.
	RouteLogin Route = "GET /login"

	// RouteWorld answers the WorldInfo: a page of origins (WorldQuery:
	// offset, limit), their actors, key ids and the SHA-256 of their public
	// keys, and the Summary of the whole world. It never carries a private
	// key. A bad offset or limit is 400.
	RouteWorld Route = "GET /api/world"

	// RouteActivities answers the latest activity log entries, []Entry
	// oldest first. Query: ActivitiesQuery (limit, actor, type, direction);
	// a limit that is not a non-negative number, a direction that is
	// neither in nor out, or an actor acct on one of the crowd's hosts that
	// names none of its actors (it would match nothing) is 400.
	RouteActivities Route = "GET /api/activities"

	// RouteStream follows the activity log live as Server-Sent Events
	// (text/event-stream): an "activity" event carries an Entry (its Seq as
	// the event id), a "lost" event {"lost": n} says how many entries the
	// server dropped for this reader because it read too slowly, a comment
	// line every 15 s keeps proxies from closing the stream. Query:
	// StreamQuery (actor, type, direction, backlog); a bad backlog,
	// direction or actor (as RouteActivities says) is 400.
	// Read it with Stream or ReadStream.
	RouteStream Route = "GET /api/activities/stream"

	// RouteTotals answers TotalsReply: the totals of every entry logged in
	// the crowd's state (across restarts and rotations), and the seq of the
	// last entry they count.
	RouteTotals Route = "GET /api/activities/totals"

	// RouteFollows answers []FollowsInfo: the follow relations of every
	// crowd actor that has any, or, with ?actor= (acct or id), of that one
	// actor (an unknown actor is 404, a name that is neither acct nor URL
	// 400).
	RouteFollows Route = "GET /api/follows"

	// RouteFollowing registers a Follow that another process sent for a
	// crowd actor (a FollowingRequest), so the Accept that comes back finds
	// it; it answers the Relation (pending, or as it already stood). A bad
	// body is 400, an unknown crowd actor 404.
	RouteFollowing Route = "POST /api/following"

	// RoutePrune lists, and unless dry_run forgets, the crowd's own Follows
	// pending (no Accept, no Reject) for longer than a PruneRequest's
	// older_than, answering the PruneResult; a bad duration is 400.
	RoutePrune Route = "POST /api/following/prune"

	// RouteSend builds, signs and delivers one activity now (a
	// SendRequest) and answers the SendResult, whatever the target answered.
	// 400: a request that cannot be carried out as asked; 403: a target with
	// a public address without allow_public_target; 404: an unknown
	// sender; 502: the target could not be resolved or reached.
	RouteSend Route = "POST /api/send"

	// RouteOutbox records Creates that another process (a separate `crowd
	// flood`) sent for crowd actors (an OutboxRequest), so their outboxes
	// list them; it answers the OutboxResult. A body that is not an
	// OutboxRequest, more than MaxOutboxItems items, or an item that names
	// no crowd actor or no note its builders made is 400, and then nothing
	// is recorded.
	RouteOutbox Route = "POST /api/outbox"

	// RouteLookup fetches an actor as a real server would (LookupQuery:
	// ?resource=acct:name@host, name@host or an actor URL) and answers the
	// LookupResult with its problems; a resource that is neither is 400, a
	// host that resolves to a public address without allow_public_target
	// is 403 (nothing was sent to it).
	RouteLookup Route = "GET /api/lookup"

	// RouteDeliveries answers the delivery queue, []Delivery earliest due
	// first.
	RouteDeliveries Route = "GET /api/deliveries"
)

// Query parameters of the routes.
const (
	ParamLimit     = "limit"
	ParamActor     = "actor"
	ParamType      = "type"
	ParamDirection = "direction"
	ParamBacklog   = "backlog"
	ParamResource  = "resource"
	ParamOnce      = "once"
	// ParamAllowPublicTarget ("true" or "false") is RouteLookup's
	// LookupQuery.AllowPublicTarget.
	ParamAllowPublicTarget = "allow_public_target"
)

// DefaultLimit is how many entries RouteActivities answers without a limit.
const DefaultLimit = 100

// AllEntries as ActivitiesQuery.Limit asks for every entry the server keeps.
const AllEntries = -1

// ActivitiesQuery is the query of RouteActivities.
type ActivitiesQuery struct {
	Filter
	// Limit is how many of the newest matching entries to answer: 0 for
	// DefaultLimit, AllEntries for every entry the server keeps (limit=0).
	Limit int
}

// StreamQuery is the query of RouteStream.
type StreamQuery struct {
	Filter
	// Backlog is how many of the latest matching entries to send first.
	Backlog int
}

// values encodes f's non-empty fields.
func (f Filter) values() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{ParamActor: f.Actor, ParamType: f.Type, ParamDirection: f.Direction} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// Values encodes q as RouteActivities' query.
func (q ActivitiesQuery) Values() url.Values {
	v := q.Filter.values()
	switch {
	case q.Limit > 0:
		v.Set(ParamLimit, strconv.Itoa(q.Limit))
	case q.Limit < 0:
		v.Set(ParamLimit, "0") // the server reads 0 as all it keeps
	}
	return v
}

// Values encodes q as RouteStream's query.
func (q StreamQuery) Values() url.Values {
	v := q.Filter.values()
	if q.Backlog > 0 {
		v.Set(ParamBacklog, strconv.Itoa(q.Backlog))
	}
	return v
}

// filterOf reads a Filter from a query; the error names a direction that
// is neither in nor out, which would otherwise match nothing, silently.
func filterOf(v url.Values) (Filter, error) {
	f := Filter{Actor: v.Get(ParamActor), Type: v.Get(ParamType), Direction: v.Get(ParamDirection)}
	switch f.Direction {
	case "", DirIn, DirOut:
		return f, nil
	}
	return Filter{}, fmt.Errorf("%s=%q: want %s (received by the crowd) or %s (sent by it)",
		ParamDirection, f.Direction, DirIn, DirOut)
}

// ParseActivitiesQuery reads RouteActivities' query, as the server does;
// the error names a limit that is not a non-negative number or a direction
// that is neither in nor out.
func ParseActivitiesQuery(v url.Values) (ActivitiesQuery, error) {
	if err := CheckQuery(v, ParamActor, ParamType, ParamDirection, ParamLimit); err != nil {
		return ActivitiesQuery{}, err
	}
	n, err := count(v, ParamLimit, DefaultLimit)
	if err != nil {
		return ActivitiesQuery{}, err
	}
	if n == 0 {
		n = AllEntries
	}
	f, err := filterOf(v)
	if err != nil {
		return ActivitiesQuery{}, err
	}
	return ActivitiesQuery{Filter: f, Limit: n}, nil
}

// ParseStreamQuery reads RouteStream's query, as the server does; the
// error names a backlog that is not a non-negative number or a direction
// that is neither in nor out.
func ParseStreamQuery(v url.Values) (StreamQuery, error) {
	if err := CheckQuery(v, ParamActor, ParamType, ParamDirection, ParamBacklog); err != nil {
		return StreamQuery{}, err
	}
	n, err := count(v, ParamBacklog, 0)
	if err != nil {
		return StreamQuery{}, err
	}
	f, err := filterOf(v)
	if err != nil {
		return StreamQuery{}, err
	}
	return StreamQuery{Filter: f, Backlog: n}, nil
}

// LookupQuery is the query of RouteLookup.
type LookupQuery struct {
	// Resource is the actor to look up: acct:name@host, name@host or an
	// actor URL.
	Resource string
	// AllowPublicTarget lets the lookup reach hosts with public addresses,
	// as SendRequest's does; without it they are refused before anything is
	// sent to them.
	AllowPublicTarget bool
}

// Values encodes q as RouteLookup's query.
func (q LookupQuery) Values() url.Values {
	v := url.Values{ParamResource: {q.Resource}}
	if q.AllowPublicTarget {
		v.Set(ParamAllowPublicTarget, "true")
	}
	return v
}

// ParseLookupQuery reads RouteLookup's query, as the server does; the
// error names an allow_public_target that is not a boolean.
func ParseLookupQuery(v url.Values) (LookupQuery, error) {
	if err := CheckQuery(v, ParamResource, ParamAllowPublicTarget); err != nil {
		return LookupQuery{}, err
	}
	q := LookupQuery{Resource: v.Get(ParamResource)}
	if s := v.Get(ParamAllowPublicTarget); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return LookupQuery{}, fmt.Errorf("%s=%q: want true or false", ParamAllowPublicTarget, s)
		}
		q.AllowPublicTarget = b
	}
	return q, nil
}

// CheckQuery refuses a query parameter the route does not read (acter=…),
// and one given twice (actor=a&actor=b): taken silently, a misspelt filter
// would answer everything as if it held, and a second value be ignored.
// known are the route's parameters.
func CheckQuery(v url.Values, known ...string) error {
	for _, name := range slices.Sorted(maps.Keys(v)) {
		switch {
		case !slices.Contains(known, name):
			return fmt.Errorf("%q is no query parameter of this route (it takes %s)", name, strings.Join(known, ", "))
		case len(v[name]) > 1:
			return fmt.Errorf("%s is given %d times: give it once (a list is comma-separated, as type=Follow,Accept)", name, len(v[name]))
		}
	}
	return nil
}

// count reads the non-negative number in v's parameter name, def when absent.
func count(v url.Values, name string, def int) (int, error) {
	s := v.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not a non-negative number", name, s)
	}
	return n, nil
}
