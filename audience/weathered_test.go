package audience

import (
	"slices"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// weatherFixture is a run's deliveries: persona p's followers, its posts,
// and the attempts the crowd logged.
type weatherFixture struct {
	t *testing.T
	d *Deliveries
	// timeline is the flood's, for the SUT's answers in each phase.
	timeline []record.Tick
}

// newWeatherFixture expects p's posts at followers.
func newWeatherFixture(t *testing.T, followers ...CrowdActor) *weatherFixture {
	return &weatherFixture{t: t, d: NewDeliveries(map[string][]CrowdActor{"p": followers})}
}

// post makes p's post n at ms (both clocks agree here).
func (f *weatherFixture) post(n string, ms int) Status {
	s := Status{URI: "https://sut.test/p/" + n, CreatedAt: at(ms)}
	f.d.PostedAt("p", s, at(ms))
	return s
}

// attempt logs an attempt at host's inbox (the zero Status: a refusal).
func (f *weatherFixture) attempt(ms int, host, inbox string, s Status, status int, weather string) {
	a := Attempt{Time: at(ms), URL: host, Status: status, Weather: weather, Accepted: status == 202, Remote: "127.0.0.1:1"}
	if s.URI != "" {
		a.ID, a.Object, a.URL = s.URI+"/activity", s.URI, host+inbox
	}
	f.d.Attempted(a)
	if a.Accepted {
		f.d.Arrived(Arrival{Time: a.Time, Inbox: host + inbox, ID: a.ID, Object: a.Object})
	}
}

// under is the account of the run with weather changes at the given
// offsets (seconds) to the given origins, up to endMS.
func (f *weatherFixture) under(endMS int, changes ...record.WeatherChange) *record.Deliveries {
	f.t.Helper()
	got, err := f.d.UnderWeather(HistoryOf(at(0), map[string]string{}, &record.Weather{Changes: changes}, nil), at(endMS), f.timeline)
	if err != nil || got == nil {
		f.t.Fatalf("UnderWeather: %v, %v", got, err)
	}
	return got
}

// TestUnderWeather accounts for a SUT's deliveries during a run in which
// flood1 went down at +1 s and came back at +10 s, and flood2 answered 429
// (Retry-After 2 s) from +1 s on; flood3 stayed clear. One post before the
// weather, one during it, one after flood1 came back.
func TestUnderWeather(t *testing.T) {
	f := newWeatherFixture(t, CrowdActor{ID: "https://flood1.test/users/a"}, CrowdActor{ID: "https://flood2.test/users/b"},
		CrowdActor{ID: "https://flood3.test/users/c"})
	early, late, after := f.post("1", 0), f.post("2", 2000), f.post("3", 12000)
	// Before the weather, every origin takes the first post.
	f.attempt(50, "flood2.test", "/users/b/inbox", early, 202, "")
	f.attempt(80, "flood3.test", "/users/c/inbox", early, 202, "")
	f.attempt(100, "flood1.test", "/users/a/inbox", early, 202, "")
	// The second post: flood1 refuses connections (two of one attempt,
	// then two more attempts), then takes it after it came back.
	f.attempt(2100, "flood1.test", "", Status{}, 0, "down")
	f.attempt(2150, "flood1.test", "", Status{}, 0, "down")
	f.attempt(3000, "flood1.test", "", Status{}, 0, "down")
	f.attempt(5000, "flood1.test", "", Status{}, 0, "down")
	f.attempt(11000, "flood1.test", "/users/a/inbox", late, 202, "")
	// flood2 answers 429 three times; the second retry came 0.95 s after a
	// Retry-After of 2 s.
	f.attempt(2050, "flood2.test", "/users/b/inbox", late, 429, "limited:2s")
	f.attempt(3000, "flood2.test", "/users/b/inbox", late, 429, "limited:2s")
	f.attempt(6000, "flood2.test", "/users/b/inbox", late, 429, "limited:2s")
	// The healthy origin takes it 2 s after the post.
	f.attempt(4000, "flood3.test", "/users/c/inbox", late, 202, "")
	// The third post reaches flood1 and flood3; flood2 still refuses it.
	f.attempt(12050, "flood1.test", "/users/a/inbox", after, 202, "")
	f.attempt(12060, "flood2.test", "/users/b/inbox", after, 429, "limited:2s")
	f.attempt(12070, "flood3.test", "/users/c/inbox", after, 202, "")
	// The flood's answers: 10 ms a second before the weather, 30 ms in it.
	for s := 1; s <= 20; s++ {
		p50 := int64(30_000)
		if s <= 1 {
			p50 = 10_000
		}
		f.timeline = append(f.timeline, record.Tick{T: s, Span: 1, LatencyP50: p50})
	}

	got := f.under(20000,
		record.WeatherChange{AtS: 1, Origins: []record.WeatherOrigin{{Host: "flood1.test", Condition: "down"}, {Host: "flood2.test", Condition: "limited:2s"}}},
		record.WeatherChange{AtS: 9, AppliedS: 10, Origins: []record.WeatherOrigin{{Host: "flood2.test", Condition: "limited:2s"}}},
		record.WeatherChange{AtS: 15, Error: "refused: not applied"})
	if len(got.Origins) != 2 || got.Origins[0].Host != "flood1.test" || got.Origins[1].Host != "flood2.test" {
		t.Fatalf("origins %+v: want flood1 and flood2", got.Origins)
	}
	down, limited := got.Origins[0], got.Origins[1]

	// flood1: its weathers in order (the change dated when applied), 5
	// attempts (two refusals 50 ms apart are one), the second post linked
	// by origin (the only one owed).
	if !slices.Equal(down.Conditions, []string{"clear", "down", "clear"}) || down.Class != "down" || down.Attempts != 6 {
		t.Errorf("flood1: conditions %v class %q attempts %d: want clear → down → clear, down, 6", down.Conditions, down.Class, down.Attempts)
	}
	if down.Delivered != 2 || down.DeliveredAfterRecovery != 1 || down.Undelivered != 0 || down.Unlinked != 0 {
		t.Errorf("flood1 outcomes %+v: want two delivered at once, one after its recovery", down)
	}
	second := down.Activities[1]
	if second.Outcome != record.OutcomeAfterRecovery || second.DeliveredOn != 4 || second.AfterRecoveryS != 1 ||
		second.Linked != "origin" || !slices.Equal(second.IntervalsS, []float64{0.9, 2, 6}) {
		t.Errorf("flood1's second post %+v: want delivered on attempt 4, 1 s after the recovery, intervals 0.9, 2, 6", second)
	}
	if r := down.Recoveries; len(r) != 1 || r[0].AtS != 10 || r[0].Backlog != 1 || r[0].PeakPerS != 1 || r[0].DrainS != 1 {
		t.Errorf("flood1 recoveries %+v: want cleared at +10 s, a backlog of 1 drained in 1 s", r)
	}
	// 3 attempts in the 9 s it was down.
	if want := 3 / (9.0 / 3600); down.PerHour < want-1 || down.PerHour > want+1 {
		t.Errorf("flood1: %.0f attempts/h, want %.0f", down.PerHour, want)
	}

	// flood2: in weather to the end, so no recovery; the later posts never
	// delivered; one retry came early.
	if limited.Undelivered != 2 || limited.Delivered != 1 || limited.EarlyRetries != 1 || len(limited.Recoveries) != 0 {
		t.Errorf("flood2 %+v: want the first post delivered, the others not, one early retry, no recovery", limited)
	}
	if a := limited.Activities[1]; len(a.Attempts) != 3 || a.Attempts[0].Status != 429 || a.Attempts[0].Weather != "limited:2s" || a.Linked != "id" {
		t.Errorf("flood2's second post %+v: want its three 429s with the weather, linked by id", a)
	}

	// The healthy origin: one delivery before the weather and two during
	// it; too few to judge.
	h := got.Healthy
	if h.Expected != 3 || h.Reached != 3 || h.Unreached != 0 || h.Baseline.Count != 1 || h.Weather.Count != 2 || h.Weather.Max < 1990000 {
		t.Errorf("healthy %+v: want one delivery before the weather, two during it (one of 2 s)", h)
	}
	if got.Isolation.Verdict != record.VerdictUnknown {
		t.Errorf("isolation %+v: want no verdict on so few deliveries", got.Isolation)
	}
	// The SUT's answers split as the posts are: the second before +1 s in
	// the clear phase, the nineteen after it under the weather.
	if a := h.Answers; a == nil || *a != (record.SUTAnswers{BaselineP50US: 10_000, WeatherP50US: 30_000, BaselineSeconds: 1, WeatherSeconds: 19}) {
		t.Errorf("the SUT's answers %+v: want 10 ms over 1 s clear, 30 ms over 19 s of weather", a)
	}
	// Every attempt counted once in the plot, by the weather it met; every
	// second of the run has its tick.
	byClass := map[string]int{}
	for _, tick := range got.Attempts {
		for k, n := range tick.ByClass {
			byClass[k] += n
		}
	}
	if len(got.Attempts) != 21 || byClass["clear"] != 7 || byClass["down"] != 3 || byClass["limited"] != 4 {
		t.Errorf("%d ticks, attempts by class %v: want 21 ticks, 7 clear, 3 down, 4 limited", len(got.Attempts), byClass)
	}
}

// TestUnderWeatherLinking: how attempts are tied to the delivery jobs an
// origin was owed.
func TestUnderWeatherLinking(t *testing.T) {
	down := []record.WeatherChange{{AtS: 0.001, Origins: []record.WeatherOrigin{{Host: "flood1.test", Condition: "down"}}}}
	expired := []record.WeatherChange{{AtS: 0.001, Origins: []record.WeatherOrigin{{Host: "flood1.test", Condition: "tls-expired"}}}}
	for _, tc := range []struct {
		name      string
		followers int // at flood1.test
		changes   []record.WeatherChange
		run       func(f *weatherFixture)
		attempts  int
		unlinked  int
		jobs      []int // attempts per job, in order
	}{
		// Refusals 200 ms apart are two attempts; three 60 ms apart after
		// one more are one (the window counts from the first).
		{"a retry after 200 ms is its own attempt", 1, down, func(f *weatherFixture) {
			f.post("1", 10)
			for _, ms := range []int{100, 300, 360, 390} {
				f.attempt(ms, "flood1.test", "", Status{}, 0, "down")
			}
		}, 2, 0, []int{2}},
		// A chain of refusals closer than the window, from several tries,
		// is not one attempt: each window starts anew.
		{"a chain of refusals", 1, down, func(f *weatherFixture) {
			f.post("1", 10)
			for ms := 100; ms < 400; ms += 60 {
				f.attempt(ms, "flood1.test", "", Status{}, 0, "down")
			}
		}, 3, 0, []int{3}},
		// Two posts owed at once: a refusal cannot say whose it is.
		{"two posts owed", 1, down, func(f *weatherFixture) {
			f.post("1", 10)
			f.post("2", 20)
			f.attempt(100, "flood1.test", "", Status{}, 0, "down")
		}, 1, 1, []int{0, 0}},
		// Two followers at the origin with inboxes of their own: a job per
		// inbox, each with its own schedule.
		{"two inboxes at one origin", 2, down, func(f *weatherFixture) {
			s := f.post("1", 10)
			f.attempt(100, "flood1.test", "/users/a/inbox", s, 502, "flaky:1")
			f.attempt(110, "flood1.test", "/users/b/inbox", s, 502, "flaky:1")
			f.attempt(700, "flood1.test", "/users/a/inbox", s, 202, "")
		}, 3, 0, []int{2, 1}},
		// A client that does not verify certificates went on: the broken
		// certificate's entry is no attempt, its request is.
		{"a handshake that went through", 1, expired, func(f *weatherFixture) {
			s := f.post("1", 10)
			f.attempt(100, "flood1.test", "", Status{}, 0, "tls-expired")
			f.attempt(110, "flood1.test", "/users/a/inbox", s, 202, "tls-expired")
		}, 1, 0, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			followers := []CrowdActor{{ID: "https://flood1.test/users/a"}, {ID: "https://flood1.test/users/b"}}[:tc.followers]
			f := newWeatherFixture(t, followers...)
			tc.run(f)
			o := f.under(2000, tc.changes...).Origins[0]
			var jobs []int
			for _, a := range o.Activities {
				jobs = append(jobs, len(a.Attempts))
			}
			if o.Attempts != tc.attempts || o.Unlinked != tc.unlinked || !slices.Equal(jobs, tc.jobs) {
				t.Errorf("%d attempts, %d unlinked, jobs %v: want %d, %d, %v (%+v)", o.Attempts, o.Unlinked, jobs, tc.attempts, tc.unlinked, tc.jobs, o.Activities)
			}
		})
	}
}

// TestUnderWeatherRepeatedOutages: each outage's backlog is its own
// recovery's.
func TestUnderWeatherRepeatedOutages(t *testing.T) {
	f := newWeatherFixture(t, CrowdActor{ID: "https://flood1.test/users/a"})
	one, two := f.post("1", 500), f.post("2", 4500)
	f.attempt(600, "flood1.test", "", Status{}, 0, "down")
	f.attempt(2500, "flood1.test", "/users/a/inbox", one, 202, "")
	f.attempt(4600, "flood1.test", "", Status{}, 0, "down")
	f.attempt(6200, "flood1.test", "/users/a/inbox", two, 202, "")
	downAt := func(s float64) record.WeatherChange {
		return record.WeatherChange{AtS: s, Origins: []record.WeatherOrigin{{Host: "flood1.test", Condition: "down"}}}
	}
	o := f.under(8000, downAt(0.1), record.WeatherChange{AtS: 2}, downAt(4), record.WeatherChange{AtS: 6}).Origins[0]
	if len(o.Recoveries) != 2 || o.Recoveries[0].Backlog != 1 || o.Recoveries[1].Backlog != 1 || o.Recoveries[1].DrainS != 0.2 {
		t.Errorf("recoveries %+v: want two, each with its post, the second drained in 0.2 s", o.Recoveries)
	}
	if o.DeliveredAfterRecovery != 2 || o.Activities[1].AfterRecoveryS != 0.2 {
		t.Errorf("%+v: want both posts delivered after a recovery, the second 0.2 s after its own", o)
	}
}

// TestUnderWeatherBounds: attempts past the bound are counted, not kept;
// the healthy deliveries that never came count at the end; weather from
// the start leaves no clear phase to judge by.
func TestUnderWeatherBounds(t *testing.T) {
	f := newWeatherFixture(t, CrowdActor{ID: "https://flood1.test/users/a"}, CrowdActor{ID: "https://flood2.test/users/b"})
	f.post("1", 10)
	f.d.attempts = make([]Attempt, maxAttempts) // as if full (all before the run: filtered out)
	f.attempt(100, "flood1.test", "", Status{}, 0, "down")
	got, err := f.d.UnderWeather(HistoryOf(at(0), map[string]string{"flood1.test": "down"}, nil, nil), at(3000), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.AttemptsDropped != 1 || got.Healthy.Unreached != 1 || got.Healthy.Baseline.Count != 0 || got.Healthy.Weather.Max < 2900000 {
		t.Errorf("dropped %d, healthy %+v: want 1 dropped, the unreached delivery counted at the end in the weather", got.AttemptsDropped, got.Healthy)
	}
	if got.Isolation.Verdict != record.VerdictNoBaseline {
		t.Errorf("isolation %+v: want %q", got.Isolation, record.VerdictNoBaseline)
	}
}

// TestUnderClearWeather: a run with no weather, or no post, has no
// deliveries section.
func TestUnderClearWeather(t *testing.T) {
	d := NewDeliveries(nil)
	if got, err := d.UnderWeather(HistoryOf(at(0), map[string]string{}, nil, nil), at(2000), nil); got != nil || err != nil {
		t.Errorf("UnderWeather of clear weather = %+v, %v: want nil", got, err)
	}
	if got, err := d.UnderWeather(HistoryOf(at(0), map[string]string{"flood1.test": "down"}, nil, nil), at(2000), nil); got != nil || err != nil {
		t.Errorf("UnderWeather with no post = %+v, %v: want nil", got, err)
	}
}

// TestHistoryDatesChangesWhenApplied: a change is dated when the crowd
// answered it was in force, else when it was due; refused ones are left
// out; another hand's change found at the flood's end comes last, dated
// when the crowd put it in force.
func TestHistoryDatesChangesWhenApplied(t *testing.T) {
	h := HistoryOf(at(0), map[string]string{"flood9.test": "gone"}, &record.Weather{Changes: []record.WeatherChange{
		{AtS: 1, AppliedS: 1.25, Origins: []record.WeatherOrigin{{Host: "Flood1.test", Condition: "down"}}},
		{AtS: 2, Error: "refused"},
		{AtS: 3},
	}}, &record.AmbientWeather{Changed: &record.WeatherState{SinceS: 4.5, Origins: []record.WeatherOrigin{{Host: "flood2.test", Condition: "slow:1s:1"}}}})
	if len(h.Changes) != 3 || !h.Changes[0].At.Equal(at(1250)) || h.Changes[0].Origins["flood1.test"] != "down" || !h.Changes[1].At.Equal(at(3000)) ||
		!h.Changes[2].At.Equal(at(4500)) || h.Changes[2].Origins["flood2.test"] != "slow:1s:1" {
		t.Errorf("history %+v: want the change at +1.25 s (lower-cased host), the clearing at +3 s, another hand's slow flood2 at +4.5 s", h.Changes)
	}
	// Another hand's change that a change of the timeline replaced later
	// takes its place in time, before it.
	h2 := HistoryOf(at(0), map[string]string{}, &record.Weather{Changes: []record.WeatherChange{
		{AtS: 1, AppliedS: 1.01, Origins: []record.WeatherOrigin{{Host: "flood2.test", Condition: "gone"}}},
	}}, &record.AmbientWeather{Changed: &record.WeatherState{SinceS: 0.5, Origins: []record.WeatherOrigin{{Host: "flood1.test", Condition: "down"}}}})
	if len(h2.Changes) != 2 || !h2.Changes[0].At.Equal(at(500)) || h2.Changes[0].Origins["flood1.test"] != "down" || !h2.Changes[1].At.Equal(at(1010)) {
		t.Errorf("history %+v: want another hand's flood1 down at +0.5 s, then the timeline's flood2 gone at +1.01 s", h2.Changes)
	}
	if !h2.anyAt(at(700)) {
		t.Error("no origin in weather at +0.7 s, when flood1 was down")
	}
	if !h.firstWeather().Equal(at(0)) {
		t.Errorf("first weather %v: want the start (flood9 was gone then)", h.firstWeather())
	}
}
