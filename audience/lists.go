package audience

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Notification is the part of a Mastodon Notification entity the audience
// uses: Type is "mention", "favourite", "reblog", "follow", … and Status
// is set for those about a status.
type Notification struct {
	ID      string  `json:"id"`
	Type    string  `json:"type"`
	Account Account `json:"account"`
	Status  *Status `json:"status"`
}

// pageLimit is what each page of a list asks for: Mastodon's maximum for
// notifications and account lists.
const pageLimit = 80

// Notifications reads token's notifications, newest first, at most
// maxPages pages. complete is false when more pages were left unread.
func (c *Client) Notifications(ctx context.Context, token string, maxPages int) (ns []Notification, complete bool, err error) {
	return readList[Notification](ctx, c, token, "/api/v1/notifications", maxPages)
}

// Followers reads the followers of the account with id, at most maxPages
// pages (complete false when more were left).
func (c *Client) Followers(ctx context.Context, token, id string, maxPages int) ([]Account, bool, error) {
	return readList[Account](ctx, c, token, "/api/v1/accounts/"+url.PathEscape(id)+"/followers", maxPages)
}

// AccountStatuses reads the statuses of the account with id, newest
// first, at most maxPages pages (complete false when more were left).
func (c *Client) AccountStatuses(ctx context.Context, token, id string, maxPages int) ([]Status, bool, error) {
	return readList[Status](ctx, c, token, "/api/v1/accounts/"+url.PathEscape(id)+"/statuses", maxPages)
}

// FavouritedBy reads the accounts that favourited the status with id, at
// most maxPages pages (complete false when more were left).
func (c *Client) FavouritedBy(ctx context.Context, token, id string, maxPages int) ([]Account, bool, error) {
	return readList[Account](ctx, c, token, "/api/v1/statuses/"+url.PathEscape(id)+"/favourited_by", maxPages)
}

// RebloggedBy reads the accounts that boosted the status with id, at most
// maxPages pages (complete false when more were left).
func (c *Client) RebloggedBy(ctx context.Context, token, id string, maxPages int) ([]Account, bool, error) {
	return readList[Account](ctx, c, token, "/api/v1/statuses/"+url.PathEscape(id)+"/reblogged_by", maxPages)
}

// readList reads a paged list at path: each page's Link rel="next" to the
// next, as Mastodon pages them, never off the API's own host.
func readList[T any](ctx context.Context, c *Client, token, path string, maxPages int) ([]T, bool, error) {
	u := *c.base
	u.Path = path
	u.RawQuery = url.Values{"limit": {fmt.Sprint(pageLimit)}}.Encode()
	var out []T
	for range max(1, maxPages) {
		b, h, _, err := c.doURL(ctx, http.MethodGet, &u, nil, token)
		if err != nil {
			return out, false, err
		}
		var page []T
		if err := json.Unmarshal(b, &page); err != nil {
			return out, false, fmt.Errorf("%w: GET %s: %v", ErrMalformed, path, err)
		}
		out = append(out, page...)
		next := nextLink(h.Values("Link"))
		if len(page) == 0 || next == nil {
			return out, true, nil
		}
		if next.Host != c.base.Host || next.Scheme != c.base.Scheme {
			return out, false, fmt.Errorf("%w: GET %s: the next page is on another host (%s)", ErrMalformed, path, next.Host)
		}
		u = *next
	}
	return out, false, nil
}

// nextLink is the rel="next" target of Link header values, nil without one.
func nextLink(values []string) *url.URL {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for p := range strings.SplitSeq(params, ";") {
				k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "rel") && strings.EqualFold(strings.Trim(val, `"`), "next") {
					if u, err := url.Parse(target[1 : len(target)-1]); err == nil && u.IsAbs() {
						return u
					}
				}
			}
		}
	}
	return nil
}
