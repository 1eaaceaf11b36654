package webfinger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ParseAcct splits "acct:name@host", "name@host" or "@name@host" into its
// parts, failing with ErrBadResource.
func ParseAcct(s string) (user, host string, err error) {
	s = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "acct:"), "@")
	user, host, ok := strings.Cut(s, "@")
	if !ok || user == "" || host == "" || strings.ContainsAny(host, "@/?# ") || strings.ContainsAny(user, "/?# ") {
		return "", "", fmt.Errorf("%w: %q is not of the form name@host", ErrBadResource, s)
	}
	return user, strings.ToLower(host), nil
}

// Fetcher fetches a WebFinger answer: apclient.Fetcher's WebFinger, which
// makes the GET of https://host/.well-known/webfinger?resource=acct:user@host
// with its body limit and redirect policy, and fails on any answer but a 200
// with an error that has a StatusCode() int method.
type Fetcher interface {
	WebFinger(ctx context.Context, user, host string) ([]byte, error)
}

// Lookup asks host's WebFinger endpoint about acct through f and returns
// its JRD. The JRD must have an ActivityPub self link; errors name the
// account and what went wrong, and a 404 wraps ErrNotFound.
func Lookup(ctx context.Context, f Fetcher, acct string) (JRD, error) {
	user, host, err := ParseAcct(acct)
	if err != nil {
		return JRD{}, err
	}
	body, err := f.WebFinger(ctx, user, host)
	var status interface{ StatusCode() int }
	if errors.As(err, &status) && status.StatusCode() == http.StatusNotFound {
		return JRD{}, fmt.Errorf("%w: %s@%s: the server has no such account (404)", ErrNotFound, user, host)
	}
	if err != nil {
		return JRD{}, fmt.Errorf("webfinger %s@%s: %w", user, host, err)
	}
	var jrd JRD
	if err := json.Unmarshal(body, &jrd); err != nil {
		return JRD{}, fmt.Errorf("webfinger %s@%s: the answer is not a JRD: %v", user, host, err)
	}
	if jrd.Self() == "" {
		return JRD{}, fmt.Errorf("webfinger %s@%s: the JRD has no ActivityPub self link", user, host)
	}
	return jrd, nil
}
