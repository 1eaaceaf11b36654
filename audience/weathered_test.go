package audience

import (
	"slices"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestUnderWeather accounts for a SUT's deliveries during a run in which
// flood1 went down at +1 s and came back at +10 s, and flood2 answered 429
// (Retry-After 2 s) from +1 s to the end; flood3 stayed clear. One post
// before the weather, one during it.
func TestUnderWeather(t *testing.T) {
	f1 := CrowdActor{ID: "https://flood1.test/users/a"}
	f2 := CrowdActor{ID: "https://flood2.test/users/b"}
	f3 := CrowdActor{ID: "https://flood3.test/users/c"}
	d := NewDeliveries(map[string][]CrowdActor{"p": {f1, f2, f3}})
	early := Status{URI: "https://sut.test/p/1", CreatedAt: at(0)}
	late := Status{URI: "https://sut.test/p/2", CreatedAt: at(2000)}
	after := Status{URI: "https://sut.test/p/3", CreatedAt: at(25000)}
	d.Posted("p", early)
	d.Posted("p", late)
	d.Posted("p", after)
	attempt := func(ms int, host string, s Status, status int, weather string) {
		a := Attempt{Time: at(ms), Host: host, Status: status, Weather: weather, Accepted: status == 202}
		if s.URI != "" {
			a.ID, a.Object = s.URI+"/activity", s.URI
		}
		d.Attempted(a)
		if a.Accepted {
			d.Arrived(Arrival{Time: a.Time, Inbox: "https://" + host + "/inbox", ID: a.ID, Object: a.Object})
		}
	}
	// Before the weather, every origin takes the first post.
	attempt(50, "flood2.test", early, 202, "")
	attempt(80, "flood3.test", early, 202, "")
	attempt(100, "flood1.test", early, 202, "")
	// The second post: flood1 refuses connections (two of one attempt,
	// then two more attempts), then takes it after it came back.
	attempt(2100, "flood1.test", Status{}, 0, "down")
	attempt(2150, "flood1.test", Status{}, 0, "down")
	attempt(3000, "flood1.test", Status{}, 0, "down")
	attempt(5000, "flood1.test", Status{}, 0, "down")
	attempt(11000, "flood1.test", late, 202, "")
	// flood2 answers 429 three times; the second retry came 0.95 s after a
	// Retry-After of 2 s.
	attempt(2050, "flood2.test", late, 429, "limited:2s")
	attempt(3000, "flood2.test", late, 429, "limited:2s")
	attempt(6000, "flood2.test", late, 429, "limited:2s")
	// The healthy origin takes it 2 s after the post.
	attempt(4000, "flood3.test", late, 202, "")
	// A post after the weather cleared (the run's end at +20 s) reaches
	// every origin.
	attempt(25050, "flood1.test", after, 202, "")
	attempt(25060, "flood2.test", after, 202, "")
	attempt(25070, "flood3.test", after, 202, "")

	w := &record.Weather{Changes: []record.WeatherChange{
		{AtS: 1, Origins: []record.WeatherOrigin{{Host: "flood1.test", Condition: "down"}, {Host: "flood2.test", Condition: "limited:2s"}}},
		{AtS: 10, Origins: []record.WeatherOrigin{{Host: "flood2.test", Condition: "limited:2s"}}},
		{AtS: 12, Error: "refused: not applied"},
	}}
	got, err := d.UnderWeather(HistoryOf(at(0), at(20000), map[string]string{}, w), at(30000))
	if err != nil || got == nil {
		t.Fatalf("UnderWeather: %v, %v", got, err)
	}
	if len(got.Origins) != 2 || got.Origins[0].Host != "flood1.test" || got.Origins[1].Host != "flood2.test" {
		t.Fatalf("origins %+v: want flood1 and flood2", got.Origins)
	}
	down, limited := got.Origins[0], got.Origins[1]

	// flood1: its weathers in order, 4 attempts (two refusals 50 ms apart
	// are one), the second post linked by origin (the only one owed).
	if !slices.Equal(down.Conditions, []string{"clear", "down", "clear"}) || down.Class != "down" || down.Attempts != 6 {
		t.Errorf("flood1: conditions %v class %q attempts %d: want clear → down → clear, down, 6 (one before the weather, one after)",
			down.Conditions, down.Class, down.Attempts)
	}
	if down.Delivered != 2 || down.DeliveredAfterRecovery != 1 || down.Undelivered != 0 || down.Unlinked != 0 {
		t.Errorf("flood1 outcomes %+v: want two delivered at once, one after its recovery", down)
	}
	second := down.Activities[1]
	if second.Outcome != record.OutcomeAfterRecovery || second.DeliveredOn != 4 || second.AfterRecoveryS != 1 ||
		second.Linked != "origin" || !slices.Equal(second.IntervalsS, []float64{0.9, 2, 6}) {
		t.Errorf("flood1's second post %+v: want delivered on attempt 4, 1 s after the recovery, intervals 0.9, 2, 6", second)
	}
	if r := down.Recovery; r == nil || r.AtS != 10 || r.Backlog != 1 || r.PeakPerS != 1 || r.DrainS != 1 {
		t.Errorf("flood1 recovery %+v: want cleared at +10 s, a backlog of 1 drained in 1 s", r)
	}
	// 3 attempts in the 9 s it was down.
	if want := 3 / (9.0 / 3600); down.PerHour < want-1 || down.PerHour > want+1 {
		t.Errorf("flood1: %.0f attempts/h, want %.0f", down.PerHour, want)
	}

	// flood2: the second post never delivered; one retry came early; the
	// run put the clear weather back at its end, with nothing owed left
	// to deliver.
	if limited.Undelivered != 1 || limited.Delivered != 2 || limited.EarlyRetries != 1 {
		t.Errorf("flood2 %+v: want the first and third posts delivered, the second not, one early retry", limited)
	}
	if r := limited.Recovery; r == nil || r.AtS != 20 || r.Backlog != 0 {
		t.Errorf("flood2 recovery %+v: want cleared at the run's end (+20 s), no backlog delivered", r)
	}
	if a := limited.Activities[1]; len(a.Attempts) != 3 || a.Attempts[0].Status != 429 || a.Attempts[0].Weather != "limited:2s" || a.Linked != "id" {
		t.Errorf("flood2's second post %+v: want its three 429s with the weather, linked by id", a)
	}

	// The healthy origin: one delivery in each phase, and one after the
	// weather cleared, which is in neither; too few to judge.
	h := got.Healthy
	if h.Expected != 3 || h.Reached != 3 || h.Baseline.Count != 1 || h.Weather.Count != 1 || h.Weather.P50 < 1990000 {
		t.Errorf("healthy %+v: want one delivery before the weather, one 2 s one during it, one after", h)
	}
	if got.Isolation.Verdict != record.VerdictUnknown {
		t.Errorf("isolation %+v: want no verdict on one delivery a phase", got.Isolation)
	}
	// Every attempt counted once in the plot, by the weather it met.
	byClass := map[string]int{}
	for _, tick := range got.Attempts {
		for k, n := range tick.ByClass {
			byClass[k] += n
		}
	}
	if byClass["clear"] != 8 || byClass["down"] != 3 || byClass["limited"] != 3 {
		t.Errorf("attempts by class %v: want 8 clear, 3 down, 3 limited", byClass)
	}
}

// TestUnderClearWeather: a run with no weather has no deliveries section.
func TestUnderClearWeather(t *testing.T) {
	d := NewDeliveries(nil)
	if got, err := d.UnderWeather(HistoryOf(at(0), at(1000), map[string]string{}, nil), at(2000)); got != nil || err != nil {
		t.Errorf("UnderWeather of clear weather = %+v, %v: want nil", got, err)
	}
}
