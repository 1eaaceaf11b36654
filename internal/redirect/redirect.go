// Package redirect is the redirect policy of the crowd's outgoing ActivityPub
// fetches: a redirect is followed only to the host the fetch was made for, and
// any other is refused before a request leaves for it. A document must come
// from its id's origin, and a signed GET must not be replayed to a host it
// was not signed for (net/http copies the Signature header to the redirect).
// Every place that fetches documents uses it through its client; it moves
// into apclient when that package exists.
package redirect

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrCrossHost marks a redirect refused because it leads to another host.
var ErrCrossHost = errors.New("redirect to another host refused")

// ErrTooMany marks a chain of more than MaxRedirects redirects.
var ErrTooMany = errors.New("too many redirects")

// MaxRedirects is how many redirects a fetch follows (net/http's default).
const MaxRedirects = 10

// SameHost is an http.Client.CheckRedirect policy: req may go out only if its
// host (with port, case-insensitive) is the host of the first request, and
// at most MaxRedirects redirects are followed. A refusal wraps ErrCrossHost
// or ErrTooMany; http.Client then returns it (inside a *url.Error) without
// sending req.
func SameHost(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil // not a redirect
	}
	from := via[0].URL
	if !strings.EqualFold(req.URL.Host, from.Host) {
		return fmt.Errorf("%w: %s to %s", ErrCrossHost, from.Redacted(), req.URL.Redacted())
	}
	if len(via) >= MaxRedirects {
		return fmt.Errorf("%w: %s after %d", ErrTooMany, from.Redacted(), len(via))
	}
	return nil
}

// Client returns a copy of c (nil: the zero http.Client) whose redirects
// follow SameHost. The copy shares c's Transport, so it pools connections
// with c; c itself is left as it was.
func Client(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	out.CheckRedirect = SameHost
	return &out
}
