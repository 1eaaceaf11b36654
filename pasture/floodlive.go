package pasture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/pasture/fetchback"
)

// floodLive keeps what attached floods push (adminapi.RouteFloodLivePush):
// each run's latest minutes for the admin page, and its metric families
// for the serve's /metrics (it is a prometheus.Gatherer), so one scrape
// target shows the load beside the crowd's own metrics. Runs are keyed by
// their labels: a new push of the same labels replaces the old run's
// metrics, and a run silent for adminapi.FloodLiveKeep is forgotten.
type floodLive struct {
	now   func() time.Time
	fetch *fetchback.Windows // the serve's fetch-back windows: a run's fetches back, as the serve counts them
	mu    sync.Mutex
	runs  map[adminapi.FloodRun]*liveRun
}

// liveRun is one pushed run.
type liveRun struct {
	state   adminapi.FloodState
	ticks   []adminapi.FloodTick // oldest first, at most FloodLiveTicks
	mfs     []*dto.MetricFamily
	updated time.Time
	// fetchback is the latest read of the run's fetch-back window, kept
	// once the window is gone (closed long ago, or the serve restarted).
	fetchback *adminapi.FloodFetchback
}

// Bounds of what a push may carry: a run's exposition is a few hundred
// KB at most (native histograms of a dozen types), and the serve keeps
// a bounded number of runs (shards of one run, a few runs in a row).
const (
	maxLivePush = 8 << 20
	maxLiveRuns = 64
)

// errBadPush marks a push refused with 400.
var errBadPush = errors.New("bad flood push")

// newFloodLive keeps pushed runs; fetch (nil: none) counts their fetches back.
func newFloodLive(now func() time.Time, fetch *fetchback.Windows) *floodLive {
	return &floodLive{now: now, fetch: fetch, runs: make(map[adminapi.FloodRun]*liveRun)}
}

// routes adds the two live routes.
func (l *floodLive) routes(handle func(pattern string, h http.Handler)) {
	handle(string(adminapi.RouteFloodLivePush), http.HandlerFunc(l.handlePush))
	handle(string(adminapi.RouteFloodLive), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		adminapi.WriteJSON(w, http.StatusOK, l.list())
	}))
}

func (l *floodLive) handlePush(w http.ResponseWriter, r *http.Request) {
	var push adminapi.FloodLive
	if err := adminapi.DecodeBody(w, r, maxLivePush, &push); err != nil {
		adminapi.WriteError(w, adminapi.BodyStatus(err), fmt.Errorf("%w: body is not a FloodLive JSON document: %w", errBadPush, err).Error())
		return
	}
	if err := l.push(push); err != nil {
		adminapi.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, struct{}{})
}

// push files one push.
func (l *floodLive) push(p adminapi.FloodLive) error {
	if p.Run.Seed == "" {
		// Every flood's run has a seed; a push without one (an empty
		// document) is no flood's and would list a blank run.
		return fmt.Errorf("%w: the push names no run (run.seed is empty)", errBadPush)
	}
	mfs, err := decodeFamilies(p.Metrics)
	if err != nil {
		return err
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	run := l.runs[p.Run]
	if run == nil {
		if len(l.runs) >= maxLiveRuns {
			return fmt.Errorf("%w: the crowd keeps %d runs at most; wait %v for the oldest to expire", errBadPush, maxLiveRuns, adminapi.FloodLiveKeep)
		}
		run = &liveRun{}
		l.runs[p.Run] = run
	}
	if p.Elapsed < run.state.Elapsed {
		run.ticks = run.ticks[:0] // the same labels ran again
	}
	if p.FetchbackWindow != run.state.FetchbackWindow {
		run.fetchback = nil // another run of the same labels
	}
	run.state, run.mfs, run.updated = p.FloodState, mfs, now
	run.state.Fetchback = nil // the serve's to fill, from its own window
	run.ticks = append(run.ticks, p.Tick)
	if n := len(run.ticks) - adminapi.FloodLiveTicks; n > 0 {
		run.ticks = slices.Delete(run.ticks, 0, n)
	}
	return nil
}

// decodeFamilies reads the delimited protobuf exposition of a push and
// checks it the way a scrape of the serve will: crowd_flood_ names only
// (a push cannot pose as the serve's own metrics), each family consistent.
func decodeFamilies(b []byte) ([]*dto.MetricFamily, error) {
	dec := expfmt.NewDecoder(bytes.NewReader(b), expfmt.NewFormat(expfmt.TypeProtoDelim))
	var mfs []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: metrics: %v", errBadPush, err)
		}
		if !strings.HasPrefix(mf.GetName(), "crowd_flood_") {
			return nil, fmt.Errorf("%w: metrics: %q is not a crowd_flood_ metric", errBadPush, mf.GetName())
		}
		mfs = append(mfs, mf)
	}
	check := prometheus.Gatherers{prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return mfs, nil })}
	if _, err := check.Gather(); err != nil {
		return nil, fmt.Errorf("%w: metrics: %v", errBadPush, err)
	}
	return mfs, nil
}

// expire forgets the runs silent for FloodLiveKeep; l.mu is held.
func (l *floodLive) expire(now time.Time) {
	for k, run := range l.runs {
		if now.Sub(run.updated) > adminapi.FloodLiveKeep {
			delete(l.runs, k)
		}
	}
}

// list is RouteFloodLive's answer: the runs, newest first.
func (l *floodLive) list() []adminapi.FloodLiveRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(l.now())
	out := make([]adminapi.FloodLiveRun, 0, len(l.runs))
	for _, run := range l.runs {
		if id := run.state.FetchbackWindow; id != "" && l.fetch != nil {
			if t, closed, ok := l.fetch.Lookup(id); ok {
				run.fetchback = adminapi.NewFloodFetchback(t, closed)
			}
		}
		st := run.state
		st.Fetchback = run.fetchback
		out = append(out, adminapi.FloodLiveRun{FloodState: st, Ticks: slices.Clone(run.ticks), Updated: run.updated})
	}
	slices.SortFunc(out, func(a, b adminapi.FloodLiveRun) int { return b.Updated.Compare(a.Updated) })
	return out
}

// Gather merges the runs' families by name (prometheus.Gatherer): each
// run's series differ by their run labels.
func (l *floodLive) Gather() ([]*dto.MetricFamily, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(l.now())
	byName := map[string]*dto.MetricFamily{}
	var names []string
	for _, run := range l.runs {
		for _, mf := range run.mfs {
			m := byName[mf.GetName()]
			if m == nil {
				m = &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit}
				byName[mf.GetName()] = m
				names = append(names, mf.GetName())
			}
			m.Metric = append(m.Metric, mf.Metric...)
		}
	}
	slices.Sort(names)
	out := make([]*dto.MetricFamily, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out, nil
}
