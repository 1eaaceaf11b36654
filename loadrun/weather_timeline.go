package loadrun

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
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
	// Spec is the spec in force, its selectors resolved to origins ("" is
	// clear): putting it in force again restores this weather.
	Spec string
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

// timeline runs a WeatherTimeline during a flood: a collector that starts
// it at the flood's Begin (offsets count from the schedule's start) and
// stops it at End; restore puts the weather before the run back.
type timeline struct {
	flood.Nop
	t      WeatherTimeline
	ctl    weatherControl
	log    *zap.Logger
	ctx    context.Context // the run's: an interruption stops the timeline
	before weatherNow

	mu        sync.Mutex
	changes   []record.WeatherChange
	attempted bool // a change was sent, answered or not: restore must put the weather back
	cancel    context.CancelFunc
	done      chan struct{}
}

// startTimeline reads the weather in force, to put it back at the end,
// and returns the timeline ready for the flood's Begin.
func startTimeline(ctx context.Context, t WeatherTimeline, ctl weatherControl, log *zap.Logger) (*timeline, error) {
	before, err := ctl.Weather(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the crowd's weather before the run (--weather-at): %w", err)
	}
	log.Info("weather before the run", zap.String("spec", before.Spec), zap.Any("origins", before.byCondition()))
	return &timeline{t: t, ctl: ctl, log: log, ctx: ctx, before: before}, nil
}

// Begin starts the timeline at the flood's start.
func (tl *timeline) Begin(s record.Schedule) {
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
	tl.mu.Unlock()
}

// section is the record's weather section so far (a copy).
func (tl *timeline) section() *record.Weather {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return &record.Weather{RepeatS: tl.t.Repeat.Seconds(), Changes: slices.Clone(tl.changes)}
}

// restore stops the timeline and, once it sent any change (answered or
// not), puts the weather before the run back, even when the run was
// interrupted. An error says the crowd is left in the timeline's weather:
// the run fails with it. A nil timeline has nothing to restore.
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
	if _, err := tl.ctl.SetWeather(ctx, tl.before.Spec); err != nil {
		tl.log.Error("the weather before the run could not be put back", zap.String("spec", tl.before.Spec), zap.Error(err))
		return fmt.Errorf("the weather before the run (%q) could not be put back, and the crowd is left in the timeline's: %w", tl.before.Spec, err)
	}
	tl.log.Info("weather restored", zap.String("spec", tl.before.Spec), zap.Any("origins", tl.before.byCondition()))
	return nil
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

// pastureWeather is the in-process crowd's weather (a standalone run).
type pastureWeather struct {
	p     *pasture.Pasture
	world *actors.World
}

func (w pastureWeather) Weather(context.Context) (weatherNow, error) { return w.now(), nil }

func (w pastureWeather) SetWeather(_ context.Context, text string) (weatherNow, error) {
	spec, err := weather.ParseSpec(text)
	if err == nil {
		err = w.p.SetWeather(spec)
	}
	if err != nil {
		return weatherNow{}, err
	}
	return w.now(), nil
}

// now describes the forecast in force.
func (w pastureWeather) now() weatherNow {
	f := w.p.Sky().Now()
	n := weatherNow{Spec: f.Spec().String(), Counts: map[string]int{}}
	for _, a := range f.Origins() {
		n.Origins = append(n.Origins, record.WeatherOrigin{Host: a.Host, Condition: a.Condition.String()})
		n.Counts[a.Kind.String()]++
	}
	if clear := len(w.world.Origins) - len(n.Origins); clear > 0 {
		n.Counts[weather.Clear.String()] = clear
	}
	return n
}

// startWeather readies the run's weather timeline, when it has one: its
// changes checked against the crowd's origins, the weather in force read
// to be put back. A run without one gets an inert timeline.
func (r *runner) startWeather(ctx context.Context) error {
	t := r.c.Weather
	if len(t.At) == 0 {
		return nil
	}
	if err := checkWeatherOrigins(t, r.env.World.Hosts()); err != nil {
		return err
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
