package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"

	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// TestDeviationsAreShownEverywhere: what a run changed from what it was
// asked, and its seed, are in every rendering of its record, and merge.
func TestDeviationsAreShownEverywhere(t *testing.T) {
	mk := func(shard string, dev record.Deviations) *record.Record {
		res := recordtest.Run(t0, 5*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(100, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))})
		r := recordtest.MustRecord(t, res, record.Settings{Arrivals: "constant", Mix: "create=1,like=1,follow=1", Shard: shard})
		r.Parts[0].Seed = 42
		r.Deviations = dev
		return recordtest.RoundTrip(t, r)
	}
	r := mk("", record.Deviations{FollowsDiverted: 3, PersonasWithoutPosts: []string{"b@sut.test", "a@sut.test"}})
	var table, md, html bytes.Buffer
	for _, err := range []error{WriteTable(&table, r), WriteMarkdown(&md, r, "x.json"), WriteHTML(&html, r)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		where, text, want string
	}{
		{"table", table.String(), "seed 42 (--seed replays the draws)"},
		{"table", table.String(), "CHANGED: 3 Follows were sent as Creates"},
		{"table", table.String(), "CHANGED: 2 personas had no post to like (b@sut.test, a@sut.test)"},
		{"runs.md row", r.MarkdownRow("x.json"), "(changed: 3 Follows sent as Creates, 2 personas without posts)"},
		{"markdown", md.String(), "**Changed from what was asked**: 3 Follows were sent as Creates"},
		{"html", html.String(), `id="changed"`},
		{"html", html.String(), "<li>3 Follows were sent as Creates"},
		{"html", html.String(), "seed 42"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s lacks %q:\n%s", c.where, c.want, c.text)
		}
	}
	// A run that did what it was asked says nothing of the kind.
	var plain bytes.Buffer
	if err := WriteTable(&plain, mk("", record.Deviations{})); err != nil || strings.Contains(plain.String(), "CHANGED") {
		t.Errorf("a run without deviations: %v\n%s", err, plain.String())
	}
	// Shards merge: the diverted Follows add up, the personas unite.
	m, err := record.Merge(mk("1/2", record.Deviations{FollowsDiverted: 1, PersonasWithoutPosts: []string{"a@sut.test"}}),
		mk("2/2", record.Deviations{FollowsDiverted: 2, PersonasWithoutPosts: []string{"c@sut.test", "a@sut.test"}}))
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Deviations; d.FollowsDiverted != 3 || strings.Join(d.PersonasWithoutPosts, " ") != "a@sut.test c@sut.test" {
		t.Errorf("merged deviations %+v", d)
	}
}

// TestMergedSeedsNameTheirGenerator: a merged record's seeds say which
// generator each replays (a seed replays one generator's draws, not the
// fleet's); one generator's seed stands alone.
func TestMergedSeedsNameTheirGenerator(t *testing.T) {
	mk := func(shard string, seed uint64) *record.Record {
		res := recordtest.Run(t0, 5*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(100, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))})
		r := recordtest.MustRecord(t, res, record.Settings{Arrivals: "constant", Mix: "create=1", Shard: shard})
		r.Parts[0].Seed = seed
		return recordtest.RoundTrip(t, r)
	}
	m, err := record.Merge(mk("0/2", 42), mk("1/2", 43))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		r    *record.Record
		want string // the seed line
	}{
		// Two shards: each seed named by its shard.
		{"merged", m, "seeds: shard 0/2 42, shard 1/2 43 (each generator's --seed replays its own draws)\n"},
		// One generator: its seed alone.
		{"one generator", mk("", 42), "seed 42 (--seed replays the draws)\n"},
	} {
		var b bytes.Buffer
		if err := WriteTable(&b, c.r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: the table lacks %q:\n%s", c.name, c.want, b.String())
		}
	}
}

// TestRungsSkippedAreShown: a ladder's shoulder rung says which rungs were
// not run, in the table, the row and the report, and shards unite them.
func TestRungsSkippedAreShown(t *testing.T) {
	mk := func(shard string, skipped ...float64) *record.Record {
		res := recordtest.Run(t0, 5*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(10, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))})
		r := recordtest.MustRecord(t, res, record.Settings{Arrivals: "constant", Mix: "create=1", Shard: shard})
		r.Deviations.RungsSkipped = skipped
		return recordtest.RoundTrip(t, r)
	}
	r := mk("", 600, 1000)
	var table, md, html bytes.Buffer
	for _, err := range []error{WriteTable(&table, r), WriteMarkdown(&md, r, "x.json"), WriteHTML(&html, r)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	const line = "2 rungs were not run (600, 1000/s): the ladder stopped at its shoulder"
	for _, c := range []struct{ where, text, want string }{
		{"table", table.String(), "CHANGED: " + line},
		{"runs.md row", r.MarkdownRow("x.json"), "(changed: 2 rungs skipped)"},
		{"markdown", md.String(), line},
		{"html", html.String(), line},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s lacks %q:\n%s", c.where, c.want, c.text)
		}
	}
	m, err := record.Merge(mk("1/2", 600), mk("2/2", 1000, 600))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Deviations.RungsSkipped; len(got) != 2 || got[0] != 600 || got[1] != 1000 {
		t.Errorf("merged rungs skipped %v, want [600 1000]", got)
	}
}
