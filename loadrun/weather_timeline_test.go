package loadrun

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/crowdtest"
	"github.com/crowdfed/crowd/pasture/weather"
)

// clocked is the in-process crowd's weather, noting when (from start)
// each change reached it.
type clocked struct {
	weatherControl
	start time.Time
	mu    sync.Mutex
	at    []string // "+1s gone=flood2.test"
}

func (c *clocked) SetWeather(ctx context.Context, spec string) (weatherNow, error) {
	c.mu.Lock()
	c.at = append(c.at, fmt.Sprintf("+%v %s", time.Since(c.start), spec))
	c.mu.Unlock()
	return c.weatherControl.SetWeather(ctx, spec)
}

func (c *clocked) calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.at...)
}

// TestWeatherTimeline runs timelines on the in-process crowd's real sky,
// on a fake clock: each change applies exactly at its offset from the
// flood's start, a repeated timeline starts over, nothing applies after
// the flood's end or an interruption, and the weather before the run is
// put back either way.
func TestWeatherTimeline(t *testing.T) {
	outage := WeatherTimeline{At: []WeatherAt{at(t, "+1s gone=flood2.test"), at(t, "+3s clear")}}
	flapping := WeatherTimeline{At: []WeatherAt{at(t, "+0s flaky=flood1.test:0.5"), at(t, "+2m clear")}, Repeat: 4 * time.Minute}
	for _, tc := range []struct {
		name   string
		t      WeatherTimeline
		before string        // the weather in force before the run
		end    time.Duration // when the flood ends
		cancel bool          // ended by an interruption (Ctrl-C) instead
		calls  string        // the changes, as the crowd got them, and the restore
	}{
		// Both changes, each at its offset; the clear weather before is put back.
		{"outage", outage, "", 5 * time.Second, false,
			"[+1s gone=flood2.test +3s clear +5s ]"},
		// The flood ends between the changes: the second never applies, and
		// the weather before the run (slow on flood1) comes back.
		{"ended early", outage, "slow=flood1.test:30s:0.5", 2 * time.Second, false,
			"[+1s gone=flood2.test +2s slow=flood1.test:30s:0.5]"},
		// Interrupted the same way: restored all the same.
		{"interrupted", outage, "down=flood1.test", 2500 * time.Millisecond, true,
			"[+1s gone=flood2.test +2.5s down=flood1.test]"},
		// Flapping: flaky and clear every 2 min, over again every 4 min.
		{"repeat", flapping, "", 9 * time.Minute, false,
			"[+0s flaky=flood1.test:0.5 +2m0s clear +4m0s flaky=flood1.test:0.5 +6m0s clear +8m0s flaky=flood1.test:0.5 +9m0s ]"},
		// The flood ends before the first change: nothing to put back.
		{"nothing applied", outage, "down=flood1.test", 500 * time.Millisecond, false, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := crowdtest.Start(t, crowdtest.Options{Unstarted: true})
			ctl := &clocked{weatherControl: pastureWeather{p: cr.Pasture}}
			spec, err := weather.ParseSpec(tc.before)
			if err != nil {
				t.Fatal(err)
			}
			if err := cr.Pasture.SetWeather(spec); err != nil {
				t.Fatal(err)
			}
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				tl, err := startTimeline(ctx, tc.t, ctl, zap.NewNop())
				if err != nil {
					t.Fatal(err)
				}
				ctl.start = time.Now()
				tl.Begin(record.Schedule{Start: ctl.start})
				time.Sleep(tc.end)
				if tc.cancel {
					cancel()
				} else {
					tl.End(record.Stop{})
				}
				tl.restore()
				synctest.Wait()
				if got := fmt.Sprint(ctl.calls()); got != tc.calls {
					t.Errorf("the crowd got %s, want %s", got, tc.calls)
				}
				if got := cr.Pasture.Sky().Now().Spec().String(); got != tc.before {
					t.Errorf("the weather after the run is %q, want the one before, %q", got, tc.before)
				}
			})
		})
	}
}

// TestWeatherTimelineSection: the record's section lists each change at
// its offset, as written, with the origins it took and when the crowd had
// it in force (in the bubble's fake time, as soon as it was due).
func TestWeatherTimelineSection(t *testing.T) {
	cr := crowdtest.Start(t, crowdtest.Options{Unstarted: true})
	synctest.Test(t, func(t *testing.T) {
		tl, err := startTimeline(context.Background(), WeatherTimeline{At: []WeatherAt{at(t, "+1s gone=flood2.test"), at(t, "+3s clear")}},
			pastureWeather{p: cr.Pasture}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		tl.Begin(record.Schedule{Start: time.Now()})
		time.Sleep(4 * time.Second)
		tl.End(record.Stop{})
		got := tl.section()
		want := &record.Weather{Changes: []record.WeatherChange{
			{AtS: 1, AppliedS: 1, Spec: "gone=flood2.test", Counts: map[string]int{"gone": 1, "clear": 1}, Origins: []record.WeatherOrigin{{Host: "flood2.test", Condition: "gone"}}},
			{AtS: 3, AppliedS: 3, Spec: "clear", Counts: map[string]int{"clear": 2}},
		}}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("section %+v, want %+v", got, want)
		}
		if err := tl.failed(); err != nil {
			t.Error(err)
		}
	})
}

// TestWeatherTimelineRefusedChange: a change the crowd refuses (no origin
// has followers) is recorded with its reason, the flood goes on, and the
// run fails at the end.
func TestWeatherTimelineRefusedChange(t *testing.T) {
	cr := crowdtest.Start(t, crowdtest.Options{Unstarted: true})
	synctest.Test(t, func(t *testing.T) {
		tl, err := startTimeline(context.Background(), WeatherTimeline{At: []WeatherAt{at(t, "+1s down=@followers"), at(t, "+2s gone=flood1.test")}},
			pastureWeather{p: cr.Pasture}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		tl.Begin(record.Schedule{Start: time.Now()})
		time.Sleep(3 * time.Second)
		tl.End(record.Stop{})
		s := tl.section()
		if len(s.Changes) != 2 || s.Changes[0].Error == "" || s.Changes[1].Error != "" || s.Changes[1].Counts["gone"] != 1 {
			t.Errorf("section %+v: want the first change refused with its reason, the second applied", s)
		}
		if tl.failed() == nil {
			t.Error("a refused change does not fail the run")
		}
	})
}

// at is one --weather-at change.
func at(t *testing.T, s string) WeatherAt {
	t.Helper()
	w, err := ParseWeatherAt(s)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// slowAnswer makes the change and then holds its answer until ctx ends: an admin API whose
// answer is lost when the flood ends.
type slowAnswer struct{ weatherControl }

func (s slowAnswer) SetWeather(ctx context.Context, spec string) (weatherNow, error) {
	now, err := s.weatherControl.SetWeather(context.WithoutCancel(ctx), spec)
	if spec == "gone=flood2.test" {
		<-ctx.Done()
		return weatherNow{}, ctx.Err()
	}
	return now, err
}

// TestWeatherTimelineRestoresAnUnconfirmedChange: the first change is made but its answer is
// lost when the flood ends; the weather before the run is put back all the same, and the
// record says the change was not confirmed.
func TestWeatherTimelineRestoresAnUnconfirmedChange(t *testing.T) {
	cr := crowdtest.Start(t, crowdtest.Options{Unstarted: true})
	synctest.Test(t, func(t *testing.T) {
		tl, err := startTimeline(context.Background(), WeatherTimeline{At: []WeatherAt{at(t, "+1s gone=flood2.test")}},
			slowAnswer{pastureWeather{p: cr.Pasture}}, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		tl.Begin(record.Schedule{Start: time.Now()})
		time.Sleep(1500 * time.Millisecond)
		tl.End(record.Stop{})
		if err := tl.restore(); err != nil {
			t.Fatal(err)
		}
		if got := cr.Pasture.Sky().Now().Spec().String(); got != "" {
			t.Errorf("after the run the weather is %q, want the clear weather before it", got)
		}
		if s := tl.section(); len(s.Changes) != 1 || !strings.Contains(s.Changes[0].Error, "not confirmed") {
			t.Errorf("section %+v, want the change noted as not confirmed", s)
		}
	})
}

// dumb is a crowd too old to say its weather.
type dumb struct{ weatherControl }

func (dumb) Weather(context.Context) (weatherNow, error) {
	return weatherNow{}, fmt.Errorf("404: it has no weather")
}

// TestWeatherWatch: on the in-process crowd's real sky, on a fake clock,
// each flood records the weather it did not put in force: what was in
// force at its start and since when, and a change another hand made
// during it, read at its end; the run's own timeline is not another
// hand's. A ladder's next flood starts in the weather the last one ended
// in; a crowd that cannot say its weather records none, and the flood
// runs.
func TestWeatherWatch(t *testing.T) {
	type step struct {
		at   time.Duration // from the first flood's start
		spec string        // put in force by another hand ("" clears)
	}
	clearSpec := ""
	for _, tc := range []struct {
		name     string
		before   string   // in force 1 s before the first flood
		timeline []string // --weather-at
		others   []step   // another hand's changes
		floods   int      // each 2 s, one after the other
		dumb     bool     // the crowd cannot say its weather
		setUp    *string  // put in force by another hand during the run's set-up
		want     []string // each flood's ambient weather, as JSON
		after    string   // the weather in force once the run put back what it should
	}{
		// Clear throughout: the crowd said, and nothing is in the section.
		{"clear", "", nil, nil, 1, false, nil, []string{"{}"}, ""},
		// Set before the run and left alone: the start, since 1 s before it.
		{"set before", "down=flood1.test", nil, nil, 1, false, nil,
			[]string{`{"start":{"since_s":-1,"spec":"down=flood1.test","counts":{"clear":1,"down":1},"origins":[{"host":"flood1.test","condition":"down"}]}}`}, "down=flood1.test"},
		// Another hand sets weather at +1.5 s.
		{"another hand", "", nil, []step{{1500 * time.Millisecond, "slow=flood2.test:30s:0.5"}}, 1, false, nil,
			[]string{`{"changed":{"since_s":1.5,"spec":"slow=flood2.test:30s:0.5","counts":{"clear":1,"slow":1},"origins":[{"host":"flood2.test","condition":"slow:30s:0.5"}]},"others":1}`}, "slow=flood2.test:30s:0.5"},
		// The run's own timeline changes it: not another hand's.
		{"own timeline", "", []string{"+1s gone=flood2.test"}, nil, 1, false, nil, []string{"{}"}, ""},
		// Another hand clears what the timeline put in force.
		{"cleared behind the timeline", "", []string{"+1s gone=flood2.test"}, []step{{1500 * time.Millisecond, ""}}, 1, false, nil,
			[]string{`{"changed":{"since_s":1.5,"spec":"","counts":{"clear":2}},"others":1}`}, ""},
		// Two floods (a ladder's rungs): the second starts in the weather
		// another hand left during the first, and records it as its start.
		{"next flood", "", nil, []step{{time.Second, "down=flood1.test"}}, 2, false, nil, []string{
			`{"changed":{"since_s":1,"spec":"down=flood1.test","counts":{"clear":1,"down":1},"origins":[{"host":"flood1.test","condition":"down"}]},"others":1}`,
			`{"start":{"since_s":-1,"spec":"down=flood1.test","counts":{"clear":1,"down":1},"origins":[{"host":"flood1.test","condition":"down"}]}}`}, "down=flood1.test"},
		// The same weather put in force again: no change.
		{"set again", "down=flood1.test", nil, []step{{time.Second, "down=flood1.test"}}, 1, false, nil, []string{
			`{"start":{"since_s":-1,"spec":"down=flood1.test","counts":{"clear":1,"down":1},"origins":[{"host":"flood1.test","condition":"down"}]}}`}, "down=flood1.test"},
		// Another hand's change the timeline replaces later is seen before
		// it is, and the weather before the run is put back.
		{"replaced by the timeline", "", []string{"+1s gone=flood2.test"}, []step{{500 * time.Millisecond, "down=flood1.test"}}, 1, false, nil, []string{
			`{"changed":{"since_s":0.5,"spec":"down=flood1.test","counts":{"clear":1,"down":1},"origins":[{"host":"flood1.test","condition":"down"}]},"others":1}`}, ""},
		// Another hand's change after the timeline's last stays when the run ends.
		{"theirs stays", "slow=flood2.test:30s:0.5", []string{"+1s gone=flood2.test"}, []step{{1500 * time.Millisecond, "down=flood1.test"}}, 1, false, nil, []string{
			`{"start":{"since_s":-1,"spec":"slow=flood2.test:30s:0.5","counts":{"clear":1,"slow":1},"origins":[{"host":"flood2.test","condition":"slow:30s:0.5"}]},` +
				`"changed":{"since_s":1.5,"spec":"down=flood1.test","counts":{"clear":1,"down":1},"origins":[{"host":"flood1.test","condition":"down"}]},"others":1}`}, "down=flood1.test"},
		// Cleared during the run's set-up, after the first reading: the
		// flood met clear weather only, and no one changed it during it.
		{"changed during the set-up", "down=flood1.test", nil, nil, 1, false, &clearSpec, []string{"{}"}, ""},
		// A crowd that cannot say: no section (a gate on it has no data),
		// nothing fails.
		{"cannot say", "down=flood1.test", nil, nil, 1, true, nil, []string{"null"}, "down=flood1.test"},
		// Another hand slows an origin and clears it again between two
		// readings: no reading saw it, the crowd's count did.
		{"changed and back", "", nil, []step{{500 * time.Millisecond, "slow=flood2.test:30s:0.5"}, {time.Second, ""}}, 1, false, nil,
			[]string{`{"others":2,"unseen":2}`}, ""},
		// Changed and undone by another hand before the timeline's own
		// change: counted at the look before it; the timeline's own change
		// is not another hand's.
		{"undone before the timeline", "", []string{"+1s gone=flood2.test"}, []step{{300 * time.Millisecond, "slow=flood2.test:30s:0.5"}, {600 * time.Millisecond, ""}}, 1, false, nil,
			[]string{`{"others":2,"unseen":2}`}, ""},
		// Two changes of another hand, each seen (the first at the look
		// before the timeline's change): the last kept, the first counted
		// as earlier.
		{"two seen", "", []string{"+1s gone=flood2.test"}, []step{{500 * time.Millisecond, "down=flood1.test"}, {1500 * time.Millisecond, "slow=flood2.test:30s:0.5"}}, 1, false, nil,
			[]string{`{"changed":{"since_s":1.5,"spec":"slow=flood2.test:30s:0.5","counts":{"clear":1,"slow":1},"origins":[{"host":"flood2.test","condition":"slow:30s:0.5"}]},"others":2,"earlier":1}`}, "slow=flood2.test:30s:0.5"},
		// Two changes of another hand between readings: the last is seen,
		// both are counted.
		{"twice", "", nil, []step{{500 * time.Millisecond, "slow=flood2.test:30s:0.5"}, {time.Second, "down=flood1.test"}}, 1, false, nil,
			[]string{`{"changed":{"since_s":1,"spec":"down=flood1.test","counts":{"clear":1,"down":1},"origins":[{"host":"flood1.test","condition":"down"}]},"others":2,"unseen":1}`}, "down=flood1.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := crowdtest.Start(t, crowdtest.Options{Unstarted: true})
			synctest.Test(t, func(t *testing.T) {
				set := func(text string) {
					spec, err := weather.ParseSpec(text)
					if err == nil {
						err = cr.Pasture.SetWeather(spec)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				set(tc.before)
				time.Sleep(time.Second)
				var ctl weatherControl = pastureWeather{p: cr.Pasture}
				if tc.dumb {
					ctl = dumb{ctl}
				}
				var tlv WeatherTimeline
				for _, w := range tc.timeline {
					tlv.At = append(tlv.At, at(t, w))
				}
				tl, err := startTimeline(context.Background(), tlv, ctl, zap.NewNop())
				if err != nil {
					t.Fatal(err)
				}
				if tc.setUp != nil {
					// Changed during the run's set-up, before the flood.
					time.Sleep(time.Second)
					set(*tc.setUp)
				}
				start := time.Now()
				go func() {
					for _, s := range tc.others {
						time.Sleep(time.Until(start.Add(s.at)))
						set(s.spec)
					}
				}()
				var got []string
				for i := range tc.floods {
					tl.beforeFlood(context.Background())
					tl.Begin(record.Schedule{Start: start.Add(time.Duration(i) * 2 * time.Second)})
					time.Sleep(time.Until(start.Add(time.Duration(i+1) * 2 * time.Second)))
					tl.End(record.Stop{})
					tl.afterFlood(context.Background())
					b, _ := json.Marshal(tl.ambient())
					got = append(got, string(b))
				}
				synctest.Wait()
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("ambient weather per flood:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
				}
				if len(tc.timeline) == 0 && tl.section() != nil {
					t.Errorf("a run without a timeline has a timeline section: %+v", tl.section())
				}
				if err := tl.restore(); err != nil {
					t.Error(err)
				}
				if got := cr.Pasture.Sky().Now().Spec().String(); got != tc.after {
					t.Errorf("the weather after the run is %q, want %q", got, tc.after)
				}
			})
		})
	}
}

// TestWeatherNotClearIsWarnedOfBeforeTheRun: a run without a timeline on a
// crowd whose origins are not all clear is warned, before it floods, that
// its figures include weather it did not set; clear weather, or a run with
// its own timeline, is no warning.
func TestWeatherNotClearIsWarnedOfBeforeTheRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		before   string
		timeline string // --weather-at, "" for none
		warned   bool
	}{
		// flood1.test down, left by crowd weather set.
		{"weather left in force", "down=flood1.test", "", true},
		// Clear: nothing to say.
		{"clear", "", "", false},
		// The run's own timeline sets the weather: it says so in its section.
		{"a timeline of its own", "down=flood1.test", "+1s clear", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := crowdtest.Start(t, crowdtest.Options{Unstarted: true})
			spec, err := weather.ParseSpec(tc.before)
			if err == nil {
				err = cr.Pasture.SetWeather(spec)
			}
			if err != nil {
				t.Fatal(err)
			}
			var tlv WeatherTimeline
			if tc.timeline != "" {
				tlv.At = []WeatherAt{at(t, tc.timeline)}
			}
			core, logs := observer.New(zap.WarnLevel)
			if _, err := startTimeline(context.Background(), tlv, pastureWeather{p: cr.Pasture}, zap.New(core)); err != nil {
				t.Fatal(err)
			}
			warned := logs.FilterMessageSnippet("not all clear").Len() == 1
			if warned != tc.warned {
				t.Errorf("warned %v, want %v: %v", warned, tc.warned, logs.All())
			}
		})
	}
}
