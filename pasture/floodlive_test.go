package pasture

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/fetchkind"
)

// exposition is a registry's families in the delimited protobuf format,
// as a flood pushes them: one counter named name with the run's labels.
func exposition(t *testing.T, name string, run adminapi.FloodRun, v float64) []byte {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: "test",
		ConstLabels: prometheus.Labels{"label": run.Label, "scenario": run.Scenario, "seed": run.Seed, "shard": run.Shard}})
	c.Add(v)
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestFloodLivePushes: pushes of two runs reach /metrics (with their run
// labels, beside the serve's own series) and /api/flood/live (their
// ticks); a push that is not a FloodLive, or whose metrics are not
// crowd_flood_ families, is 400 and changes nothing.
func TestFloodLivePushes(t *testing.T) {
	p := testPasture(t, Config{Version: "test"})
	do := func(method, path, body string) *http.Response {
		req := httptest.NewRequest(method, "http://localhost:9180"+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		p.admin.ServeHTTP(rec, req)
		return rec.Result()
	}
	push := func(run adminapi.FloodRun, elapsed float64, metrics []byte) string {
		b, _ := json.Marshal(adminapi.FloodLive{FloodState: adminapi.FloodState{Run: run, Elapsed: elapsed},
			Tick: adminapi.FloodTick{Elapsed: elapsed, Sent: 7}, Metrics: metrics})
		return string(b)
	}
	a := adminapi.FloodRun{Label: "a", Seed: "1"}
	b := adminapi.FloodRun{Label: "b", Seed: "2", Shard: "1/2"}
	for _, c := range []struct {
		name, body string
		status     int
	}{
		// Two runs, the first twice: both are kept, the first with two ticks.
		{"run a", push(a, 1, exposition(t, "crowd_flood_sent_total", a, 5)), 200},
		{"run a again", push(a, 2, exposition(t, "crowd_flood_sent_total", a, 9)), 200},
		{"run b", push(b, 1, exposition(t, "crowd_flood_sent_total", b, 3)), 200},
		// A push may not pose as the serve's own metrics.
		{"foreign metric", push(a, 3, exposition(t, "crowd_http_requests_total", a, 1)), 400},
		{"not an exposition", push(a, 3, []byte("crowd_flood_sent_total 1\n")), 400},
		{"not JSON", "{", 400},
		// An empty push names no run: not listed as a blank one.
		{"empty", "{}", 400},
	} {
		resp := do("POST", "/api/flood/live", c.body)
		if resp.StatusCode != c.status {
			body, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, body, c.status)
		}
	}
	body, _ := io.ReadAll(do("GET", "/metrics", "").Body)
	for _, want := range []string{
		`crowd_flood_sent_total{label="a",scenario="",seed="1",shard=""} 9`,
		`crowd_flood_sent_total{label="b",scenario="",seed="2",shard="1/2"} 3`,
		"go_goroutines", // the serve's own are still there
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
	var runs []adminapi.FloodLiveRun
	if err := json.NewDecoder(do("GET", "/api/flood/live", "").Body).Decode(&runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Run != b || runs[1].Run != a || len(runs[1].Ticks) != 2 || runs[1].Elapsed != 2 {
		t.Fatalf("/api/flood/live: %+v", runs)
	}
}

// TestAdminPageHasTheLivePanel: the page as served carries the live
// panel in place of its marker, and its policy lets the panel's own
// script run (its hash is in script-src) and nothing else load.
func TestAdminPageHasTheLivePanel(t *testing.T) {
	p := testPasture(t, Config{Version: "test"})
	rec := httptest.NewRecorder()
	p.admin.ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost:9180/", nil))
	body := rec.Body.String()
	if !strings.Contains(body, `id="flood-live"`) || strings.Contains(body, livePanelMarker) {
		t.Fatal("the served page has no live panel, or still its marker")
	}
	for _, h := range inlineHashes(livePanelHTML, "script") {
		if !strings.Contains(rec.Header().Get("Content-Security-Policy"), h) {
			t.Errorf("the policy lacks the live panel's script %s", h)
		}
	}
	// The SVG namespace is a name, never fetched.
	if rest := strings.ReplaceAll(string(livePanelHTML), `"http://www.w3.org/2000/svg"`, ""); strings.Contains(rest, "http://") || strings.Contains(rest, "https://") {
		t.Error("the live panel names a URL: it must load nothing from elsewhere")
	}
}

// TestFloodLiveFetchback: a run that names its fetch-back window gets the
// serve's own counts of it in /api/flood/live: so far while it is open,
// the final ones (closed) after it closed, kept over later pushes; a run
// that names no window has none.
func TestFloodLiveFetchback(t *testing.T) {
	p := testPasture(t, Config{Version: "test"})
	win, err := p.Fetchbacks().Open("live")
	if err != nil {
		t.Fatal(err)
	}
	origins := p.Fetchbacks().Middleware(http.NotFoundHandler())
	fetch := func(path string) {
		origins.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "https://flood1.test"+path, nil))
	}
	run := adminapi.FloodRun{Label: "live", Seed: "1"}
	push := func(elapsed float64, window string) {
		b, _ := json.Marshal(adminapi.FloodLive{FloodState: adminapi.FloodState{Run: run, Elapsed: elapsed, FetchbackWindow: window},
			Metrics: exposition(t, "crowd_flood_sent_total", run, elapsed)})
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://localhost:9180/api/flood/live", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		p.admin.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("push: %d %s", rec.Code, rec.Body)
		}
	}
	shown := func() *adminapi.FloodFetchback {
		rec := httptest.NewRecorder()
		p.admin.ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost:9180/api/flood/live", nil))
		var runs []adminapi.FloodLiveRun
		if err := json.Unmarshal(rec.Body.Bytes(), &runs); err != nil || len(runs) != 1 {
			t.Fatalf("/api/flood/live: %v %s", err, rec.Body)
		}
		return runs[0].Fetchback
	}

	push(1, win.ID)
	fetch("/.well-known/webfinger?resource=acct:a@flood1.test")
	fetch("/.well-known/nodeinfo")
	if fb := shown(); fb == nil || fb.Fetches != 2 || fb.Closed || fb.Ended || fb.Kinds[fetchkind.WebFinger] != 1 || fb.Kinds[fetchkind.NodeInfo] != 1 {
		t.Fatalf("while open: %+v", fb)
	}
	p.Fetchbacks().End(win.ID)
	fetch("/.well-known/nodeinfo")
	final, ok := p.Fetchbacks().Close(win.ID)
	if !ok {
		t.Fatal("the window did not close")
	}
	fetch("/.well-known/nodeinfo") // after the close: counted nowhere
	push(2, win.ID)                // the flood's final push comes after the close
	want := adminapi.NewFloodFetchback(final, true)
	if fb := shown(); fb == nil || !fb.Closed || !fb.Ended || fb.Fetches != 3 || fb.AfterEnd != 1 || fb.Fetches != want.Fetches {
		t.Fatalf("after the close: %+v, the window's final tally %+v", fb, want)
	}
	push(1, "") // the same labels again, counting nothing
	if fb := shown(); fb != nil {
		t.Fatalf("a run without a window shows %+v", fb)
	}
}
