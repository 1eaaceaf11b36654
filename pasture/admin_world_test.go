package pasture

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
)

// /api/world pages a large world: a page lists its origins with their
// actors and the summary counts the whole; a bad query is 400. The paging
// is over origins, so 10 000 of them with 10 actors each page as 100 each
// would, at a tenth of the JSON to write and read.
func TestAdminWorldPages(t *testing.T) {
	const perOrigin = 10
	w, err := actors.Open(actors.Config{Origins: 10000, Actors: perOrigin, Domain: "flood%d.test", StateDir: t.TempDir(),
		KeyPool: 2, EphemeralGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	p := testPasture(t, Config{Version: "test", World: w})
	get := func(query string) (*httptest.ResponseRecorder, adminapi.WorldInfo) {
		rec := httptest.NewRecorder()
		p.admin.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9180"+adminapi.RouteWorld.Path()+query, nil))
		var info adminapi.WorldInfo
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil {
				t.Fatal(err)
			}
		}
		return rec, info
	}
	for _, c := range []struct {
		query       string
		first, n    int // the page's first origin index and size
		next        int
		wantSummary adminapi.WorldSummary
	}{
		{"", 1, adminapi.DefaultWorldPage, 100, adminapi.WorldSummary{Offset: 0}},       // the first page by default
		{"?offset=9998&limit=5", 9999, 2, 0, adminapi.WorldSummary{Offset: 9998}},       // the last page is short and has no next
		{"?offset=200&limit=1000", 201, 1000, 1200, adminapi.WorldSummary{Offset: 200}}, // the largest page
		{"?offset=20000", 0, 0, 0, adminapi.WorldSummary{Offset: 10000}},                // past the end: empty
	} {
		rec, info := get(c.query)
		if rec.Code != http.StatusOK || info.Summary == nil {
			t.Fatalf("%s: %d %s", c.query, rec.Code, rec.Body.String()[:min(200, rec.Body.Len())])
		}
		s := *info.Summary
		if s.Origins != 10000 || s.Served != 10000 || s.ActorsPerOrigin != perOrigin || s.Offset != c.wantSummary.Offset || s.Next != c.next {
			t.Errorf("%s: summary %+v", c.query, s)
		}
		if len(info.Origins) != c.n || c.n > 0 && (info.Origins[0].Index != c.first || len(info.Origins[0].Actors) != perOrigin) {
			t.Errorf("%s: %d origins, first %+v", c.query, len(info.Origins), info.Origins[:min(1, len(info.Origins))])
		}
	}
	for _, q := range []string{"?limit=1001", "?offset=-1", "?limit=x"} {
		if rec, _ := get(q); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "=") {
			t.Errorf("%s: %d %q, want 400 naming the parameter", q, rec.Code, rec.Body.String())
		}
	}
}
