package apclient

import (
	"errors"
	"fmt"
)

// Errors of a fetch. Each error a Fetcher returns wraps one of them (%w) and
// names the URL or the account; errors.Is tells them apart.
var (
	// ErrNotHTTP marks a URL that is not absolute http(s) with a host.
	ErrNotHTTP = errors.New("not an http(s) URL")
	// ErrRedirect marks a redirect refused by SameHost (another host, or too
	// many); the request it pointed at was never sent.
	ErrRedirect = errors.New("redirect refused")
	// ErrTooLarge marks an answer whose body exceeds Options.MaxBodyBytes.
	ErrTooLarge = errors.New("document too large")
	// ErrStatus marks an answer other than 200; the error is a *StatusError.
	ErrStatus = errors.New("unexpected HTTP status")
	// ErrContentType marks a 200 answer whose Content-Type was not asked for.
	ErrContentType = errors.New("unexpected Content-Type")
	// ErrDocument marks a body that is not the document asked for (not a
	// JSON object, or missing what the typed helper needs).
	ErrDocument = errors.New("malformed document")
	// ErrBadAcct marks an account that is not of the form name@host.
	ErrBadAcct = errors.New("bad resource")
	// ErrNoAccount marks a WebFinger lookup its server answered with 404.
	ErrNoAccount = errors.New("not found")
)

// StatusError is a non-200 answer: the URL fetched, its status code and the
// start of its body (at most 200 bytes), which servers use to say why.
type StatusError struct {
	URL  string
	Code int
	Body string
}

// Error names the URL, the code and the server's reason.
func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("GET %s: HTTP %d", e.URL, e.Code)
	}
	return fmt.Sprintf("GET %s: HTTP %d: %s", e.URL, e.Code, e.Body)
}

// Unwrap makes errors.Is(err, ErrStatus) true.
func (e *StatusError) Unwrap() error { return ErrStatus }

// StatusCode is the answer's status code, for callers that tell a gone
// actor (404, 410) from a passing failure without naming this type.
func (e *StatusError) StatusCode() int { return e.Code }

// StatusCode returns the status code of the non-200 answer err wraps, or 0
// when err is not about a status.
func StatusCode(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}
