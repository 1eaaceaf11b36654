package adminapi

import (
	"context"
	"time"
)

// The routes of a running flood's live state. A flood attached to a crowd
// serve (crowd flood, crowd run) pushes a FloodLive once a second; the
// serve keeps the latest minutes of each run, shows them on the admin page
// and adds the pushed metrics to its own /metrics, so one scrape target
// shows the load beside the crowd's server side.
const (
	// RouteFloodLivePush takes one FloodLive (JSON). A body that is not
	// one, names no run (no seed), or whose metrics are not crowd_flood_
	// metric families in the delimited protobuf exposition, is 400.
	RouteFloodLivePush Route = "POST /api/flood/live"

	// RouteFloodLive answers []FloodLiveRun: the runs pushed in the last
	// FloodLiveKeep, newest first, each with its latest FloodLiveTicks
	// seconds.
	RouteFloodLive Route = "GET /api/flood/live"
)

// How much of the pushed runs the serve keeps.
const (
	// FloodLiveTicks is how many one-second ticks of a run are kept (and
	// plotted): the last ten minutes.
	FloodLiveTicks = 600
	// FloodLiveKeep is how long a run that stopped pushing is kept: its
	// final values stay on /metrics for scrapers to take.
	FloodLiveKeep = 15 * time.Minute
)

// FloodRun names a run: the labels its metrics carry.
type FloodRun struct {
	Label    string `json:"label"`
	Scenario string `json:"scenario"`
	Seed     string `json:"seed"`
	Shard    string `json:"shard"`
}

// FloodTick is one second of a run, as the flood's live line shows it:
// counts for the second (warm-up included), latency percentiles over its
// answered sends, lateness over its completed sends, in microseconds.
type FloodTick struct {
	Elapsed       float64 `json:"elapsed_s"` // the tick's end, since the run started
	Span          float64 `json:"span_s"`
	Warmup        bool    `json:"warmup,omitempty"`
	Offered       int64   `json:"offered"`
	Sent          int64   `json:"sent"`
	Dropped       int64   `json:"dropped"`
	Starved       int64   `json:"starved"`
	Completed     int64   `json:"completed"`
	OK            int64   `json:"ok"`
	Errors        int64   `json:"errors"`
	Status429     int64   `json:"status_429"`
	Inflight      int64   `json:"inflight"`
	LatencyP50Us  int64   `json:"latency_p50_us"`
	LatencyP99Us  int64   `json:"latency_p99_us"`
	LatencyMaxUs  int64   `json:"latency_max_us"`
	LatenessP50Us int64   `json:"lateness_p50_us"`
	LatenessP99Us int64   `json:"lateness_p99_us"`
}

// FloodTotals are a run's running totals since it started, warm-up
// included (the live line's).
type FloodTotals struct {
	Offered   int64 `json:"offered"`
	Sent      int64 `json:"sent"`
	Dropped   int64 `json:"dropped"`
	Starved   int64 `json:"starved"`
	Completed int64 `json:"completed"`
	OK        int64 `json:"ok"`
	Errors    int64 `json:"errors"`
	Status429 int64 `json:"status_429"`
}

// FloodVerdict is the bottleneck verdict over the run so far (the record's
// bottleneck, as of the latest checkpoint): Generator says the crowd, not
// the SUT, limited the run.
type FloodVerdict struct {
	Generator bool     `json:"generator"`
	Reasons   []string `json:"reasons,omitempty"`
	Notes     []string `json:"notes,omitempty"`
	AtElapsed float64  `json:"at_elapsed_s"`
}

// FloodState is a run's state at its latest tick.
type FloodState struct {
	Run     FloodRun    `json:"run"`
	Rate    float64     `json:"rate"` // the offered rate asked for (the current rung)
	Elapsed float64     `json:"elapsed_s"`
	Total   float64     `json:"total_s"` // the schedule's length
	Warmup  bool        `json:"warmup,omitempty"`
	Final   bool        `json:"final,omitempty"` // the run has ended
	Totals  FloodTotals `json:"totals"`
	// Classes is the measured window's status tally so far, by class key
	// ("202", "429", "timeout", ...).
	Classes    map[string]int64 `json:"classes,omitempty"`
	Bottleneck *FloodVerdict    `json:"bottleneck,omitempty"`
	// FetchbackWindow is the id of the run's fetch-back window in the serve
	// pushed to ("": the run counts none there).
	FetchbackWindow string `json:"fetchback_window,omitempty"`
	// Fetchback is that window's counts: filled by the serve, which
	// counts the fetches itself (a flood's push does not carry it).
	Fetchback *FloodFetchback `json:"fetch_back,omitempty"`
}

// FloodFetchback is what the SUT fetched back from the crowd's origins
// while a run went on, as the serve's window of the run counts it (the
// record's fetchback section comes from the same window's final tally).
type FloodFetchback struct {
	// Ended: the run ended (later fetches count as after_end); Closed: the
	// window closed after its grace, so these are the final counts.
	Ended  bool `json:"ended,omitempty"`
	Closed bool `json:"closed,omitempty"`
	// Fetches, AfterEnd and Signed are over every kind.
	Fetches  int64 `json:"fetches"`
	AfterEnd int64 `json:"after_end"`
	Signed   int64 `json:"signed"`
	// Late counts the fetches after the window closed (FetchbackTally.Late):
	// what the run's grace missed.
	Late int64 `json:"late,omitempty"`
	// Kinds are the fetches by kind (internal/fetchkind); a kind with none is
	// left out.
	Kinds map[string]int64 `json:"kinds,omitempty"`
}

// NewFloodFetchback sums a window's tally for the live panel; closed says
// it is the window's final tally.
func NewFloodFetchback(t FetchbackTally, closed bool) *FloodFetchback {
	f := &FloodFetchback{Ended: t.Ended != nil, Closed: closed, Late: t.Late, Kinds: make(map[string]int64, len(t.Kinds))}
	for name, k := range t.Kinds {
		f.Fetches += k.Fetches
		f.AfterEnd += k.AfterEnd
		f.Signed += k.Signed
		f.Kinds[name] = k.Fetches
	}
	return f
}

// FloodLive is one push of RouteFloodLivePush: the state, the tick that
// just ended, and the flood's metrics.
type FloodLive struct {
	FloodState
	Tick FloodTick `json:"tick"`
	// Metrics is the flood's whole exposition in the delimited protobuf
	// format (expfmt's TypeProtoDelim), native histograms included.
	Metrics []byte `json:"metrics"`
}

// FloodLiveRun is one run of RouteFloodLive: its latest state and ticks.
type FloodLiveRun struct {
	FloodState
	Ticks   []FloodTick `json:"ticks"` // oldest first
	Updated time.Time   `json:"updated"`
}

// PushFloodLive calls RouteFloodLivePush.
func (c *Client) PushFloodLive(ctx context.Context, l FloodLive) error {
	var r struct{}
	return c.call(ctx, RouteFloodLivePush, nil, l, &r)
}

// FloodLive calls RouteFloodLive.
func (c *Client) FloodLive(ctx context.Context) ([]FloodLiveRun, error) {
	var runs []FloodLiveRun
	return runs, c.call(ctx, RouteFloodLive, nil, nil, &runs)
}
