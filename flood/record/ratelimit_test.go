package record_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// TestRateLimitsMergeExact: what two generators saw of the SUT's rate
// limits, merged after a trip through JSON, is what one generator seeing
// every answer would have recorded: counts add, spans widen, the latest
// reset wins.
func TestRateLimitsMergeExact(t *testing.T) {
	reset := t0.Add(5 * time.Minute)
	samples := []struct {
		part int
		c    record.Class
		s    record.RateLimitSample
	}{
		// Generator 1: a 2xx advertising 300 with 299 left, then a Mastodon-style 429.
		{0, record.Class202, record.RateLimitSample{Said: record.SaidLimit | record.SaidRemaining, Limit: 300, Remaining: 299}},
		{0, record.Class429, record.RateLimitSample{Said: record.SaidLimit | record.SaidRemaining | record.SaidReset, Limit: 300, ResetIn: time.Minute, ResetAt: reset}},
		// Generator 2: an IETF 429 with Retry-After, a later reset and a window.
		{1, record.Class429, record.RateLimitSample{Said: record.SaidLimit | record.SaidWindow | record.SaidReset | record.SaidIETF | record.SaidRetryAfter,
			Limit: 100, Window: 300 * time.Second, ResetIn: 90 * time.Second, ResetAt: reset.Add(30 * time.Second)}},
		// Generator 2: Retry-After alone says nothing of the limit and is not counted here.
		{1, record.Class503, record.RateLimitSample{Said: record.SaidRetryAfter}},
	}
	var want record.RateLimits
	parts := [2]*record.Stats{
		recordtest.Sends(10, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202)),
		recordtest.Sends(10, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202)),
	}
	for _, sm := range samples {
		parts[sm.part].RateLimits.Add(sm.c, sm.s)
		want.Add(sm.c, sm.s)
	}
	s := record.Settings{Label: "limits", Arrivals: "constant", Mix: "create=1", Signing: "pipeline"}
	var recs []*record.Record
	for i, st := range parts {
		s.Shard = []string{"1/2", "2/2"}[i]
		recs = append(recs, recordtest.RoundTrip(t, recordtest.MustRecord(t, recordtest.Run(t0, 2*time.Second, map[string]*record.Stats{"Create": st}), s)))
	}
	m, err := record.Merge(recs...)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Overall.RateLimits; !reflect.DeepEqual(got, want) {
		t.Errorf("merged %+v\nwant   %+v", got, want)
	}
	shed := m.Types["Create"].RateLimits.Classes[record.Class429]
	if shed.Answers != 2 || shed.IETF != 1 || shed.ResetOnly != 1 || *shed.Limit != (record.Span{Min: 100, Max: 300}) ||
		*shed.ResetInMS != (record.Span{Min: 60_000, Max: 90_000}) || !shed.LastReset.Equal(reset.Add(30*time.Second)) {
		t.Errorf("429s %+v", shed)
	}
	if got := m.Overall.RateLimits.All().Advertised(); got != "limits of 100 to 300 per 300 s, resetting within 90.0s" {
		t.Errorf("advertised %q", got)
	}
}

// TestRateLimitsJSON: a record without rate-limit fields leaves the section
// out; an unknown status class in it is refused, as in a tally.
func TestRateLimitsJSON(t *testing.T) {
	var rl record.RateLimits
	if !rl.IsZero() {
		t.Fatal("empty rate limits not zero")
	}
	rl.Add(record.Class429, record.RateLimitSample{Said: record.SaidLimit, Limit: 7})
	b, err := rl.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"429":{"answers":1,"ietf":0,"reset_only":0,"limit":{"min":7,"max":7}}}`; string(b) != want {
		t.Errorf("json %s, want %s", b, want)
	}
	var back record.RateLimits
	if err := back.UnmarshalJSON([]byte(strings.Replace(string(b), `"429"`, `"teapot"`, 1))); err == nil {
		t.Error("unknown class accepted")
	}
}
