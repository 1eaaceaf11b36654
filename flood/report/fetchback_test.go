package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
	"github.com/crowdfed/crowd/internal/histgeom"
)

// TestFetchbackIsShownEverywhere: the fetch-back section is in the table,
// the Markdown and the HTML page: every kind, the total, the after-end and
// signed counts and the amplification rows; a record without it shows none.
func TestFetchbackIsShownEverywhere(t *testing.T) {
	res := recordtest.Run(t0, 5*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(100, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))})
	r := recordtest.MustRecord(t, res, record.Settings{Arrivals: "constant", Mix: "create=1"})
	h := histgeom.New()
	histgeom.Record(h, 1500*time.Microsecond)
	histgeom.Record(h, 2500*time.Microsecond)
	enc, _ := histgeom.Encode(h)
	fb, err := record.NewFetchback(map[string]record.FetchKindTally{
		"actor":     {Fetches: 2, Signed: 1, AfterEnd: 1, Status: map[string]int64{"2xx": 2}, LatencyHDR: enc},
		"webfinger": {Fetches: 2, Status: map[string]int64{"2xx": 1, "4xx": 1}, LatencyHDR: enc},
		"leaver":    {Fetches: 2, Signed: 2, Status: map[string]int64{"2xx": 1, "410": 1}, LatencyHDR: enc},
	}, nil, nil, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	plain := recordtest.RoundTrip(t, r)
	r.SetFetchback(fb)
	r = recordtest.RoundTrip(t, r)
	var table, md, html bytes.Buffer
	for _, err := range []error{WriteTable(&table, r), WriteMarkdown(&md, r, "x.json"), WriteHTML(&html, r)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, doc := range map[string]string{"table": table.String(), "markdown": md.String(), "html": html.String()} {
		for _, want := range []string{"fetch amplification", "webfinger", "actor", "2xx 1, 4xx 1", "0.060", "3s after the last answer",
			"leaver: 2 fetches of accounts the run deleted or whose notes it boosted (1 answered 410"} {
			if !strings.Contains(doc, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, doc)
			}
		}
	}
	if !regexp.MustCompile(`(?m)^ +actor +2 +1 +1 +1 +1\.50ms`).MatchString(table.String()) {
		t.Errorf("the table's actor row:\n%s", table.String())
	}
	var none bytes.Buffer
	if err := WriteTable(&none, plain); err != nil || strings.Contains(none.String(), "fetched back") {
		t.Errorf("a record without the section: %v\n%s", err, none.String())
	}
}
