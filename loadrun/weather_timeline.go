package loadrun

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/hostorder"
	"github.com/crowdfed/crowd/pasture"
	"github.com/crowdfed/crowd/pasture/weather"
)

// weatherControl is where a run's weather timeline is put in force: the
// attached crowd's admin API (adminWeather) or the in-process pasture
// (pastureWeather).
type weatherControl interface {
	// Weather is the weather in force.
	Weather(ctx context.Context) (weatherNow, error)
	// SetWeather puts spec, as a spec is written ("" and "clear" clear
	// it), in force and answers the weather then; a spec the crowd cannot
	// fill is an error and changes nothing.
	SetWeather(ctx context.Context, spec string) (weatherNow, error)
}

// weatherNow is the weather in force on the crowd, as it resolved it.
type weatherNow struct {
	// Spec is the spec in force as the crowd writes it (@followers
	// resolved to origins, a share as written, which the crowd assigns
	// to the same origins every time; "" is clear): putting it in force
	// again restores this weather.
	Spec string
	// Since is when the crowd put it in force: another hand's change
	// shows as a later one than the run knows of.
	Since time.Time
	// Changes is the crowd's count of its weather's changes since it
	// started (0 from an older crowd): a count that moved by more than
	// the run's own changes tells of another hand's, even one undone.
	Changes uint64
	// Counts is how many origins are in each condition, clear included.
	Counts map[string]int
	// Origins are those in a condition other than clear, by host.
	Origins []record.WeatherOrigin
}

// byCondition lists the origins per condition, for the log.
func (w weatherNow) byCondition() map[string][]string {
	out := map[string][]string{}
	for _, o := range w.Origins {
		out[o.Condition] = append(out[o.Condition], o.Host)
	}
	return out
}

// timeline watches the crowd's weather over each flood of a run and runs
// its WeatherTimeline, if any: beforeFlood reads the weather in force
// right before a flood, the collector's Begin notes it and starts the
// timeline (offsets count from the schedule's start), End stops it, and
// afterFlood reads the weather again, to tell a change another hand made;
// restore puts the weather before the run back. The reads stay out of the
// flood's own Begin and End, which the engine waits for.
type timeline struct {
	flood.Nop
	t      WeatherTimeline
	ctl    weatherControl
	log    *zap.Logger
	ctx    context.Context // the run's: an interruption stops the timeline
	before weatherNow
	// watched: the crowd said its weather before the run, so it is read
	// again around each flood. A crowd that cannot say is not watched.
	watched bool

	mu        sync.Mutex
	changes   []record.WeatherChange
	attempted bool // a change was sent, answered or not: restore must put the weather back
	cancel    context.CancelFunc
	done      chan struct{}
	// known is the latest weather known in force: a ladder's next rung
	// starts in the weather the last one ended in.
	known      weatherNow
	floodStart time.Time   // this flood's schedule start
	start      weatherNow  // in force at this flood's start
	ownLast    *weatherNow // this flood's last change the crowd confirmed
	unsure     bool        // this flood sent a change the crowd did not confirm
	changed    *weatherNow // the last weather another hand put in force during this flood
	// counted is the crowd's count of changes at the last reading or
	// confirmed change; others, the changes it counted since this flood's
	// last reading before it that were not this run's; unconfirmed, this
	// flood's changes the crowd may have made without saying so (sent as
	// the flood ended: none is sent after one).
	counted     uint64
	others      int
	unconfirmed int
	// unseen are those of others no reading saw; earlier, those a reading
	// saw that a later one of another hand replaced (changed keeps the last).
	unseen, earlier int
}

// readTimeout bounds a reading of the weather around a flood, so a crowd
// gone quiet delays the run and its record little.
const readTimeout = 2 * time.Second

// startTimeline reads the weather in force, to record it, to put it back
// at the end and to tell another hand's change, and returns the watch
// ready for the flood's Begin. With a timeline the reading must succeed;
// without one a crowd that cannot say is only not watched.
func startTimeline(ctx context.Context, t WeatherTimeline, ctl weatherControl, log *zap.Logger) (*timeline, error) {
	tl := &timeline{t: t, ctl: ctl, log: log, ctx: ctx}
	read, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	before, err := ctl.Weather(read)
	switch {
	case err != nil && len(t.At) > 0:
		return nil, fmt.Errorf("reading the crowd's weather before the run (--weather-at): %w", err)
	case err != nil:
		log.Info("the crowd did not say its weather: the record will not say which weather the run met", zap.Error(err))
		return tl, nil
	}
	switch {
	case before.Spec != "" && len(t.At) == 0:
		// The figures will include it: better said before they are read.
		log.Warn("the crowd's origins are not all clear: this run's figures include weather it did not set (crowd weather clear clears it)",
			zap.String("spec", before.Spec), zap.Any("origins", before.byCondition()), zap.Time("since", before.Since))
	case len(t.At) > 0:
		log.Info("weather before the run", zap.String("spec", before.Spec), zap.Any("origins", before.byCondition()))
	}
	tl.before, tl.known, tl.watched, tl.counted = before, before, true, before.Changes
	return tl, nil
}

// Begin notes the weather in force and starts the timeline at the flood's
// start.
func (tl *timeline) Begin(s record.Schedule) {
	tl.mu.Lock()
	tl.floodStart, tl.start, tl.ownLast, tl.unsure, tl.changed = s.Start, tl.known, nil, false, nil
	tl.others, tl.unconfirmed, tl.unseen, tl.earlier = 0, 0, 0, 0
	tl.mu.Unlock()
	if len(tl.t.At) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(tl.ctx)
	done := make(chan struct{})
	tl.mu.Lock()
	tl.cancel, tl.done = cancel, done
	tl.mu.Unlock()
	go func() {
		defer close(done)
		tl.run(ctx, s.Start)
	}()
}

// End stops the timeline with the flood: no change applies after it.
func (tl *timeline) End(record.Stop) { tl.stop() }

// beforeFlood reads the weather in force right before a flood, which is
// the weather it starts in (the run's set-up, or a ladder's presigning,
// may have taken minutes since the last reading), and, before the
// timeline changed anything, the weather restore puts back. A nil or
// unwatched timeline reads nothing.
func (tl *timeline) beforeFlood(ctx context.Context) {
	if tl == nil || !tl.watched {
		return
	}
	read, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	now, err := tl.ctl.Weather(read)
	if err != nil {
		tl.log.Debug("reading the crowd's weather before the flood", zap.Error(err))
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.known, tl.counted = now, now.Changes
	if !tl.attempted {
		tl.before = now
	}
}

// afterFlood reads the weather in force once the flood ended, to tell
// another hand's change during it; the next flood (a ladder's rung)
// starts from it. Even an interrupted run reads it. A nil or unwatched
// timeline reads nothing.
func (tl *timeline) afterFlood(ctx context.Context) {
	if tl == nil || !tl.watched {
		return
	}
	read, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	if now, ok := tl.look(read); ok {
		tl.mu.Lock()
		tl.known = now
		tl.mu.Unlock()
	}
}

// look reads the weather in force and notes it as another hand's change
// when it is not the weather this flood's start or its own timeline's
// last change left; false when the crowd did not say.
func (tl *timeline) look(ctx context.Context) (weatherNow, bool) {
	now, err := tl.ctl.Weather(ctx)
	if err != nil {
		tl.log.Debug("reading the crowd's weather", zap.Error(err))
		return weatherNow{}, false
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	// Changes this flood sent unconfirmed are taken as made: the flood
	// ended, so no other comes after this reading.
	theirs := tl.count(now, tl.unconfirmed)
	tl.unconfirmed = 0
	// An unconfirmed change of this flood's may be the one in force: whose
	// it is cannot be told.
	if !tl.unsure && !now.same(tl.expected()) && (tl.changed == nil || !now.same(*tl.changed)) {
		if tl.changed != nil {
			tl.earlier++ // seen, now replaced by another of theirs
		}
		tl.changed = &now
		tl.unseen += max(0, theirs-1) // all but the one this reading sees
		tl.log.Warn("another hand changed the crowd's weather during the flood", zap.String("spec", cmp.Or(now.Spec, "clear")),
			zap.Duration("at", now.Since.Sub(tl.floodStart).Round(time.Millisecond)), zap.Any("origins", now.byCondition()))
	} else if theirs > 0 {
		tl.unseen += theirs
		tl.log.Warn("another hand changed the crowd's weather during the flood, between two readings: what it was in between is not known",
			zap.Int("changes", theirs), zap.String("in_force", cmp.Or(now.Spec, "clear")))
	}
	return now, true
}

// count adds to others the changes the crowd counted since the last
// reading or confirmed change that were not this flood's, ours of them
// possibly its own, and returns how many. A crowd that does not count (0),
// or restarted (a smaller count), adds none. The caller holds mu.
func (tl *timeline) count(now weatherNow, ours int) int {
	var theirs int
	if now.Changes > tl.counted {
		theirs = max(0, int(now.Changes-tl.counted)-ours)
		tl.others += theirs
	}
	tl.counted = now.Changes
	return theirs
}

// expected is the weather this flood left in force so far: its own last
// change's, else the one at its start. The caller holds mu.
func (tl *timeline) expected() weatherNow {
	if tl.ownLast != nil {
		return *tl.ownLast
	}
	return tl.start
}

// same reports whether w and o are the same weather: the same spec on the
// same origins in the same conditions. The same spec put in force again
// is no change.
func (w weatherNow) same(o weatherNow) bool {
	return w.Spec == o.Spec && slices.Equal(sortedOrigins(w.Origins), sortedOrigins(o.Origins))
}

// sortedOrigins is a sorted copy of origins, by host.
func sortedOrigins(origins []record.WeatherOrigin) []record.WeatherOrigin {
	return slices.SortedFunc(slices.Values(origins), func(a, b record.WeatherOrigin) int { return hostorder.Compare(a.Host, b.Host) })
}

// stop ends the timeline and waits for a change being applied.
func (tl *timeline) stop() {
	tl.mu.Lock()
	cancel, done := tl.cancel, tl.done
	tl.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// run applies each change at start + its offset (plus a turn's Repeat),
// until ctx ends: the flood's end bounds it.
func (tl *timeline) run(ctx context.Context, start time.Time) {
	for turn := time.Duration(0); ; turn++ {
		for _, w := range tl.t.At {
			at := turn*tl.t.Repeat + w.Offset
			if !sleepUntil(ctx, start.Add(at)) {
				return
			}
			tl.apply(ctx, start, at, w)
		}
		if tl.t.Repeat == 0 {
			return
		}
	}
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// apply puts w in force and notes it; a change the crowd refused is noted
// with its reason, and the flood goes on.
func (tl *timeline) apply(ctx context.Context, start time.Time, at time.Duration, w WeatherAt) {
	if tl.watched {
		read, cancel := context.WithTimeout(ctx, readTimeout)
		tl.look(read) // another hand's change, before this one replaces it
		cancel()
		if ctx.Err() != nil {
			return // the flood ended during the look: this change was never sent
		}
	}
	tl.mu.Lock()
	tl.attempted = true
	tl.mu.Unlock()
	now, err := tl.ctl.SetWeather(ctx, w.Text)
	ch := record.WeatherChange{AtS: at.Seconds(), Spec: w.Text}
	if ctx.Err() != nil {
		// The flood ended while the change was on its way: the crowd may have made it or not,
		// and restore puts the weather before the run back either way.
		ch.Error = "not confirmed: the flood ended while the change was applied"
		tl.mu.Lock()
		tl.changes = append(tl.changes, ch)
		tl.unsure = true
		tl.unconfirmed++
		tl.mu.Unlock()
		return
	}
	if err != nil {
		ch.Error = err.Error()
		tl.log.Error("the crowd refused a change of the weather timeline", zap.Duration("at", at), zap.String("spec", w.Text), zap.Error(err))
	} else {
		ch.Counts, ch.Origins = now.Counts, now.Origins
		// In force by the crowd's answer: the latest it can have taken effect.
		ch.AppliedS = float64(time.Since(start).Milliseconds()) / 1000
		tl.log.Info("weather changed", zap.Duration("at", at), zap.String("spec", w.Text), zap.Any("origins", now.byCondition()),
			zap.Any("counts", now.Counts))
	}
	tl.mu.Lock()
	tl.changes = append(tl.changes, ch)
	if err == nil {
		tl.ownLast, tl.known = &now, now
		// The crowd's count moved by this change (one, or none for the
		// weather in force put again) and by any other hand's made since
		// the look before it, which this one replaced: no reading saw them.
		tl.unseen += tl.count(now, 1)
	}
	tl.mu.Unlock()
}

// section is the record's weather section so far (a copy); nil for a run
// without a timeline.
func (tl *timeline) section() *record.Weather {
	if tl == nil || len(tl.t.At) == 0 {
		return nil
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return &record.Weather{RepeatS: tl.t.Repeat.Seconds(), Changes: slices.Clone(tl.changes)}
}

// ambient is the weather the flood met that the run did not put in force:
// what was in force at its start, and another hand's change found at its
// end; empty when there was none, nil when the crowd was not watched (it
// did not say, so a gate on it has no data).
func (tl *timeline) ambient() *record.AmbientWeather {
	if tl == nil {
		return nil
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if !tl.watched || tl.floodStart.IsZero() {
		return nil
	}
	var a record.AmbientWeather
	if len(tl.start.Origins) > 0 {
		a.Start = tl.state(tl.start)
	}
	if tl.changed != nil {
		a.Changed = tl.state(*tl.changed)
	}
	a.Others, a.Unseen, a.Earlier = tl.others, tl.unseen, tl.earlier
	return &a
}

// state is w as the record keeps it, its time from the flood's start.
func (tl *timeline) state(w weatherNow) *record.WeatherState {
	return &record.WeatherState{SinceS: float64(w.Since.Sub(tl.floodStart).Milliseconds()) / 1000, Spec: w.Spec,
		Counts: maps.Clone(w.Counts), Origins: slices.Clone(w.Origins)}
}

// restore stops the timeline and, once it sent any change (answered or
// not), puts the weather before the run back, even when the run was
// interrupted; but weather another hand put in force after the
// timeline's last change is theirs, and stays. An error says the crowd is
// left in the timeline's weather: the run fails with it. A nil timeline
// has nothing to restore.
func (tl *timeline) restore() error {
	if tl == nil {
		return nil
	}
	tl.stop()
	tl.mu.Lock()
	attempted := tl.attempted
	tl.mu.Unlock()
	if !attempted {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(tl.ctx), 10*time.Second)
	defer cancel()
	if now, ok := tl.theirs(ctx); ok {
		// Put there by another hand after the timeline's last change: its
		// weather, not the timeline's, so it stays.
		tl.log.Warn("the weather before the run is not put back: another hand changed it during the run, and its weather is left in force",
			zap.String("before", cmp.Or(tl.before.Spec, "clear")), zap.String("in_force", cmp.Or(now.Spec, "clear")))
		return nil
	}
	if _, err := tl.ctl.SetWeather(ctx, tl.before.Spec); err != nil {
		tl.log.Error("the weather before the run could not be put back", zap.String("spec", tl.before.Spec), zap.Error(err))
		return fmt.Errorf("the weather before the run (%q) could not be put back, and the crowd is left in the timeline's: %w", tl.before.Spec, err)
	}
	tl.log.Info("weather restored", zap.String("spec", tl.before.Spec), zap.Any("origins", tl.before.byCondition()))
	return nil
}

// theirs reads the weather in force and reports whether another hand put
// it there after the timeline's last confirmed change (or, with none, the
// weather at the start); false when it is the timeline's, when a change
// went unconfirmed (whose weather is in
// force cannot be told), or when the crowd does not say.
func (tl *timeline) theirs(ctx context.Context) (weatherNow, bool) {
	tl.mu.Lock()
	left, unsure := tl.expected(), tl.unsure
	tl.mu.Unlock()
	if !tl.watched || unsure {
		return weatherNow{}, false
	}
	now, err := tl.ctl.Weather(ctx)
	return now, err == nil && !now.same(left)
}

// failed says how many changes the crowd refused, as an error (nil for
// none, or no timeline).
func (tl *timeline) failed() error {
	if tl == nil {
		return nil
	}
	if n := tl.section().Failed(); n > 0 {
		return fmt.Errorf("the crowd refused %d change(s) of the weather timeline (--weather-at): see the record's weather section", n)
	}
	return nil
}

// pastureWeather is the in-process crowd's weather (a standalone run),
// described as its admin API does.
type pastureWeather struct {
	p *pasture.Pasture
}

func (w pastureWeather) Weather(context.Context) (weatherNow, error) {
	return weatherFrom(w.p.WeatherInfo(), nil)
}

func (w pastureWeather) SetWeather(_ context.Context, text string) (weatherNow, error) {
	spec, err := weather.ParseSpec(text)
	if err == nil {
		err = w.p.SetWeather(spec)
	}
	if err != nil {
		return weatherNow{}, err
	}
	return weatherFrom(w.p.WeatherInfo(), nil)
}

// startWeather readies the run's weather watch and its timeline, when it
// has one: its changes checked against the crowd's origins, the weather
// in force read to be recorded and put back. A run where nothing can put
// weather in force gets none.
func (r *runner) startWeather(ctx context.Context) error {
	t := r.c.Weather
	if r.env.weather == nil {
		return nil
	}
	if len(t.At) > 0 {
		if err := checkWeatherOrigins(t, r.env.World.Hosts()); err != nil {
			return err
		}
	}
	tl, err := startTimeline(ctx, t, r.env.weather, r.log.Named("weather"))
	if err != nil {
		return err
	}
	r.weather = tl
	return nil
}

// weatherCollector is the timeline as the flood's collector; nil without
// one.
func (r *runner) weatherCollector() flood.Collector {
	if r.weather == nil {
		return nil
	}
	return r.weather
}
