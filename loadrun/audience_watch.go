package loadrun

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/audience"
	"github.com/crowdfed/crowd/flood/record"
)

// watch is the audience while the flood runs: the Creates observed on
// their way out, the home timelines read, the personas posting, the
// crowd's inboxes followed.
type watch struct {
	vis        *audience.Visibility
	dl         *audience.Deliveries
	prober     *audience.Prober
	stopStream context.CancelFunc
	streamDone sync.WaitGroup
	stopFlood  context.CancelFunc
	posting    sync.WaitGroup
	homeDone   chan audience.HomeStats
	// weather is each origin's weather at the flood's start (host →
	// condition), and answered what the crowd's weather had answered by
	// then, for the deliveries' account.
	weather  map[string]string
	answered map[string]adminapi.WeatherAnswered
	counted  bool // answered was read
}

// Start wraps the flood's transport to see each Create go out, and starts
// the probes, the posts and the stream of the crowd's inboxes.
func (a *audienceObserver) Start(ctx context.Context, tr http.RoundTripper) (http.RoundTripper, error) {
	follows := map[string][]string{}
	for name, list := range a.follows {
		for _, f := range list {
			follows[name] = append(follows[name], f.ID)
		}
	}
	w := &watch{vis: audience.NewVisibility(follows), dl: audience.NewDeliveries(a.followers)}
	w.weather, w.answered, w.counted = a.weatherNow(ctx)
	a.stats.Seconds = time.Since(a.start).Seconds()
	streamCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w.stopStream = stop
	if err := a.stream(streamCtx, w); err != nil {
		stop()
		return nil, err
	}
	targets := make([]audience.ProbeTarget, len(a.personas))
	for i, p := range a.personas {
		targets[i] = audience.ProbeTarget{Persona: p.Name, Token: p.Token}
	}
	w.prober = &audience.Prober{Client: a.client, Targets: targets, Hz: a.cfg.ProbeHz, OnSeen: w.vis.Seen}
	fctx, stopFlood := context.WithCancel(ctx)
	w.stopFlood = stopFlood
	w.homeDone = make(chan audience.HomeStats, 1)
	go func() { w.homeDone <- w.prober.Run(fctx) }()
	if a.cfg.PostEvery > 0 {
		for i, p := range a.personas {
			w.posting.Go(func() { a.postEvery(fctx, p, i, w.dl) })
		}
	}
	a.watch = w
	return w.vis.Observe(tr), nil
}

// stream follows the crowd's inboxes live: every Create that arrives.
func (a *audienceObserver) stream(ctx context.Context, w *watch) error {
	if a.env.Admin == nil || len(a.followers) == 0 {
		return nil
	}
	// Every incoming entry: the Creates, and the attempts the weather
	// refused before a request was read (which name no type).
	stream, err := a.env.Admin.Stream(ctx, adminapi.StreamQuery{Filter: adminapi.Filter{Direction: adminapi.DirIn}})
	if err != nil {
		return fmt.Errorf("following the crowd's activity log: %w", err)
	}
	w.streamDone.Go(func() {
		defer stream.Close()
		stream.Read(func(ev adminapi.Event) error {
			if ev.Lost > 0 {
				w.dl.Lost(ev.Lost)
			}
			observeEntry(w.dl, ev.Entry)
			return nil
		})
	})
	return nil
}

// observeEntry hands an entry of the crowd's log to the deliveries: a
// Create is an attempt (and an arrival when the inbox accepted it); an
// entry of no request read (Method "") that the weather refused is an
// attempt that named no activity.
func observeEntry(dl *audience.Deliveries, e adminapi.Entry) {
	if !strings.EqualFold(e.Type, "Create") && !e.Refused() {
		return
	}
	accepted := e.Verdict == adminapi.VerdictAccepted
	dl.Attempted(audience.Attempt{Time: e.Time, URL: e.URL, Remote: e.Remote, ID: e.ID, Object: e.Object,
		Status: e.Status, Weather: e.Weather, Accepted: accepted})
	if accepted {
		dl.Arrived(audience.Arrival{Time: e.Time, Inbox: e.URL, ID: e.ID, Object: e.Object})
	}
}

// weatherNow is each origin's weather on the attached crowd now (host →
// condition) and what its weather has answered so far; none when there is
// no admin API or it cannot say.
func (a *audienceObserver) weatherNow(ctx context.Context) (map[string]string, map[string]adminapi.WeatherAnswered, bool) {
	out := map[string]string{}
	if a.env.Admin == nil {
		return out, nil, false
	}
	info, err := a.env.Admin.Weather(ctx)
	if err != nil {
		a.log.Debug("reading the crowd's weather for the deliveries' account", zap.Error(err))
		return out, nil, false
	}
	for _, o := range info.Origins {
		out[strings.ToLower(o.Host)] = o.Condition
	}
	return out, info.Answered, true
}

// countFetches sets each origin's document fetches and lookups the
// weather answered during the run: the crowd's counts now less those at
// the start. Left 0 when either reading failed.
func (a *audienceObserver) countFetches(ctx context.Context, w *watch, d *record.Deliveries) {
	if d == nil || !w.counted {
		return
	}
	_, now, ok := a.weatherNow(ctx)
	if !ok {
		return
	}
	for i := range d.Origins {
		o := &d.Origins[i]
		before, after := w.answered[o.Host], now[o.Host]
		o.Fetches, o.Lookups = after.Documents-before.Documents, after.Lookups-before.Lookups
	}
}

// Finish stops the probes and posts, drains (probes on until every
// accepted note is visible and every post delivered, or the bound),
// sweeps the homes for notes still unseen, and composes the run section.
func (a *audienceObserver) Finish(ctx context.Context, rec *record.Record, path string) (Addition, error) {
	w := a.watch
	floodEnd := time.Now()
	w.stopFlood()
	w.posting.Wait()
	home := <-w.homeDone
	drainEnd := a.drain(ctx, w, floodEnd)
	w.stopStream()
	w.streamDone.Wait()
	if rec == nil || path == "" {
		return Addition{}, nil // the flood made no record: nothing to add to
	}
	under, err := w.dl.UnderWeather(audience.HistoryOf(rec.Start, w.weather, rec.Weather, rec.Ambient), drainEnd, rec.Timeline)
	if err != nil {
		return Addition{}, fmt.Errorf("the deliveries under the weather: %w", err)
	}
	a.countFetches(ctx, w, under)
	rec.Deliveries = under
	sweep := a.sweep(ctx, w)
	section := &audience.RunSection{Schema: audience.RunSchema, Version: audience.RunVersion, SUT: a.client.Base(),
		Follows: a.cfg.Follows, Followers: a.cfg.Followers, ProbeHz: a.cfg.ProbeHz, Setup: a.stats, Home: home,
		Delivery: w.dl.Summary(), Sweep: sweep}
	for _, p := range a.personas {
		section.Personas = append(section.Personas, p.Acct)
	}
	// The drain runs from the flood's last answer, as its record says.
	if !rec.End.IsZero() && rec.End.Before(floodEnd) {
		floodEnd = rec.End
	}
	section.Visibility, section.Drain = w.vis.Summary(floodEnd, drainEnd, a.cfg.DrainTimeout)
	notes := audience.NotesPath(path)
	if err := audience.WriteNotes(notes, w.vis.Notes()); err != nil {
		a.log.Warn("writing the notes log", zap.String("path", notes), zap.Error(err))
	} else {
		section.NotesFile = filepath.Base(notes)
	}
	run := &audience.Record{Record: rec, Run: section}
	judge := func(gates []record.Gate) []record.GateResult { return audience.JudgeGates(section, gates) }
	return Addition{Doc: run, Judge: judge, Written: func(path string) error {
		if err := audience.AppendRow(filepath.Dir(path), run, filepath.Base(path)); err != nil {
			return fmt.Errorf("adding the run to %s: %w", audience.RunsFile, err)
		}
		fmt.Fprintln(a.stdout)
		if err := audience.WriteSummary(a.stdout, section); err != nil {
			return err
		}
		for _, l := range rec.Deliveries.Lines() {
			fmt.Fprintln(a.stdout, l)
		}
		_, err := fmt.Fprintf(a.stdout, "run record: %s\n", path)
		return err
	}}, nil
}

// drain probes on after the flood until nothing is outstanding or
// DrainTimeout from floodEnd; it returns when it ended.
func (a *audienceObserver) drain(ctx context.Context, w *watch, floodEnd time.Time) time.Time {
	outstanding := func() bool { return w.vis.Outstanding() > 0 || w.dl.Outstanding() > 0 }
	if ctx.Err() != nil || a.cfg.DrainTimeout <= 0 || !outstanding() {
		return floodEnd
	}
	a.log.Info("draining", zap.Int("notes_not_visible", w.vis.Outstanding()), zap.Int("deliveries_not_seen", w.dl.Outstanding()),
		zap.Duration("bound", a.cfg.DrainTimeout))
	dctx, stop := context.WithTimeout(ctx, a.cfg.DrainTimeout-time.Since(floodEnd))
	defer stop()
	done := make(chan struct{})
	go func() { w.prober.Run(dctx); close(done) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for dctx.Err() == nil && outstanding() {
		select {
		case <-dctx.Done():
		case <-tick.C:
		}
	}
	end := time.Now()
	stop()
	<-done
	return end
}

// sweep reads the homes deeper for notes no probe saw: a late SUT files
// them below the newest page, where they count as buried, not as never
// seen. Nil when nothing is unseen.
func (a *audienceObserver) sweep(ctx context.Context, w *watch) *audience.SweepStats {
	if ctx.Err() != nil || w.vis.Outstanding() == 0 {
		return nil
	}
	tokens := map[string]string{}
	for _, p := range a.personas {
		tokens[p.Name] = p.Token
	}
	// As long again as the drain may take: a SUT slow enough to leave notes
	// unseen reads its homes slowly too.
	sctx, stop := context.WithTimeout(ctx, max(10*time.Second, a.cfg.DrainTimeout))
	defer stop()
	s := audience.Sweep(sctx, a.client, tokens, w.vis, audience.SweepOptions{})
	return &s
}

// postEvery makes persona p post every PostEvery until ctx ends, the i-th
// of n personas first at (i+½)/n of the period, so the posts spread and
// none is made at the flood's first instant (when a weather timeline's
// change at +0s is being put in force).
func (a *audienceObserver) postEvery(ctx context.Context, p audience.Persona, i int, dl *audience.Deliveries) {
	every := a.cfg.PostEvery
	next := time.Now().Add(every * time.Duration(2*i+1) / time.Duration(2*len(a.personas)))
	for k := a.cfg.Posts + 1; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		s, err := a.client.PostStatus(ctx, p.Token, audience.PostText(p.Name, k), "public")
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			dl.PostFailed()
			a.log.Debug("a post during the run failed", zap.String("persona", p.Name), zap.Error(err))
		} else {
			dl.Posted(p.Name, s)
		}
		next = next.Add(every)
	}
}
