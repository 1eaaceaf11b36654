package apclient

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crowdfed/crowd/signing"
)

// DefaultMaxBodyBytes bounds a fetched document when Options leave it unset.
const DefaultMaxBodyBytes = 1 << 20

// Options configures a Fetcher. Zero fields take the defaults shown.
type Options struct {
	// Client is the base client: its Transport (a dial guard, the roots
	// that trust the SUT), Timeout and Jar are kept. The Fetcher uses a copy
	// whose Transport is wrapped by the signing Transport and whose
	// CheckRedirect is SameHost; the client given is left as it was.
	// Default: a client with a 10 s timeout over http.DefaultTransport.
	Client *http.Client
	// Signer and As sign each GET (see Transport). Either nil sends GETs
	// unsigned.
	Signer *signing.Signer
	As     func(*http.Request) Identity
	// MaxBodyBytes bounds an answer's body; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Timeout bounds one fetch, on top of Client.Timeout; default none.
	Timeout time.Duration
}

// Fetcher fetches ActivityPub documents as Options say. It holds no
// mutable state and is safe for concurrent use.
type Fetcher struct {
	signed  *http.Client // GETs signed as Options.As
	plain   *http.Client // the same transport, unsigned (WebFinger)
	maxBody int64
	timeout time.Duration
}

// New returns a Fetcher for o.
func New(o Options) *Fetcher {
	base := http.Client{Timeout: 10 * time.Second}
	if o.Client != nil {
		base = *o.Client
	}
	base.CheckRedirect = SameHost
	plain := base
	signed := base
	signed.Transport = &Transport{Base: base.Transport, Signer: o.Signer, As: o.As}
	f := &Fetcher{signed: &signed, plain: &plain, maxBody: o.MaxBodyBytes, timeout: o.Timeout}
	if f.maxBody <= 0 {
		f.maxBody = DefaultMaxBodyBytes
	}
	return f
}

// Response is an answer as it came, whatever its status: for callers that
// judge it themselves (the lookup diagnosis).
type Response struct {
	URL         string // the final URL, after same-host redirects
	Status      int
	ContentType string
	Body        []byte // at most MaxBodyBytes
}

// Do sends a signed GET of target asking for accept (default
// signing.AcceptActivity) and returns the answer whatever its status. The
// error is set when there was no usable answer: the URL is not http(s)
// (ErrNotHTTP), a redirect was refused (ErrRedirect), the body is too large
// (ErrTooLarge), or the request failed.
func (f *Fetcher) Do(ctx context.Context, target, accept string) (Response, error) {
	return f.do(ctx, f.signed, target, accept)
}

// Get is Do for a document: the answer must be 200 (else a *StatusError
// wrapping ErrStatus) with a Content-Type that accept names (else
// ErrContentType; application/ld+json matches whatever its profile). It
// returns the body.
func (f *Fetcher) Get(ctx context.Context, target, accept string) ([]byte, error) {
	if accept == "" {
		accept = signing.AcceptActivity
	}
	return f.get(ctx, f.signed, target, accept, func(mt string) bool { return accepts(accept, mt) })
}

// get fetches target through c and checks the status and, with typeOK,
// the answer's media type.
func (f *Fetcher) get(ctx context.Context, c *http.Client, target, accept string, typeOK func(string) bool) ([]byte, error) {
	r, err := f.do(ctx, c, target, accept)
	if err != nil {
		return nil, err
	}
	if r.Status != http.StatusOK {
		return nil, &StatusError{URL: target, Code: r.Status, Body: strings.TrimSpace(string(r.Body[:min(len(r.Body), 200)]))}
	}
	mt, _, err := mime.ParseMediaType(r.ContentType)
	if err != nil || !typeOK(mt) {
		return nil, fmt.Errorf("%w: GET %s: %q, asked for %s", ErrContentType, target, r.ContentType, accept)
	}
	return r.Body, nil
}

func (f *Fetcher) do(ctx context.Context, c *http.Client, target, accept string) (Response, error) {
	if !IsHTTPURL(target) {
		return Response{}, fmt.Errorf("%w: %q", ErrNotHTTP, target)
	}
	if accept == "" {
		accept = signing.AcceptActivity
	}
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return Response{}, fmt.Errorf("GET %s: %w", target, err)
	}
	req.Header.Set("Accept", accept)
	resp, err := c.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("GET %s: %w", target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBody+1))
	if err != nil {
		return Response{}, fmt.Errorf("GET %s: reading the body: %w", target, err)
	}
	if int64(len(body)) > f.maxBody {
		return Response{}, fmt.Errorf("%w: GET %s: more than %d bytes", ErrTooLarge, target, f.maxBody)
	}
	return Response{URL: resp.Request.URL.String(), Status: resp.StatusCode,
		ContentType: resp.Header.Get("Content-Type"), Body: body}, nil
}

// IsHTTPURL reports whether s is an absolute http(s) URL with a host, the
// only URLs a Fetcher fetches.
func IsHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// accepts reports whether the media type mt (lower-case, without
// parameters) is one the Accept header value accept names, "*/*" and
// "type/*" included. Parameters (q, profile) are not judged.
func accepts(accept, mt string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		want, _, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		if want == mt || want == "*/*" || strings.HasSuffix(want, "/*") && strings.HasPrefix(mt, strings.TrimSuffix(want, "*")) {
			return true
		}
	}
	return false
}
