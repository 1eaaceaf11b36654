package record_test

import (
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
	"github.com/crowdfed/crowd/internal/histgeom"
)

// served is one kind's tally as the crowd answers it: n requests served
// in base, 2·base, … n·base.
func served(t *testing.T, n int, base time.Duration, signed, afterEnd int64) record.FetchKindTally {
	t.Helper()
	h := histgeom.New()
	for i := 1; i <= n; i++ {
		histgeom.Record(h, time.Duration(i)*base)
	}
	enc, err := histgeom.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	return record.FetchKindTally{Fetches: int64(n), Signed: signed, AfterEnd: afterEnd,
		Status: map[string]int64{"2xx": int64(n)}, LatencyHDR: enc}
}

// fetchRecord is a run of 100 accepted Creates and 50 Likes (10 of them
// refused) with a fetch-back section of actors, WebFinger and note
// fetches.
func fetchRecord(t *testing.T, shard string, actorFetches int) *record.Record {
	t.Helper()
	ms := func(int) time.Duration { return time.Millisecond }
	res := recordtest.Run(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 5*time.Second, map[string]*record.Stats{
		"Create": recordtest.Sends(100, ms, recordtest.Always(record.Class202)),
		"Like":   recordtest.Sends(50, ms, recordtest.Every(5, record.Class401)),
	})
	r := recordtest.MustRecord(t, res, record.Settings{Arrivals: "constant", Mix: "create=2,like=1", Shard: shard})
	fb, err := record.NewFetchback(map[string]record.FetchKindTally{
		"actor":     served(t, actorFetches, time.Millisecond, int64(actorFetches), 1),
		"webfinger": served(t, 3, 10*time.Millisecond, 0, 0),
		"object":    served(t, 4, 100*time.Microsecond, 4, 0),
	}, map[string]int64{"notes": 3, "likes": 1}, map[string]int64{"Create": 3, "Like": 1}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r.SetFetchback(fb)
	return recordtest.RoundTrip(t, r)
}

// TestFetchbackSection: the totals, unsigned counts and amplification of
// one record's section, read back from its JSON.
func TestFetchbackSection(t *testing.T) {
	fb := fetchRecord(t, "", 20).Fetchback
	if fb == nil {
		t.Fatal("no fetchback section after a round trip")
	}
	if tot := fb.Total; tot.Fetches != 27 || tot.Signed != 24 || tot.Unsigned != 3 || tot.AfterEnd != 1 || tot.Latency.Count != 27 || tot.Status["2xx"] != 27 {
		t.Errorf("total %+v", tot)
	}
	if k := fb.Kinds["webfinger"]; k.Unsigned != 3 || k.Latency.Max < 29_900 || k.Latency.Max > 30_100 {
		t.Errorf("webfinger %+v", k)
	}
	want := []record.Amplification{
		{Type: "Create", Accepted: 100, Fetches: 3, PerActivity: 0.03}, // the note fetches
		{Type: "Like", Accepted: 40, Fetches: 1, PerActivity: 0.025},   // the refused Likes are not delivered
		{Type: record.FetchAll, Accepted: 140, Fetches: 27, PerActivity: 27.0 / 140},
	}
	if len(fb.Amplification) != len(want) {
		t.Fatalf("amplification %+v", fb.Amplification)
	}
	for i, w := range want {
		if g := fb.Amplification[i]; g != w {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestFetchbackMergesExactly: two shards' sections add up, and the merged
// latency is that of one histogram of every request.
func TestFetchbackMergesExactly(t *testing.T) {
	a, b := fetchRecord(t, "1/2", 20), fetchRecord(t, "2/2", 30)
	m, err := record.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	fb := m.Fetchback
	if fb == nil || fb.Windows != 2 || fb.Kinds["actor"].Fetches != 50 || fb.Total.Fetches != 27+37 || fb.Objects["notes"] != 6 || fb.Credits["Create"] != 6 {
		t.Fatalf("merged %+v", fb)
	}
	one := histgeom.New()
	for _, n := range []int{20, 30} {
		for i := 1; i <= n; i++ {
			histgeom.Record(one, time.Duration(i)*time.Millisecond)
		}
	}
	if got, want := fb.Kinds["actor"].Latency.Quantiles, record.Summarize(one); got != want {
		t.Errorf("merged actor latency %+v, want %+v", got, want)
	}
	if all := fb.Amplification[len(fb.Amplification)-1]; all.Accepted != 280 || all.Fetches != 64 {
		t.Errorf("merged amplification %+v", all)
	}
	// A record without the section adds nothing.
	plain := fetchRecord(t, "", 1)
	plain.Fetchback = nil
	if m, err := record.Merge(plain); err != nil || m.Fetchback != nil {
		t.Errorf("merging records without a section: %+v %v", m.Fetchback, err)
	}
}

// TestFetchbackCredits: each type's amplification row has the fetches
// the crowd credited to it, whatever other types the run has; credits of a
// type the run did not send (its objects came from an earlier run) are in
// the "all" row only.
func TestFetchbackCredits(t *testing.T) {
	for _, c := range []struct {
		name    string
		types   []string
		credits map[string]int64
		want    map[string]int64 // fetches by amplification row
	}{
		// A thread run: the parents' fetches are the Replies', none the Creates'.
		{"thread", []string{"Create", "Reply"}, map[string]int64{"Reply": 6},
			map[string]int64{"Create": 0, "Reply": 6, record.FetchAll: 9}},
		// Boosts beside Creates: the unseen notes are the Announces'.
		{"boosts", []string{"Announce", "Create"}, map[string]int64{"Announce": 4, "Create": 1},
			map[string]int64{"Announce": 4, "Create": 1, record.FetchAll: 9}},
		// Media: every download is the media notes'.
		{"media", []string{"Create", "Media"}, map[string]int64{"Media": 7},
			map[string]int64{"Create": 0, "Media": 7, record.FetchAll: 9}},
		// Deletes and boosts: the gone notes and accounts are the Deletes'.
		{"deletes", []string{"Announce", "Delete"}, map[string]int64{"Delete": 5, "Announce": 2},
			map[string]int64{"Announce": 2, "Delete": 5, record.FetchAll: 9}},
		// A note of an earlier run's Create, fetched in a Like run: "all" only.
		{"another run's", []string{"Like"}, map[string]int64{"Create": 3},
			map[string]int64{"Like": 0, record.FetchAll: 9}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := func(int) time.Duration { return time.Millisecond }
			stats := map[string]*record.Stats{}
			for _, typ := range c.types {
				stats[typ] = recordtest.Sends(10, ms, recordtest.Always(record.Class202))
			}
			res := recordtest.Run(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 5*time.Second, stats)
			r := recordtest.MustRecord(t, res, record.Settings{Arrivals: "constant"})
			fb, err := record.NewFetchback(map[string]record.FetchKindTally{
				"object": served(t, 7, time.Millisecond, 7, 0),
				"actor":  served(t, 2, time.Millisecond, 2, 0),
			}, map[string]int64{"notes": 7}, c.credits, 3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			r.SetFetchback(fb)
			fb = recordtest.RoundTrip(t, r).Fetchback
			got := map[string]int64{}
			for _, a := range fb.Amplification {
				got[a.Type] = a.Fetches
			}
			if len(got) != len(c.want) {
				t.Errorf("amplification %+v, want %v", fb.Amplification, c.want)
			}
			for typ, n := range c.want {
				if got[typ] != n {
					t.Errorf("%s: %d fetches, want %d (%+v)", typ, got[typ], n, fb.Amplification)
				}
			}
		})
	}
}
