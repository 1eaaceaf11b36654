package loadrun

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
)

// The sinks of a flood attached to a crowd serving elsewhere: the flood
// keeps its bookkeeping in the world's own types and speaks only HTTP to
// its target, so the crowd's admin API is reached through these adapters.

// adminOutbox is the outbox sink that lists the Creates sent in the
// attached crowd's outboxes (adminapi.RouteOutbox).
func adminOutbox(c *adminapi.Client) traffic.OutboxSink {
	return adminSink(c.RecordOutbox, func(n actors.SentNote) adminapi.OutboxItem { return adminapi.OutboxItem(n) })
}

// adminReactions is the reaction sink that keeps the Likes and Announces
// sent, and their Undos, in the attached crowd (adminapi.RouteRecordReactions).
func adminReactions(c *adminapi.Client) traffic.ReactionSink {
	return adminSink(c.RecordReactions, func(r actors.Reaction) adminapi.ReactionItem { return adminapi.ReactionItem(r) })
}

// adminChanges is the change sink that records the edits and deletions
// made in the attached crowd (adminapi.RouteChanges).
func adminChanges(c *adminapi.Client) traffic.ChangeSink {
	return adminSink(c.RecordChanges, func(ch actors.Change) adminapi.ChangeItem { return adminapi.ChangeItem(ch) })
}

// adminSink hands a flood sink's batch, each item converted to its wire
// type, to an admin client's record call.
func adminSink[In, Out any](record func(context.Context, []Out) error, conv func(In) Out) func(context.Context, []In) error {
	return func(ctx context.Context, items []In) error {
		out := make([]Out, len(items))
		for i, it := range items {
			out[i] = conv(it)
		}
		return record(ctx, out)
	}
}

// adminWeather is the attached crowd's weather, through its admin API
// (GET and PUT /api/weather).
type adminWeather struct {
	c *adminapi.Client
}

func (a adminWeather) Weather(ctx context.Context) (weatherNow, error) {
	return weatherFrom(a.c.Weather(ctx))
}

func (a adminWeather) SetWeather(ctx context.Context, spec string) (weatherNow, error) {
	return weatherFrom(a.c.SetWeather(ctx, spec))
}

// weatherFrom is the admin API's weather as the timeline records it; a
// crowd too old to serve the route says so.
func weatherFrom(info adminapi.WeatherInfo, err error) (weatherNow, error) {
	var refused *adminapi.Error
	if errors.As(err, &refused) && (refused.Status == http.StatusNotFound || refused.Status == http.StatusMethodNotAllowed) {
		return weatherNow{}, fmt.Errorf("%w: it has no weather (a newer crowd serve has)", err)
	}
	if err != nil {
		return weatherNow{}, err
	}
	now := weatherNow{Spec: info.Spec, Since: info.Since, Changes: info.Changes, Counts: info.Counts}
	if !info.Now.IsZero() {
		// On this machine's clock: the crowd's may be set otherwise.
		now.Since = time.Now().Add(-info.Now.Sub(info.Since))
	}
	for _, o := range info.Origins {
		now.Origins = append(now.Origins, record.WeatherOrigin{Host: o.Host, Condition: o.Condition})
	}
	return now, nil
}
