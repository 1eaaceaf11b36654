package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// floodRecord is the part of a flood record (flood/record/SCHEMA.md) this test reads.
type floodRecord struct {
	Schema  string `json:"schema"`
	Partial bool   `json:"partial"`
	Overall struct {
		Counts struct {
			Offered, Sent, Dropped, Completed int64
		} `json:"counts"`
		Tally   map[string]int64 `json:"tally"`
		Latency struct {
			P50 int64 `json:"p50_us"`
			P95 int64 `json:"p95_us"`
			P99 int64 `json:"p99_us"`
		} `json:"latency"`
	} `json:"overall"`
	Types map[string]struct {
		Counts struct {
			Sent int64 `json:"sent"`
		} `json:"counts"`
		Tally map[string]int64 `json:"tally"`
	} `json:"types"`
}

// TestFloodRealFedify floods a real Fedify 1.5.9 for 10 s with the
// crowd's Creates, Likes and Follows, attached to a running crowd: the
// personas are found by WebFinger and signed GETs, every activity is
// signed, and Fedify verifies each. Fedify's own counts are the judge:
// nothing rejected, and what the crowd tallied as 202 is exactly what
// Fedify verified, type by type.
func TestFloodRealFedify(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	rec, output := f.flood(t, "fedify", "--rate", "20", "--seconds", "10", "--timeout", "60s")
	var stats struct {
		Verified      map[string]int64 `json:"verified"`
		Rejected      map[string]int64 `json:"rejected"`
		VerifiedTotal int64            `json:"verifiedTotal"`
		RejectedTotal int64            `json:"rejectedTotal"`
		FailedTotal   int64            `json:"failedTotal"`
		Rejections    []struct {
			Type, Reason string
		} `json:"rejections"`
	}
	f.call(t, "GET", fedifyCtl+"/stats", nil, &stats)
	t.Logf("crowd: %+v tally %v; Fedify: verified %v rejected %v failed %d", rec.Overall.Counts, rec.Overall.Tally,
		stats.Verified, stats.Rejected, stats.FailedTotal)

	if rec.Schema != "crowd.flood.record" || rec.Partial {
		t.Errorf("record schema %q partial %v", rec.Schema, rec.Partial)
	}
	if rec.Overall.Counts.Sent < 180 || rec.Overall.Counts.Dropped != 0 {
		t.Errorf("20/s for 10 s should send about 200 with no drops: %+v", rec.Overall.Counts)
	}
	if stats.RejectedTotal != 0 {
		t.Errorf("Fedify rejected %d activities: %+v", stats.RejectedTotal, stats.Rejections)
	}
	if got := rec.Overall.Tally["202"]; got != stats.VerifiedTotal {
		t.Errorf("the crowd tallied %d answers 202, Fedify verified %d", got, stats.VerifiedTotal)
	}
	if rec.Overall.Counts.Completed != stats.VerifiedTotal {
		t.Errorf("the crowd completed %d sends, Fedify verified %d", rec.Overall.Counts.Completed, stats.VerifiedTotal)
	}
	for _, typ := range []string{"Create", "Like", "Follow"} {
		crowd := rec.Types[typ].Tally["202"]
		if crowd == 0 || crowd != stats.Verified[typ] {
			t.Errorf("%s: the crowd tallied %d × 202, Fedify verified %d", typ, crowd, stats.Verified[typ])
		}
	}
	// The Follows were registered with the running crowd, so Fedify's
	// Accepts land in its graph.
	eventually(t, 20*time.Second, "Fedify's Accepts of the flood's Follows in the crowd's graph", func() bool {
		var follows []struct {
			Following []struct{ Remote, State string } `json:"following"`
		}
		f.call(t, "GET", crowdAdmin+"/api/follows", nil, &follows)
		accepted := 0
		for _, a := range follows {
			for _, r := range a.Following {
				if strings.HasPrefix(r.Remote, "https://sut.test/") && r.State == "accepted" {
					accepted++
				}
			}
		}
		return accepted > 0
	})
	if !strings.Contains(string(output), "record:") {
		t.Errorf("crowd flood should name the record it wrote:\n%s", output)
	}
	t.Run("rate limit headers", func(t *testing.T) { floodRateLimited(t, f) })
	t.Run("boosters followed", func(t *testing.T) { floodFollowsBoosters(t, f) })
	t.Run("weather timeline", func(t *testing.T) { floodWeatherTimeline(t, f) })
}

// floodWeatherTimeline floods the same Fedify for 5 s with a weather
// timeline (flood2.test gone from +1 s, every origin clear from +3 s) on a
// crowd whose flood4.test was slow before: the running crowd took both
// changes, the record's weather section lists them with the origins they
// took, the record says flood4.test was slow at the start and that no other
// hand changed the weather (the timeline's own changes are the run's), and
// the weather before the run (flood4.test slow) is back after it. Its gate
// ambient_weather==0 is missed, on that one origin.
func floodWeatherTimeline(t *testing.T, f *federation) {
	const before = "slow=flood4.test:1s:1"
	if code := f.call(t, "PUT", crowdAdmin+"/api/weather", map[string]string{"spec": before}, nil); code != 200 {
		t.Fatalf("PUT /api/weather: %d", code)
	}
	defer f.call(t, "DELETE", crowdAdmin+"/api/weather", nil, nil)
	type origin struct{ Host, Condition string }
	var rec struct {
		Weather *struct {
			Changes []struct {
				AtS     float64        `json:"at_s"`
				Spec    string         `json:"spec"`
				Counts  map[string]int `json:"counts"`
				Origins []origin       `json:"origins"`
				Error   string         `json:"error"`
			} `json:"changes"`
		} `json:"weather"`
		Ambient *struct {
			Start *struct {
				SinceS  float64  `json:"since_s"`
				Spec    string   `json:"spec"`
				Origins []origin `json:"origins"`
			} `json:"start"`
			Changed json.RawMessage `json:"changed"`
		} `json:"ambient_weather"`
	}
	_, output, code := f.floodExit(t, "weather", &rec, "--rate", "5", "--seconds", "5", "--mix", "create=1", "--timeout", "30s",
		"--weather-at", "+1s gone=flood2.test", "--weather-at", "+3s clear", "--expect", "ambient_weather==0")
	// The gate on the weather the run did not set fails it: flood4.test
	// was slow before it, by another hand.
	if code != 1 || !strings.Contains(string(output), "ambient_weather = 1 origin (want == 0): missed") {
		t.Errorf("crowd flood --expect ambient_weather==0 under weather set before it: exit %d, want 1 naming the gate\n%s", code, output)
	}
	w := rec.Weather
	if w == nil || len(w.Changes) != 2 {
		t.Fatalf("weather section %+v: want the two changes", w)
	}
	gone, clear := w.Changes[0], w.Changes[1]
	if gone.AtS != 1 || gone.Spec != "gone=flood2.test" || gone.Error != "" || gone.Counts["gone"] != 1 ||
		len(gone.Origins) != 1 || gone.Origins[0] != (origin{"flood2.test", "gone"}) {
		t.Errorf("first change %+v: want flood2.test gone at +1s", gone)
	}
	if clear.AtS != 3 || clear.Spec != "clear" || clear.Error != "" || len(clear.Counts) != 1 || clear.Counts["clear"] == 0 || len(clear.Origins) != 0 {
		t.Errorf("second change %+v: want every origin clear at +3s", clear)
	}
	if a := rec.Ambient; a == nil || a.Start == nil || a.Start.Spec != before || a.Start.SinceS >= 0 ||
		len(a.Start.Origins) != 1 || a.Start.Origins[0] != (origin{"flood4.test", "slow:1s:1"}) || a.Changed != nil {
		t.Errorf("ambient weather %+v: want flood4.test slow since before the start, and no other hand's change", a)
	}
	var now struct {
		Spec    string   `json:"spec"`
		Origins []origin `json:"origins"`
	}
	f.call(t, "GET", crowdAdmin+"/api/weather", nil, &now)
	if now.Spec != before || len(now.Origins) != 1 || now.Origins[0] != (origin{"flood4.test", "slow:1s:1"}) {
		t.Errorf("the crowd's weather after the run is %+v, want the one before, %s", now, before)
	}
}

// floodFollowsBoosters floods the same Fedify with Announces, the
// personas' client-API tokens given: before the flood every crowd actor
// that may boost is followed by a persona (Mastodon keeps a boost of a
// post not its own only from such an account), as Fedify's own answers
// through its client API say, and the record counts them.
func floodFollowsBoosters(t *testing.T, f *federation) {
	var personas []struct{ Name, Token string }
	f.call(t, "GET", fedifyCtl+"/personas", nil, &personas)
	var args []string
	for _, p := range personas {
		args = append(args, "--post-token", p.Name+"="+p.Token)
	}
	var rec struct {
		Boosters *struct{ Actors, Followed, Personas int } `json:"boosters"`
		Overall  struct {
			Tally map[string]int64 `json:"tally"`
		} `json:"overall"`
	}
	f.floodInto(t, "boosters", &rec, append(args, "--rate", "10", "--seconds", "2", "--mix", "announce=1", "--timeout", "60s")...)
	b := rec.Boosters
	if b == nil || b.Actors == 0 || b.Followed != b.Actors || b.Personas != len(personas) {
		t.Fatalf("boosters %+v: want every crowd actor followed by one of the %d personas with a token", b, len(personas))
	}
	t.Logf("%d boosters, each followed by a persona; tally %v", b.Actors, rec.Overall.Tally)
}

// floodRateLimited floods the same Fedify behind a Mastodon-shaped rate
// limit (20 deliveries a window, then 429 with X-RateLimit-* and no
// Retry-After): the record keeps, per class, the limit advertised and the
// resets the 429s named in place of a Retry-After.
func floodRateLimited(t *testing.T, f *federation) {
	f.call(t, "POST", fedifyCtl+"/inbox/ratelimit", map[string]int{"limit": 20, "window": 300}, nil)
	defer f.call(t, "POST", fedifyCtl+"/inbox/ratelimit", map[string]int{"limit": 0}, nil)
	type limits struct {
		Answers   int64 `json:"answers"`
		ResetOnly int64 `json:"reset_only"`
		Limit     *struct{ Min, Max int64 }
		ResetInMS *struct{ Min, Max int64 } `json:"reset_in_ms"`
	}
	var rec struct {
		Overall struct {
			Tally      map[string]int64  `json:"tally"`
			RateLimits map[string]limits `json:"rate_limits"`
		} `json:"overall"`
	}
	f.floodInto(t, "ratelimit", &rec, "--rate", "10", "--seconds", "3", "--mix", "create=1", "--timeout", "60s")
	o := rec.Overall
	t.Logf("tally %v, rate limits %+v", o.Tally, o.RateLimits)
	ok, shed := o.RateLimits["202"], o.RateLimits["429"]
	if o.Tally["429"] != 10 || o.Tally["retry_after"] != 0 || shed.Answers != 10 || shed.ResetOnly != 10 {
		t.Errorf("want 10 × 429, each naming its reset without Retry-After: tally %v, 429s %+v", o.Tally, shed)
	}
	if ok.Answers != 20 || ok.Limit == nil || ok.Limit.Min != 20 || ok.Limit.Max != 20 {
		t.Errorf("want 20 × 202 advertising a limit of 20: %+v", ok)
	}
	if shed.ResetInMS == nil || shed.ResetInMS.Max > 300_000 || shed.ResetInMS.Min < 290_000 {
		t.Errorf("the 429s' reset should be about 5 min away: %+v", shed.ResetInMS)
	}
}
