package apclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// RelSelf is the JRD link relation of an account's ActivityPub actor.
const RelSelf = "self"

// Link is one link of a JRD.
type Link struct {
	Rel      string `json:"rel"`
	Type     string `json:"type,omitempty"`
	Href     string `json:"href,omitempty"`
	Template string `json:"template,omitempty"`
}

// JRD is a JSON Resource Descriptor (RFC 7033): what a WebFinger lookup
// answers, and what the crowd's own origins serve.
type JRD struct {
	Subject string   `json:"subject"`
	Aliases []string `json:"aliases,omitempty"`
	Links   []Link   `json:"links"`
}

// Self is the href of the JRD's ActivityPub self link (activity+json or
// any ld+json profile), or "".
func (j JRD) Self() string { return j.selfLink().Href }

// selfLink is the JRD's first ActivityPub self link, or the zero Link.
func (j JRD) selfLink() Link {
	for _, l := range j.Links {
		if l.Rel == RelSelf && (l.Type == "application/activity+json" || strings.HasPrefix(l.Type, "application/ld+json")) {
			return l
		}
	}
	return Link{}
}

// ParseAcct splits "acct:name@host", "name@host" or "@name@host" into its
// parts, the host lower-cased, failing with ErrBadAcct.
func ParseAcct(s string) (user, host string, err error) {
	s = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "acct:"), "@")
	user, host, ok := strings.Cut(s, "@")
	if !ok || user == "" || host == "" || strings.ContainsAny(host, "@/?# ") || strings.ContainsAny(user, "/?# ") {
		return "", "", fmt.Errorf("%w: %q is not of the form name@host", ErrBadAcct, s)
	}
	return user, strings.ToLower(host), nil
}

// Lookup asks acct's host about it over WebFinger and returns its JRD,
// which must have an ActivityPub self link. Errors name the account and
// what went wrong; a malformed acct wraps ErrBadAcct, a 404 ErrNoAccount.
func (f *Fetcher) Lookup(ctx context.Context, acct string) (JRD, error) {
	user, host, err := ParseAcct(acct)
	if err != nil {
		return JRD{}, err
	}
	body, err := f.WebFinger(ctx, user, host)
	if StatusCode(err) == http.StatusNotFound {
		return JRD{}, fmt.Errorf("%w: %s@%s: the server has no such account (404)", ErrNoAccount, user, host)
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
