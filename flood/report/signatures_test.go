package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// TestSignaturesAreShownEverywhere: the scheme a run signed with and how
// many sends fell back are in every rendering of its record, survive the
// JSON, and add up when records merge.
func TestSignaturesAreShownEverywhere(t *testing.T) {
	mk := func(shard string, s *record.Signatures) *record.Record {
		res := recordtest.Run(t0, 5*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(100, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))})
		r := recordtest.MustRecord(t, res, record.Settings{Arrivals: "constant", Mix: "create=1", Shard: shard})
		r.Signatures = s
		return recordtest.RoundTrip(t, r)
	}
	sig := func(fell int64) *record.Signatures {
		s := &record.Signatures{Scheme: "both", FirstRFC9421: fell, FirstCavage: 100 - fell, FellBack: fell, SecondAccepted: fell,
			Resigned: fell, ResignSeconds: float64(fell) / 1000, CavageFirstHosts: 1}
		s.AddTrigger(401, fell)
		return s
	}
	r := mk("", sig(7))
	var table, md, html bytes.Buffer
	for _, err := range []error{WriteTable(&table, r), WriteMarkdown(&md, r, "x.json"), WriteHTML(&html, r)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	const want = "signature both: first attempts 7 rfc9421, 93 cavage; fell back to cavage 7, second attempts accepted 7 (after 401×7); 1 cavage-first hosts; 7 signed at send time (1.0 ms each)"
	for name, c := range map[string]struct{ out, want string }{
		"table": {table.String(), want},
		"html":  {html.String(), want},
		// A paragraph of its own, capitalised, the word said once.
		"markdown": {md.String(), "\nS" + want[1:] + ".\n"},
	} {
		if !strings.Contains(c.out, c.want) || strings.Contains(c.out, "ignatures: signature") {
			t.Errorf("%s lacks %q, said once:\n%s", name, c.want, c.out)
		}
	}
	m, err := record.Merge(mk("1/2", sig(7)), mk("2/2", sig(3)))
	if err != nil {
		t.Fatal(err)
	}
	if s := m.Signatures; s == nil || s.FellBack != 10 || s.FirstCavage != 190 || s.Triggers["401"] != 10 || s.CavageFirstHosts != 2 || s.Scheme != "both" {
		t.Errorf("merged signatures %+v", s)
	}
	if s := sig(7).Sub(*sig(3)); s.FellBack != 4 || s.Triggers["401"] != 4 || s.FirstRFC9421 != 4 || s.FirstCavage != -4 {
		t.Errorf("a rung's signatures %+v", s)
	}
	if plain := mk("", nil); plain.Signatures != nil {
		t.Errorf("a record without the section reads back with one: %+v", plain.Signatures)
	}
}
