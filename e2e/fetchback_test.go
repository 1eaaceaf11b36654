package e2e

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// fetchbackRecord is the part of a flood record's fetchback section
// (flood/record/SCHEMA.md) this test reads.
type fetchbackRecord struct {
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Partial   bool      `json:"partial"`
	Fetchback *struct {
		GraceSeconds float64 `json:"grace_s"`
		Kinds        map[string]struct {
			Fetches, AfterEnd, Signed, Unsigned int64
			Status                              map[string]int64 `json:"status"`
			Latency                             struct {
				Count int64 `json:"count"`
			} `json:"latency"`
		} `json:"kinds"`
		Objects       map[string]int64 `json:"objects"`
		Amplification []struct {
			Type        string  `json:"type"`
			Accepted    int64   `json:"accepted"`
			Fetches     int64   `json:"fetches"`
			PerActivity float64 `json:"per_activity"`
		} `json:"amplification"`
	} `json:"fetchback"`
}

// sutFetch is one request the Fedify SUT logged making (GET /fetches).
type sutFetch struct {
	At     time.Time `json:"at"`
	Method string    `json:"method"`
	URL    string    `json:"url"`
	Signed bool      `json:"signed"`
	Status *int      `json:"status"`
	Error  *string   `json:"error"`
}

// sutFetchKind is the kind of a URL the SUT fetched, read from the URL as
// the SUT logged it, independently of the crowd's own classifier: a key id
// actor#main-key is the actor's document on the wire.
func sutFetchKind(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("the SUT logged a fetch of %q: %v", raw, err)
	}
	seg := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case u.Path == "/.well-known/webfinger":
		return "webfinger"
	case strings.HasPrefix(u.Path, "/.well-known/host-meta"):
		return "host-meta"
	case u.Path == "/.well-known/nodeinfo" || seg[0] == "nodeinfo":
		return "nodeinfo"
	case seg[0] == "users" && len(seg) == 2 && strings.HasPrefix(seg[1], "leaver_"):
		return "leaver" // an account made to be deleted
	case seg[0] == "users" && len(seg) == 2:
		return "actor"
	case seg[0] == "users" && len(seg) == 3 && slices.Contains([]string{"outbox", "followers", "following"}, seg[2]):
		return "collection"
	case seg[0] == "users" && len(seg) >= 3 && seg[2] == "media", seg[0] == "media":
		return "media"
	case seg[0] == "users" && len(seg) == 4:
		return "object"
	}
	return "other"
}

// sutStatusClass is the class of the answer Fedify logged, as the record
// names them: 404 and 410 (a deleted actor's or object's Tombstone) apart.
func sutStatusClass(e sutFetch) string {
	switch {
	case e.Status == nil:
		return "no answer" // the crowd counts only what it answered: a mismatch
	case *e.Status == 404 || *e.Status == 410:
		return fmt.Sprint(*e.Status)
	}
	return fmt.Sprintf("%dxx", *e.Status/100)
}

// fetchbackRow is one verb's run against the Fedify SUT: the flood's mix,
// and what its fetch-back section must show beyond matching the SUT's log.
type fetchbackRow struct {
	name string
	mix  string
	args []string // more flags of the flood
	// check looks at the record's section and the SUT's fetches (GETs of
	// crowd origins within the window), by kind.
	check func(t *testing.T, rec fetchbackRecord, sut map[string][]sutFetch)
}

// amplificationOf is the record's amplification row of typ (zero if none).
func amplificationOf(rec fetchbackRecord, typ string) (a struct {
	Type        string  `json:"type"`
	Accepted    int64   `json:"accepted"`
	Fetches     int64   `json:"fetches"`
	PerActivity float64 `json:"per_activity"`
}) {
	for _, row := range rec.Fetchback.Amplification {
		if row.Type == typ {
			return row
		}
	}
	return a
}

// countStatus counts the fetches answered status.
func countStatus(fs []sutFetch, status int) int64 {
	n := int64(0)
	for _, e := range fs {
		if e.Status != nil && *e.Status == status {
			n++
		}
	}
	return n
}

// TestFetchbackMatchesFedify floods the Fedify SUT with one verb at a time
// and compares the record's fetchback section with what Fedify logged
// fetching from the crowd's origins while the run went on: the same
// requests per kind, the same signed ones, and each row's own check.
// Fedify keeps the keys it fetched, so each row starts with a Fedify that
// forgot them (a fresh one).
func TestFetchbackMatchesFedify(t *testing.T) {
	t.Parallel()
	rows := []fetchbackRow{
		// A Create from a sender Fedify never saw: it fetches the sender's
		// key (its actor document), signed by its instance actor.
		{name: "create", mix: "create=1", check: func(t *testing.T, rec fetchbackRecord, sut map[string][]sutFetch) {
			if len(sut["actor"]) == 0 {
				t.Errorf("Fedify fetched no actor for Creates from strangers")
			}
		}},
		// A Like of a persona's post: the same key fetch, nothing of the post.
		{name: "like", mix: "like=1", check: func(t *testing.T, rec fetchbackRecord, sut map[string][]sutFetch) {
			if len(sut["actor"]) == 0 || len(sut["object"]) != 0 {
				t.Errorf("Likes: Fedify fetched actors %d, objects %d", len(sut["actor"]), len(sut["object"]))
			}
		}},
		// A Follow: the key, then the follower's actor to answer it (Accept).
		{name: "follow", mix: "follow=1", check: func(t *testing.T, rec fetchbackRecord, sut map[string][]sutFetch) {
			if len(sut["actor"]) == 0 {
				t.Errorf("Follows: Fedify fetched no actor")
			}
		}},
		// Boosts, half of them of crowd notes Fedify never saw: it fetches
		// each such note (and meets its author).
		{name: "announce", mix: "announce=1", check: func(t *testing.T, rec fetchbackRecord, sut map[string][]sutFetch) {
			if len(sut["object"]) == 0 {
				t.Errorf("Announces: Fedify fetched no boosted note")
			}
		}},
		// Replies, half of them to a crowd note Fedify never saw: it fetches
		// the parent, and the record credits every such fetch to Reply.
		{name: "reply", mix: "reply=1", check: func(t *testing.T, rec fetchbackRecord, sut map[string][]sutFetch) {
			amp := amplificationOf(rec, "Reply")
			if len(sut["object"]) == 0 || amp.Fetches != int64(len(sut["object"])) {
				t.Errorf("replies: Fedify fetched %d parents, the record credits Reply with %d", len(sut["object"]), amp.Fetches)
			}
		}},
		// Replies and Deletes (JIT, so a Delete finds the notes sent a
		// moment before): Fedify fetches each Delete's object while it
		// handles it (a note, or a leaver it never met: unverifiable once
		// gone, answered 202 unverified as Mastodon does) and sees 410 from
		// every one, since the crowd deletes as it drafts; the record counts
		// the leavers' fetches apart (kind leaver), credits every 410 to
		// Delete and the parents' fetches to Reply, and no world actor is
		// counted among the leavers.
		{name: "delete", mix: "reply=1,delete=1", args: []string{"--signing", "jit"}, check: func(t *testing.T, rec fetchbackRecord, sut map[string][]sutFetch) {
			leavers, del, reply := rec.Fetchback.Kinds["leaver"], amplificationOf(rec, "Delete"), amplificationOf(rec, "Reply")
			gone := countStatus(sut["leaver"], 410) + countStatus(sut["object"], 410)
			if leavers.Fetches == 0 || countStatus(sut["leaver"], 410) != int64(len(sut["leaver"])) || del.Fetches != gone || del.Fetches < del.Accepted {
				t.Errorf("Fedify fetched %d deleted accounts (%d answered 410) and %d gone notes; the record credits Delete with %d for %d Deletes",
					len(sut["leaver"]), countStatus(sut["leaver"], 410), countStatus(sut["object"], 410), del.Fetches, del.Accepted)
			}
			if parents := int64(len(sut["object"])) - countStatus(sut["object"], 410); reply.Fetches != parents {
				t.Errorf("Fedify fetched %d parents, the record credits Reply with %d", parents, reply.Fetches)
			}
			for _, e := range sut["actor"] {
				if strings.Contains(e.URL, "/users/leaver_") {
					t.Errorf("a leaver counted as a world actor: %s", e.URL)
				}
			}
			t.Logf("Fedify fetched %d deleted accounts (status %v), %d objects (%d gone), %d other actors",
				leavers.Fetches, leavers.Status, len(sut["object"]), countStatus(sut["object"], 410), len(sut["actor"]))
		}},
		// Notes with an image: Fedify downloads each.
		// Every attachment has a URL of its own, so every one is downloaded:
		// as many downloads as images sent (one a note), all credited to Media.
		{name: "media", mix: "media=1", check: func(t *testing.T, rec fetchbackRecord, sut map[string][]sutFetch) {
			amp := amplificationOf(rec, "Media")
			urls := map[string]bool{}
			for _, e := range sut["media"] {
				urls[e.URL] = true
			}
			if len(sut["media"]) == 0 || int64(len(urls)) != amp.Accepted || int64(len(sut["media"])) != amp.Accepted || amp.Fetches != amp.Accepted {
				t.Errorf("media: %d images sent (one a note), Fedify downloaded %d of %d distinct URLs, the record credits Media with %d",
					amp.Accepted, len(sut["media"]), len(urls), amp.Fetches)
			}
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel() // each row has a crowd and a Fedify of its own, in a namespace of its own
			f := startFederation(t, 3)
			f.call(t, "POST", fedifyCtl+"/stats/reset", map[string]any{}, nil)
			rec := fetchbackFlood(t, f, row)
			var logged []sutFetch
			f.call(t, "GET", fedifyCtl+"/fetches", nil, &logged)
			grace := time.Duration(rec.Fetchback.GraceSeconds * float64(time.Second))
			sut := map[string][]sutFetch{}
			for _, e := range logged {
				// GETs of the crowd's origins from the run's start to the
				// window's close: before it are the flood's own look-ups of
				// the personas (Fedify fetches nothing then), after it nothing
				// the run caused is left.
				if e.Method != "GET" || !strings.Contains(e.URL, ".test/") || strings.Contains(e.URL, "//sut.test/") ||
					e.At.Before(rec.Start.Add(-time.Second)) || e.At.After(rec.End.Add(grace)) {
					continue
				}
				sut[sutFetchKind(t, e.URL)] = append(sut[sutFetchKind(t, e.URL)], e)
			}
			compareFetchback(t, rec, sut)
			row.check(t, rec, sut)
		})
	}
}

// fetchbackFlood floods the Fedify SUT with row's mix for 5 s attached to
// the running crowd and returns its record.
func fetchbackFlood(t *testing.T, f *federation, row fetchbackRow) fetchbackRecord {
	t.Helper()
	var rec fetchbackRecord
	raw, output := f.floodInto(t, "fetchback-"+row.name, &rec, append([]string{"--rate", "10", "--seconds", "5", "--timeout", "60s",
		"--mix", row.mix, "--fetchback-grace", "3s"}, row.args...)...)
	if !strings.Contains(string(output), "fetched back by the SUT") {
		t.Errorf("the table lacks the fetch-back section:\n%s", output)
	}
	if rec.Fetchback == nil || rec.Partial {
		t.Fatalf("record without a fetchback section, or partial:\n%s\n%s", raw, output)
	}
	return rec
}

// compareFetchback: per kind, the crowd counted exactly the GETs Fedify
// logged making, signed as Fedify signed them, each with its latency; and
// the amplification's last row divides all of them by the 2xx sends.
func compareFetchback(t *testing.T, rec fetchbackRecord, sut map[string][]sutFetch) {
	t.Helper()
	fb := rec.Fetchback
	kinds := map[string]bool{}
	for k := range fb.Kinds {
		kinds[k] = true
	}
	for k := range sut {
		kinds[k] = true
	}
	var total int64
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		got, logged := fb.Kinds[k], sut[k]
		signed := int64(0)
		status := map[string]int64{}
		for _, e := range logged {
			if e.Signed {
				signed++
			}
			status[sutStatusClass(e)]++
		}
		if !maps.Equal(status, got.Status) && len(logged) > 0 {
			t.Errorf("%s: the crowd answered %v, Fedify logged getting %v", k, got.Status, status)
		}
		t.Logf("%s: crowd counted %d (signed %d, after end %d, status %v), Fedify logged %d (signed %d)",
			k, got.Fetches, got.Signed, got.AfterEnd, got.Status, len(logged), signed)
		if got.Fetches != int64(len(logged)) || got.Signed != signed || got.Latency.Count != got.Fetches {
			t.Errorf("%s: the crowd counted %d fetches (%d signed, %d timed), Fedify logged %d (%d signed)",
				k, got.Fetches, got.Signed, got.Latency.Count, len(logged), signed)
		}
		total += got.Fetches
	}
	for _, a := range fb.Amplification {
		t.Logf("amplification %s: %d fetches / %d 2xx sends = %.3f", a.Type, a.Fetches, a.Accepted, a.PerActivity)
	}
	all := fb.Amplification[len(fb.Amplification)-1]
	if all.Type != "all" || all.Fetches != total || all.Accepted == 0 {
		t.Errorf("amplification's last row %+v, want all of %d fetches", all, total)
	}
}
