package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrBadAnswer marks a 2xx answer that is not the document the route
// promises: whatever answered is not (this version of) the admin API.
var ErrBadAnswer = errors.New("the answer is not what the admin API sends")

// Error is a non-2xx answer of the admin API.
type Error struct {
	// Route is the route called; Server names the admin API (Options.Name).
	Route  Route
	Server string
	// Status is the HTTP status answered.
	Status int
	// Reason is the API's own {"error": reason}: the status says which kind
	// (400 bad request, 403 refused (by the admin guard too), 404 unknown
	// crowd actor, 413 body too large, 421 refused by the admin guard, 502
	// target unreachable). It is "" when the
	// answer was not the API's JSON error: another program answered, or a
	// route that answers text (RouteReady's 503); Body holds its start then.
	Reason string
	Body   string
	// Hint says how to pass the admin token (Options.TokenHint); it makes
	// a 401's message. TokenSent says whether the request carried one.
	Hint      string
	TokenSent bool
}

// ErrUnauthorized marks a 401 answer: the admin API listens off loopback
// and the token was missing or wrong. An *Error of status 401 wraps it.
var ErrUnauthorized = errors.New("the admin API wants its token")

// Unwrap is ErrUnauthorized for a 401, else nil.
func (e *Error) Unwrap() error {
	if e.Status == http.StatusUnauthorized {
		return ErrUnauthorized
	}
	return nil
}

// Error is the API's reason as it gave it (written to be shown), or says
// what answered instead.
func (e *Error) Error() string {
	switch {
	case e.Status == http.StatusUnauthorized && e.Hint != "" && e.TokenSent:
		return fmt.Sprintf("the admin API at %s refused the token given (401 on %s): %s", e.Server, e.Route.Path(), e.Hint)
	case e.Status == http.StatusUnauthorized && e.Hint != "":
		return fmt.Sprintf("the admin API at %s wants its token (401 on %s): %s", e.Server, e.Route.Path(), e.Hint)
	case e.Reason != "":
		return e.Reason
	case e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed:
		// Something answers, but not the admin API: another program, or a
		// crowd too old to have the route.
		return fmt.Sprintf("%s at %s answered HTTP %d: is that a `crowd serve` admin API?", e.Route.Path(), e.Server, e.Status)
	}
	return fmt.Sprintf("%s at %s answered HTTP %d: %s", e.Route.Path(), e.Server, e.Status, e.Body)
}

// UnreachableError says that nothing answers at the admin API's address (the
// connection was refused or could not be made).
type UnreachableError struct {
	Server string // Options.Name
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("no crowd serve answers at %s: start one with `crowd serve` (%v)", e.Server, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Options configure a Client. The zero Options are fine for an admin API on
// loopback.
type Options struct {
	// HTTP sends the requests; nil: DefaultHTTPClient().
	HTTP *http.Client
	// Name names the admin API in error messages ("127.0.0.1:9180
	// (--admin)"); "" names it by the base URL's host:port.
	Name string
	// Token is the admin token, sent as Authorization: Bearer with every
	// request; an admin API off loopback requires it. "" sends none.
	Token string
	// TokenHint replaces the message of a 401 answer, saying how to give
	// this client the token ("pass --admin-token"); "" keeps the API's.
	TokenHint string
}

// DefaultHTTPClient is the HTTP client a Client uses unless given one: no
// proxy (the admin API is never behind the user's), a 5 s dial (loopback or
// a compose network answers within seconds or not at all) and 2 min for an
// answer's headers (a send waits for its target's answer).
func DefaultHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		ResponseHeaderTimeout: 2 * time.Minute,
		Proxy:                 nil,
	}}
}

// Client calls the admin API of a running `crowd serve`: one method per
// route, JSON in and out. Requests carry the base URL's host:port as their
// Host, which the admin guard accepts when it is an IP, localhost, the
// --admin host or a name added with --admin-host; writes are sent as
// application/json, which the guard requires. Errors: *UnreachableError when
// nothing answers, *Error for a non-2xx answer, ErrBadAnswer for a 2xx
// answer that is not the route's document, the context's error when ctx
// ended. Safe for concurrent use.
type Client struct {
	base  string // scheme://host:port, no trailing slash
	name  string
	http  *http.Client
	token string
	hint  string
}

// New returns a Client for the admin API at base, an http or https URL of
// its root ("http://127.0.0.1:9180"). The error says what base lacks.
func New(base string, o Options) (*Client, error) {
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return nil, fmt.Errorf("admin API address %q: %v", base, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("admin API address %q: not an http or https URL", base)
	case u.Host == "" || u.User != nil:
		return nil, fmt.Errorf("admin API address %q: no host", base)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("admin API address %q: the admin API lives at the root, with no path", base)
	}
	c := &Client{base: u.Scheme + "://" + u.Host, name: o.Name, http: o.HTTP, token: o.Token, hint: o.TokenHint}
	if c.name == "" {
		c.name = u.Host
	}
	if c.http == nil {
		c.http = DefaultHTTPClient()
	}
	return c, nil
}

// Base is the admin API's root URL, "http://host:port".
func (c *Client) Base() string { return c.base }

// Health calls RouteHealth: nil while the crowd serves.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.bytes(ctx, RouteHealth)
	return err
}

// Ready calls RouteReady: nil once every listener is up; while they start
// or stop, an *Error with status 503.
func (c *Client) Ready(ctx context.Context) error {
	_, err := c.bytes(ctx, RouteReady)
	return err
}

// Metrics calls RouteMetrics: the Prometheus exposition, as text.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) { return c.bytes(ctx, RouteMetrics) }

// CA calls RouteCA: the crowd's CA certificate, PEM.
func (c *Client) CA(ctx context.Context) ([]byte, error) { return c.bytes(ctx, RouteCA) }

// World calls RouteWorld for its first page (WorldPage for the others).
func (c *Client) World(ctx context.Context) (WorldInfo, error) {
	var w WorldInfo
	return w, c.call(ctx, RouteWorld, nil, nil, &w)
}

// Follows calls RouteFollows: every crowd actor's relations, or actor's
// ("" for all).
func (c *Client) Follows(ctx context.Context, actor string) ([]FollowsInfo, error) {
	var q url.Values
	if actor != "" {
		q = url.Values{ParamActor: {actor}}
	}
	var fi []FollowsInfo
	return fi, c.call(ctx, RouteFollows, q, nil, &fi)
}

// RegisterFollowing calls RouteFollowing.
func (c *Client) RegisterFollowing(ctx context.Context, req FollowingRequest) (Relation, error) {
	var r Relation
	return r, c.call(ctx, RouteFollowing, nil, req, &r)
}

// Prune calls RoutePrune.
func (c *Client) Prune(ctx context.Context, req PruneRequest) (PruneResult, error) {
	var r PruneResult
	return r, c.call(ctx, RoutePrune, nil, req, &r)
}

// Send calls RouteSend.
func (c *Client) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	var r SendResult
	return r, c.call(ctx, RouteSend, nil, req, &r)
}

// RecordOutbox calls RouteOutbox with items, MaxOutboxItems at a time.
func (c *Client) RecordOutbox(ctx context.Context, items []OutboxItem) error {
	return inBatches(items, MaxOutboxItems, func(items []OutboxItem) error {
		var r OutboxResult
		return c.call(ctx, RouteOutbox, nil, OutboxRequest{Items: items}, &r)
	})
}

// inBatches calls record with items, at most limit at a time, in order, and
// stops at the first error: a caller never sends what the server refuses
// for its size.
func inBatches[T any](items []T, limit int, record func([]T) error) error {
	for len(items) > 0 {
		n := min(len(items), limit)
		if err := record(items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

// Lookup calls RouteLookup with q.
func (c *Client) Lookup(ctx context.Context, q LookupQuery) (LookupResult, error) {
	var r LookupResult
	return r, c.call(ctx, RouteLookup, q.Values(), nil, &r)
}

// Activities calls RouteActivities.
func (c *Client) Activities(ctx context.Context, q ActivitiesQuery) ([]Entry, error) {
	var es []Entry
	return es, c.call(ctx, RouteActivities, q.Values(), nil, &es)
}

// Totals calls RouteTotals.
func (c *Client) Totals(ctx context.Context) (TotalsReply, error) {
	var t TotalsReply
	return t, c.call(ctx, RouteTotals, nil, nil, &t)
}

// Deliveries calls RouteDeliveries.
func (c *Client) Deliveries(ctx context.Context) ([]Delivery, error) {
	var ds []Delivery
	return ds, c.call(ctx, RouteDeliveries, nil, nil, &ds)
}

// Stream opens RouteStream; it stays open until ctx ends, the server ends
// it, or it is closed.
func (c *Client) Stream(ctx context.Context, q StreamQuery) (*Stream, error) {
	resp, err := c.do(ctx, RouteStream, q.Values(), nil)
	if err != nil {
		return nil, err
	}
	return &Stream{body: resp.Body}, nil
}

// bytes calls a route that answers a document that is not JSON, up to 1 MiB.
func (c *Client) bytes(ctx context.Context, r Route) ([]byte, error) {
	resp, err := c.do(ctx, r, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, c.transportError(ctx, r, err)
	}
	return b, nil
}

// call sends r with query and, for a POST, body as JSON, and decodes the
// JSON answer into v.
func (c *Client) call(ctx context.Context, r Route, query url.Values, body, v any) error {
	resp, err := c.do(ctx, r, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the crowd at %s: %s: %w: %v", c.name, r, ErrBadAnswer, err)
	}
	return nil
}

// do sends r and returns the response when it is 2xx, for the caller to
// read and close.
func (c *Client) do(ctx context.Context, r Route, query url.Values, body any) (*http.Response, error) {
	u := c.base + r.Path()
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method(), u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, r, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Route: r, Server: c.name, Status: resp.StatusCode, Hint: c.hint, TokenSent: c.token != ""}
	var reason struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &reason) == nil && reason.Error != "" {
		e.Reason = reason.Error
	} else {
		e.Body = strings.TrimSpace(string(b))
	}
	return nil, e
}

// transportError says why r got no (whole) answer: ctx's error when it
// ended, an *UnreachableError when no connection could be made, else the
// cause without net/http's "Get \"url\":" prefix (the message names the
// server already).
func (c *Client) transportError(ctx context.Context, r Route, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		if op.Err != nil {
			cause = op.Err
		}
		return &UnreachableError{Server: c.name, Err: cause}
	}
	return fmt.Errorf("the crowd at %s: %s: %w", c.name, r, cause)
}
