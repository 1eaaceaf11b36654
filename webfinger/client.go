package webfinger

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

// Lookup asks host's WebFinger endpoint (over https, as every server does)
// about acct and returns its JRD. The JRD must have an ActivityPub self
// link; errors name the account and what went wrong.
func Lookup(ctx context.Context, c *http.Client, acct string) (JRD, error) {
	user, host, err := ParseAcct(acct)
	if err != nil {
		return JRD{}, err
	}
	u := "https://" + host + "/.well-known/webfinger?resource=" + url.QueryEscape("acct:"+user+"@"+host)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return JRD{}, err
	}
	req.Header.Set("Accept", "application/jrd+json, application/json")
	resp, err := c.Do(req)
	if err != nil {
		return JRD{}, fmt.Errorf("webfinger %s@%s: %w", user, host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return JRD{}, fmt.Errorf("webfinger %s@%s: %w", user, host, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return JRD{}, fmt.Errorf("%w: %s@%s: the server has no such account (404)", ErrNotFound, user, host)
	}
	if resp.StatusCode != http.StatusOK {
		return JRD{}, fmt.Errorf("webfinger %s@%s: HTTP %d: %s", user, host, resp.StatusCode, strings.TrimSpace(string(body[:min(len(body), 200)])))
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
