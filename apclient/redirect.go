package apclient

import (
	"fmt"
	"net/http"
	"strings"
)

// MaxRedirects is how many redirects a fetch follows (net/http's default).
const MaxRedirects = 10

// SameHost is the http.Client.CheckRedirect policy of every fetch: req may
// go out only if its host (with port, case-insensitive) is the host of the
// first request, and at most MaxRedirects redirects are followed. A document
// must come from its id's origin, and a signed GET must not reach a host it
// was not meant for. A refusal wraps ErrRedirect; http.Client returns it
// (inside a *url.Error) without sending req.
func SameHost(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil // not a redirect
	}
	from := via[0].URL
	if !strings.EqualFold(req.URL.Host, from.Host) {
		return fmt.Errorf("%w: %s to another host, %s", ErrRedirect, from.Redacted(), req.URL.Redacted())
	}
	if len(via) >= MaxRedirects {
		return fmt.Errorf("%w: %s after %d redirects", ErrRedirect, from.Redacted(), len(via))
	}
	return nil
}
