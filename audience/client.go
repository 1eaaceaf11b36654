package audience

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Sentinels wrapped by the Client's errors (errors.Is).
var (
	// ErrNoClientAPI: the server answered 404 where the Mastodon client API
	// should be.
	ErrNoClientAPI = errors.New("no Mastodon client API")
	// ErrUnauthorized: the server refused the token (401).
	ErrUnauthorized = errors.New("token refused")
	// ErrForbidden: the server refused the action (403).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: the account or resource does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrRateLimited: the server answered 429.
	ErrRateLimited = errors.New("rate limited")
	// ErrMalformed: the answer is not the JSON the API documents.
	ErrMalformed = errors.New("malformed answer")
)

// maxBody bounds every answer the client reads: a home timeline of 40
// statuses is well under 1 MiB.
const maxBody = 8 << 20

// Account is the part of a Mastodon Account entity the audience uses.
type Account struct {
	ID          string `json:"id"`
	Username    string `json:"username"`
	Acct        string `json:"acct"` // "name" for a local account, "name@host" for a remote one
	URL         string `json:"url"`
	DisplayName string `json:"display_name"`
	Locked      bool   `json:"locked"`
}

// Status is the part of a Mastodon Status entity the audience uses. URI is
// the ActivityPub id of the note: what the crowd sent as the Note's id, or
// what the SUT sends to the crowd.
type Status struct {
	ID         string    `json:"id"`
	URI        string    `json:"uri"`
	URL        string    `json:"url"`
	CreatedAt  time.Time `json:"created_at"`
	Content    string    `json:"content"`
	Visibility string    `json:"visibility"`
	Account    Account   `json:"account"`
	Reblog     *Status   `json:"reblog"`
}

// Relationship is the part of a Mastodon Relationship entity the audience
// uses.
type Relationship struct {
	ID         string `json:"id"`
	Following  bool   `json:"following"`
	Requested  bool   `json:"requested"`
	FollowedBy bool   `json:"followed_by"`
}

// Instance is the part of GET /api/v1/instance the audience uses.
type Instance struct {
	URI     string `json:"uri"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

// APIError is a non-2xx answer of the client API. It wraps the sentinel of
// its status (ErrUnauthorized for 401 …) so callers test with errors.Is.
type APIError struct {
	Method  string
	URL     string
	Status  int
	Message string // the API's {"error": …}, or the start of the body
}

// Error says which request got which answer, with the server's message.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s %s answered %d: %s", e.Method, e.URL, e.Status, msg)
}

// Unwrap returns the sentinel of the status, or nil.
func (e *APIError) Unwrap() error {
	switch e.Status {
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound, http.StatusGone:
		return ErrNotFound
	case http.StatusTooManyRequests:
		return ErrRateLimited
	}
	return nil
}

// Client is a Mastodon client-API client for one server. It is safe for
// concurrent use; each call names the bearer token it acts with.
type Client struct {
	base *url.URL
	hc   *http.Client
	ua   string
}

// NewClient returns a client of the API at base (an http or https URL with
// no path, e.g. "https://gts.test"). hc carries the transport (TLS roots,
// the dialer that refuses public addresses) and its Timeout bounds each
// call; userAgent is sent with every request (GoToSocial refuses an empty
// one).
func NewClient(base string, hc *http.Client, userAgent string) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(base), "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
		return nil, fmt.Errorf("client API %q: want https://host (or http://host:port)", base)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{base: u, hc: hc, ua: userAgent}, nil
}

// Base is the API's base URL, e.g. "https://gts.test".
func (c *Client) Base() string { return c.base.String() }

// do sends one request (form-encoded body for POST) with token (none when
// ""), and returns the 2xx answer's body and status. Any other status is an
// *APIError; ctx ends the call.
func (c *Client) do(ctx context.Context, method, path string, query, form url.Values, token string) ([]byte, int, error) {
	u := *c.base
	u.Path = path
	if len(query) > 0 {
		// id[]=1&id[]=2: Mastodon's array parameters keep their brackets.
		u.RawQuery = strings.ReplaceAll(strings.ReplaceAll(query.Encode(), "%5B", "["), "%5D", "]")
	}
	b, _, code, err := c.doURL(ctx, method, &u, form, token)
	return b, code, err
}

// doURL is do for a whole URL, also returning the answer's headers (a
// list's Link to its next page).
func (c *Client) doURL(ctx context.Context, method string, u *url.URL, form url.Values, token string) ([]byte, http.Header, int, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, nil, 0, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	if c.ua != "" {
		req.Header.Set("User-Agent", c.ua)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, resp.Header, resp.StatusCode, fmt.Errorf("%s %s: reading the answer: %w", method, u.Redacted(), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, resp.Header, resp.StatusCode, &APIError{Method: method, URL: u.Redacted(), Status: resp.StatusCode, Message: errorMessage(b)}
	}
	return b, resp.Header, resp.StatusCode, nil
}

// errorMessage is the API's {"error": …}, else the start of the body.
func errorMessage(b []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if strings.HasPrefix(s, "<") {
		return "" // an HTML error page says nothing the status does not
	}
	return s
}

// decode unmarshals an answer into v, wrapping ErrMalformed.
func decode(b []byte, v any, what string) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
	}
	return nil
}

// Instance reads GET /api/v1/instance (no token). A 404 there wraps
// ErrNoClientAPI: the server does not speak the Mastodon client API.
func (c *Client) Instance(ctx context.Context) (Instance, error) {
	var in Instance
	b, _, err := c.do(ctx, http.MethodGet, "/api/v1/instance", nil, nil, "")
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return in, fmt.Errorf("%w at %s: %w", ErrNoClientAPI, c.Base(), err)
		}
		return in, err
	}
	if err := decode(b, &in, "GET /api/v1/instance"); err != nil {
		return in, err
	}
	if in.URI == "" && in.Title == "" && in.Version == "" {
		// Some JSON, but not an instance: another kind of server on the port.
		return in, fmt.Errorf("%w at %s: GET /api/v1/instance answered no uri, title or version", ErrNoClientAPI, c.Base())
	}
	return in, nil
}

// VerifyCredentials returns the account token acts as.
func (c *Client) VerifyCredentials(ctx context.Context, token string) (Account, error) {
	var a Account
	b, _, err := c.do(ctx, http.MethodGet, "/api/v1/accounts/verify_credentials", nil, nil, token)
	if err != nil {
		return a, err
	}
	err = decode(b, &a, "verify_credentials")
	if err == nil && a.ID == "" {
		err = fmt.Errorf("%w: verify_credentials: an account without an id", ErrMalformed)
	}
	return a, err
}

// Lookup finds an account by acct ("name" for a local account,
// "name@host" for a remote one) with GET /api/v1/accounts/lookup. The
// lookup skips WebFinger, so a remote account the server has never seen is
// not found there: then it asks GET /api/v2/search?resolve=true, which
// resolves it, as a client does when a user pastes an address. token may
// be "" where the server allows it. A missing account wraps ErrNotFound.
func (c *Client) Lookup(ctx context.Context, token, acct string) (Account, error) {
	acct = strings.TrimPrefix(strings.TrimPrefix(acct, "acct:"), "@")
	var a Account
	b, _, err := c.do(ctx, http.MethodGet, "/api/v1/accounts/lookup", url.Values{"acct": {acct}}, nil, token)
	if err == nil {
		if err := decode(b, &a, "accounts/lookup"); err != nil {
			return a, err
		}
		if a.ID == "" {
			return a, fmt.Errorf("%w: accounts/lookup: an account without an id", ErrMalformed)
		}
		return a, nil
	}
	if !errors.Is(err, ErrNotFound) || !strings.Contains(acct, "@") {
		return a, err
	}
	lookupErr := err
	b, _, err = c.do(ctx, http.MethodGet, "/api/v2/search",
		url.Values{"q": {"@" + acct}, "resolve": {"true"}, "type": {"accounts"}, "limit": {"5"}}, nil, token)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return a, lookupErr
		}
		return a, err
	}
	var res struct {
		Accounts []Account `json:"accounts"`
	}
	if err := decode(b, &res, "v2/search"); err != nil {
		return a, err
	}
	for _, r := range res.Accounts {
		if strings.EqualFold(r.Acct, acct) && r.ID != "" {
			return r, nil
		}
	}
	return a, lookupErr
}

// Follow follows the account with id and returns the relationship (on most
// servers following=false, requested=true until the Accept arrives).
func (c *Client) Follow(ctx context.Context, token, id string) (Relationship, error) {
	var r Relationship
	b, _, err := c.do(ctx, http.MethodPost, "/api/v1/accounts/"+id+"/follow", nil, url.Values{}, token)
	if err != nil {
		return r, err
	}
	return r, decode(b, &r, "accounts/:id/follow")
}

// Relationships returns the relationships of token's account to the
// accounts ids (GET /api/v1/accounts/relationships?id[]=…).
func (c *Client) Relationships(ctx context.Context, token string, ids []string) ([]Relationship, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	b, _, err := c.do(ctx, http.MethodGet, "/api/v1/accounts/relationships", url.Values{"id[]": ids}, nil, token)
	if err != nil {
		return nil, err
	}
	var rs []Relationship
	return rs, decode(b, &rs, "accounts/relationships")
}

// PostStatus posts a status with text and visibility ("public" …).
func (c *Client) PostStatus(ctx context.Context, token, text, visibility string) (Status, error) {
	var s Status
	b, _, err := c.do(ctx, http.MethodPost, "/api/v1/statuses", nil, url.Values{"status": {text}, "visibility": {visibility}}, token)
	if err != nil {
		return s, err
	}
	if err := decode(b, &s, "statuses"); err != nil {
		return s, err
	}
	if s.URI == "" {
		return s, fmt.Errorf("%w: statuses: a status without a uri", ErrMalformed)
	}
	return s, nil
}

// HomeTimeline reads the newest limit statuses of token's home timeline.
// partial is true for Mastodon's 206 (the home feed is being regenerated:
// the list may lack statuses that belong there).
func (c *Client) HomeTimeline(ctx context.Context, token string, limit int) (statuses []Status, partial bool, err error) {
	return c.HomeTimelinePage(ctx, token, limit, "")
}

// HomeTimelinePage reads the page of token's home timeline just older than
// the status with id maxID (Mastodon's max_id; "" for the newest page).
// The next page's maxID is the last status's ID.
func (c *Client) HomeTimelinePage(ctx context.Context, token string, limit int, maxID string) (statuses []Status, partial bool, err error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if maxID != "" {
		q.Set("max_id", maxID)
	}
	b, code, err := c.do(ctx, http.MethodGet, "/api/v1/timelines/home", q, nil, token)
	if err != nil {
		return nil, false, err
	}
	st, err := DecodeStatuses(b)
	return st, code == http.StatusPartialContent, err
}

// DecodeStatuses parses a JSON array of Status entities (a timeline). It
// fails, wrapping ErrMalformed, on anything else; statuses without a uri
// are dropped (nothing can match them).
func DecodeStatuses(b []byte) ([]Status, error) {
	var st []Status
	if err := decode(b, &st, "timeline"); err != nil {
		return nil, err
	}
	out := st[:0]
	for _, s := range st {
		if s.URI != "" {
			out = append(out, s)
		}
	}
	return out, nil
}
