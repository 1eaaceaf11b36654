package adminapi

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
)

// ParamOffset is RouteWorld's query parameter: the 0-based position, among
// the served origins, of the first origin of the page.
const ParamOffset = "offset"

// World pages: RouteWorld lists at most DefaultWorldPage origins (with
// their actors) unless the query's limit asks for up to MaxWorldPage, so a
// world of 10 000 origins × 100 actors answers in pages of a few MB.
const (
	DefaultWorldPage = 100
	MaxWorldPage     = 1000
)

// WorldQuery is RouteWorld's query: which page of origins to list.
type WorldQuery struct {
	// Offset is the position of the page's first origin (0 the first).
	Offset int
	// Limit is how many origins the page lists; 0 is DefaultWorldPage.
	Limit int
}

// Values renders q as a URL query.
func (q WorldQuery) Values() url.Values {
	v := url.Values{}
	if q.Offset > 0 {
		v.Set(ParamOffset, strconv.Itoa(q.Offset))
	}
	if q.Limit > 0 {
		v.Set(ParamLimit, strconv.Itoa(q.Limit))
	}
	return v
}

// ParseWorldQuery reads RouteWorld's query, as the server does: the error
// names an offset or limit that is not a non-negative number, or a limit
// above MaxWorldPage.
func ParseWorldQuery(v url.Values) (WorldQuery, error) {
	if err := CheckQuery(v, ParamOffset, ParamLimit); err != nil {
		return WorldQuery{}, err
	}
	off, err := count(v, ParamOffset, 0)
	if err != nil {
		return WorldQuery{}, err
	}
	n, err := count(v, ParamLimit, DefaultWorldPage)
	if err != nil {
		return WorldQuery{}, err
	}
	if n == 0 {
		n = DefaultWorldPage
	}
	if n > MaxWorldPage {
		return WorldQuery{}, fmt.Errorf("%s=%d: at most %d origins a page", ParamLimit, n, MaxWorldPage)
	}
	return WorldQuery{Offset: off, Limit: n}, nil
}

// WorldSummary is what RouteWorld says of the whole world besides the page
// of origins it lists.
type WorldSummary struct {
	// Origins is how many origins the world has (every shard's; the page
	// lists this shard's).
	Origins int `json:"origins"`
	// Served is how many origins this crowd serves (its shard's).
	Served int `json:"served"`
	// ActorsPerOrigin is how many Person actors every origin has.
	ActorsPerOrigin int `json:"actors_per_origin"`
	// Offset is the position of the page's first origin among those served.
	Offset int `json:"offset"`
	// Next is the offset of the next page, 0 on the last page.
	Next int `json:"next,omitempty"`
}

// WorldPage calls RouteWorld for one page of origins.
func (c *Client) WorldPage(ctx context.Context, q WorldQuery) (WorldInfo, error) {
	var w WorldInfo
	return w, c.call(ctx, RouteWorld, q.Values(), nil, &w)
}
