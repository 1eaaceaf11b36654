package loadrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

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
	c    *adminapi.Client
	http *http.Client
}

func (a adminWeather) Weather(ctx context.Context) (weatherNow, error) {
	return a.call(ctx, http.MethodGet, nil)
}

func (a adminWeather) SetWeather(ctx context.Context, spec string) (weatherNow, error) {
	return a.call(ctx, http.MethodPut, map[string]string{"spec": spec})
}

// call sends method to /api/weather with body as JSON and reads the
// weather the crowd answers; a refusal carries the crowd's reason.
func (a adminWeather) call(ctx context.Context, method string, body any) (weatherNow, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return weatherNow{}, err
		}
		rd = bytes.NewReader(b)
	}
	where := method + " /api/weather"
	req, err := http.NewRequestWithContext(ctx, method, a.c.Base()+"/api/weather", rd)
	if err != nil {
		return weatherNow{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return weatherNow{}, fmt.Errorf("the crowd at %s: %s: %w", a.c.Base(), where, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return weatherNow{}, fmt.Errorf("the crowd at %s: %s: %w", a.c.Base(), where, err)
	}
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		return weatherNow{}, fmt.Errorf("the crowd at %s does not serve %s: it has no weather (a newer crowd serve has)", a.c.Base(), where)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return weatherNow{}, fmt.Errorf("the crowd at %s: %s: %d: %s", a.c.Base(), where, resp.StatusCode, e.Error)
	}
	var info struct {
		Spec    string         `json:"spec"`
		Counts  map[string]int `json:"counts"`
		Origins []struct {
			Host      string `json:"host"`
			Condition string `json:"condition"`
		} `json:"origins"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return weatherNow{}, fmt.Errorf("the crowd at %s: %s: the answer is not the weather: %w", a.c.Base(), where, err)
	}
	now := weatherNow{Spec: info.Spec, Counts: info.Counts}
	for _, o := range info.Origins {
		now.Origins = append(now.Origins, record.WeatherOrigin{Host: o.Host, Condition: o.Condition})
	}
	return now, nil
}
