package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/loopback"
)

// TestAdminPage opens the admin page of a real `crowd serve` in headless
// Chromium and checks what its JavaScript made of the admin API: the
// origins and actors, the follow that `crowd send` made, the activities
// with their verdicts (a rejected one coloured apart), an activity that
// arrives while the page is open (the EventSource), and the filter box.
// It also takes a screenshot, which must be a sound PNG of the window.
//
// Chromium is driven over the DevTools protocol (--remote-debugging-pipe)
// rather than with --dump-dom: the page keeps its EventSource open for
// ever, and --virtual-time-budget never runs out while a fetch is
// pending, while without it --dump-dom prints the DOM at the load event,
// before the page's own requests have come back.
func TestAdminPage(t *testing.T) {
	t.Parallel()
	RequireTools(t, "chromium")
	bin := BuildCrowd(t)
	admin, plain := loopback.Free(t), loopback.Free(t)
	StartProcess(t, exec.Command(bin, "serve", "--state", t.TempDir(), "--origins", "2", "--actors", "3",
		"--https", "", "--http", plain, "--dns", "", "--admin", admin, "--log-format", "json"),
		readyAdmin(admin))
	crowdCLI := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--admin", admin)...).CombinedOutput()
		if err != nil {
			t.Fatalf("crowd %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// A follow between two crowd actors, through the binary: Follow out and
	// in, then bob's Accept out and in.
	if out := crowdCLI("send", "--from", "alice@flood1.test", "--type", "Follow", "--to", "acct:bob@flood2.test"); !strings.Contains(out, "→ 202 Accepted") {
		t.Fatalf("crowd send: %s", out)
	}
	// A request the crowd rejects: an unsigned Like, over plain HTTP.
	req, _ := http.NewRequest(http.MethodPost, "http://"+plain+"/users/carol/inbox",
		strings.NewReader(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://sut.test/likes/1","type":"Like","actor":"https://sut.test/users/mallory","object":"https://flood1.test/users/carol"}`))
	req.Host = "flood1.test"
	req.Header.Set("Content-Type", "application/activity+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unsigned Like was answered %d, want 401", resp.StatusCode)
	}

	// The page as served holds none of this: whatever the browser shows
	// beyond it, the page's JavaScript fetched and rendered.
	resp, err = http.Get("http://" + admin + "/")
	if err != nil {
		t.Fatal(err)
	}
	static, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range []string{"flood1.test", "flood2.test", "alice@flood1", "Accept(Follow)", "mallory"} {
		if bytes.Contains(static, []byte(s)) {
			t.Fatalf("the static page already contains %q: the test could not tell that the JavaScript ran", s)
		}
	}

	browser := startChromium(t)
	page := browser.open(t, "http://"+admin+"/")
	page.waitUntil(t, `document.body.dataset.loaded === "yes" && document.body.dataset.state === "live" &&
		document.querySelectorAll("tr.act").length >= 5 && document.querySelectorAll("#follows .state-accepted").length >= 2`)

	// Live: an activity sent now reaches the open page through the stream.
	crowdCLI("send", "--from", "bob@flood2.test", "--type", "Create", "--to", "acct:alice@flood1.test")
	page.waitUntil(t, `[...document.querySelectorAll("tr.act td.type")].filter(td => td.textContent === "Create(Note)").length === 2`)

	var view struct {
		Status  string   `json:"status"`
		Counts  string   `json:"counts"`
		Origins []string `json:"origins"`
		Actors  []string `json:"actors"`
		Follows string   `json:"follows"`
		Rows    []struct {
			Class string `json:"class"`
			Text  string `json:"text"`
			Back  string `json:"back"`
		} `json:"rows"`
	}
	page.eval(t, `JSON.stringify({
		status: document.getElementById("status").textContent,
		counts: document.getElementById("counts").textContent,
		origins: [...document.querySelectorAll("#world h3")].map(e => e.textContent),
		actors: [...document.querySelectorAll("#world .actor")].map(e => e.title.split("\n")[0]),
		follows: document.getElementById("follows").innerText,
		rows: [...document.querySelectorAll("tr.act")].map(r => ({class: r.className, text: r.innerText.replace(/\s+/g, " "),
			back: getComputedStyle(r).backgroundColor})),
	})`, &view)

	if view.Status != "live" {
		t.Errorf("status %q, want live", view.Status)
	}
	if strings.Join(view.Origins, " ") != "flood1.test flood2.test" {
		t.Errorf("origins %q", view.Origins)
	}
	if len(view.Actors) != 6 || view.Actors[0] != "alice@flood1.test" || view.Actors[5] != "carol@flood2.test" {
		t.Errorf("actors %q", view.Actors)
	}
	for _, want := range []string{"origins 2", "actors 6", "problems 1"} {
		if !strings.Contains(view.Counts, want) {
			t.Errorf("counts %q lack %q", view.Counts, want)
		}
	}
	for _, want := range []string{"alice@flood1.test", "bob@flood2.test", "accepted"} {
		if !strings.Contains(view.Follows, want) {
			t.Errorf("follows %q lack %q", view.Follows, want)
		}
	}
	var rows []string
	backs := map[string]string{} // verdict class → background colour
	for _, r := range view.Rows {
		rows = append(rows, r.Class+" | "+r.Text)
		backs[strings.Fields(r.Class)[1]] = r.Back
	}
	all := strings.Join(rows, "\n")
	for _, want := range []string{
		"act v-sent | ", "out Follow alice@flood1.test → bob@flood2.test sent 202",
		"act v-accepted | ", "in Follow alice@flood1.test → bob@flood2.test accepted 202",
		"act v-delivered | ", "out Accept(Follow) bob@flood2.test → alice@flood1.test delivered 202",
		"in Accept(Follow) bob@flood2.test → alice@flood1.test accepted 202",
		"act v-rejected problem | ", "in Like mallory@sut.test → carol@flood1.test rejected 401",
		"in Create(Note) bob@flood2.test →",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the activity rows lack %q:\n%s", want, all)
		}
	}
	if backs["v-rejected"] == "" || backs["v-rejected"] == backs["v-accepted"] {
		t.Errorf("a rejected row is not coloured apart: %v", backs)
	}

	dom := page.evalString(t, `document.documentElement.outerHTML`)
	shot := page.screenshot(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "adminpage.html"), []byte(dom), 0o644)
	shotPath := filepath.Join(dir, "adminpage.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() < 800 || img.Bounds().Dy() < 600 {
		t.Errorf("screenshot %s (%d bytes): %v", shotPath, len(shot), err)
	}
	if !strings.Contains(dom, `<h3>flood2.test</h3>`) || !strings.Contains(dom, `data-seq="`) {
		t.Errorf("the DOM lacks the rendered world or rows; see %s", filepath.Join(dir, "adminpage.html"))
	}

	// The filter box: by type, then by actor.
	for _, c := range []struct {
		filter string
		rows   int
	}{
		{"Create", 2},                      // the Create, in and out
		{"mallory", 1},                     // the rejected Like, by its sender
		{"accept(follow) alice@flood1", 2}, // words combine: the Accept to alice, in and out
		{"", 7},                            // everything again
	} {
		n := page.evalString(t, fmt.Sprintf(`(() => { const f = document.getElementById("filter"); f.value = %q;
			f.dispatchEvent(new Event("input")); return String(document.querySelectorAll("tr.act").length); })()`, c.filter))
		if n != fmt.Sprint(c.rows) {
			t.Errorf("filter %q shows %s rows, want %d", c.filter, n, c.rows)
		}
	}

	// A row's detail shows the entry with its body as JSON, indented within
	// it: the log gives the body as a JSON value, not as a string.
	detail := page.evalString(t, `(() => { const r = [...document.querySelectorAll("tr.act")].find(r => r.innerText.includes("mallory"));
		r.click(); return r.nextElementSibling.innerText; })()`)
	if !strings.Contains(detail, `"body": {`) || !strings.Contains(detail, "\n    \"actor\": \"https://sut.test/users/mallory\"") {
		t.Errorf("the detail of the rejected Like shows\n%s", detail)
	}

	// The weather: clear at first; after `crowd weather set` (PUT /api/weather)
	// the page, reloaded, shows the spec and the origins per condition, each
	// with what the weather answered for it (a fetch of the down origin's
	// actor, reset).
	if w := page.evalString(t, `document.getElementById("weather").innerText`); !strings.Contains(w, "clear") || !strings.Contains(w, "every origin clear (2)") {
		t.Errorf("the weather section shows %q before any weather was set", w)
	}
	const spec = "down=flood2.test,slow=flood1.test:5s:0.5"
	crowdCLI("weather", "set", "down=flood2.test,slow=flood1.test:5s")
	fetch, _ := http.NewRequest(http.MethodGet, "http://"+plain+"/users/alice", nil)
	fetch.Host = "flood2.test"
	if resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(fetch); err == nil {
		resp.Body.Close()
		t.Fatalf("the down origin answered %d", resp.StatusCode)
	}
	page.c.call(t, page.session, "Page.reload", map[string]any{}, nil)
	page.waitUntil(t, `document.body.dataset.loaded === "yes" && document.getElementById("weather-section").dataset.spec === "`+spec+`"`)
	var wx struct {
		Spec  string            `json:"spec"`
		Kinds map[string]string `json:"kinds"` // condition → its origins, as the page lists them
		Note  string            `json:"note"`
	}
	page.eval(t, `JSON.stringify({spec: document.querySelector("#weather .spec").textContent,
		kinds: Object.fromEntries([...document.querySelectorAll("#weather [data-kind]")].map(d => [d.querySelector("h3").textContent, d.querySelector("ul").innerText.trim()])),
		note: document.querySelector("#weather p").textContent})`, &wx)
	if want := map[string]string{"down 1": "flood2.test · documents 1", "slow 1": "flood1.test 5s:0.5"}; wx.Spec != spec || !maps.Equal(wx.Kinds, want) || wx.Note != "0 of 2 origins clear" {
		t.Errorf("the weather section shows %+v, want spec %q and %v", wx, spec, want)
	}
}

// TestAdminPageCountsEveryEntry: the page's header counts every entry the
// activity log holds (its totals, which survive restarts), not only the
// 1 000 the page keeps: 1 200 refused deliveries show as 1 200 problems.
func TestAdminPageCountsEveryEntry(t *testing.T) {
	t.Parallel()
	RequireTools(t, "chromium")
	bin := BuildCrowd(t)
	admin, plain := loopback.Free(t), loopback.Free(t)
	StartProcess(t, exec.Command(bin, "serve", "--state", t.TempDir(), "--origins", "1", "--actors", "1",
		"--https", "", "--http", plain, "--dns", "", "--admin", admin, "--log-format", "json"),
		readyAdmin(admin))

	const refused = 1200 // more than the page keeps (MAX in page.html)
	for i := range refused {
		req, _ := http.NewRequest(http.MethodPost, "http://"+plain+"/users/alice/inbox",
			strings.NewReader(fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://sut.test/likes/%d","type":"Like","actor":"https://sut.test/users/mallory","object":"https://flood1.test/users/alice"}`, i)))
		req.Host = "flood1.test"
		req.Header.Set("Content-Type", "application/activity+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("an unsigned Like was answered %d, want 401", resp.StatusCode)
		}
	}
	var totals struct{ Entries, Problems uint64 }
	resp, err := http.Get("http://" + admin + "/api/activities/totals")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&totals)
	resp.Body.Close()
	if err != nil || totals.Problems < refused {
		t.Fatalf("totals %+v (%v): want at least %d problems", totals, err, refused)
	}

	page := startChromium(t).open(t, "http://"+admin+"/")
	page.waitUntil(t, `document.body.dataset.loaded === "yes" && document.body.dataset.state === "live"`)
	counts := page.evalString(t, `document.getElementById("counts").textContent`)
	for _, want := range []string{fmt.Sprintf("activities %d", totals.Entries), fmt.Sprintf("problems %d", totals.Problems)} {
		if !strings.Contains(counts, want) {
			t.Errorf("counts %q lack %q", counts, want)
		}
	}
}

// readyAdmin is ready once the crowd's admin API at admin answers /readyz
// with 200 (every listener is up).
func readyAdmin(admin string) ReadyFunc {
	return func(ctx context.Context, p *Process) error {
		resp, err := http.Get("http://" + admin + adminapi.RouteReady.Path())
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: HTTP %d", resp.StatusCode)
		}
		return nil
	}
}

// panelSample is what the live panel showed, and the flood's latest live
// line just before the panel was read.
type panelSample struct {
	figs    map[string]float64
	final   bool
	line    string
	verdict string  // the verdict box's class: "pending", "" (not the generator), "generator"
	fbState string  // the fetch-back box's state: none, counting, ended, closed
	fetches float64 // the fetches back it shows
}

// takePanel reads the flood's latest live line, then the panel's figures.
func takePanel(t *testing.T, page *chromiumPage, fl *Process) (panelSample, bool) {
	lines := liveLines(fl.Output())
	var v struct {
		State   string             `json:"state"`
		Final   string             `json:"final"`
		Figs    map[string]float64 `json:"figs"`
		Verdict string             `json:"verdict"`
		FBState string             `json:"fb_state"`
		Fetches float64            `json:"fetches"`
	}
	page.eval(t, `JSON.stringify({state: document.getElementById("flood-live").dataset.state,
		final: document.getElementById("flood-live").dataset.final || "",
		figs: Object.fromEntries([...document.querySelectorAll("#flood-live [data-fig]")].map(e => [e.dataset.fig, Number(e.dataset.value)])),
		verdict: document.getElementById("flood-verdict").className,
		fb_state: document.getElementById("flood-fetchback").dataset.state,
		fetches: Number(document.querySelector('#flood-fetchback [data-fb="fetches"]')?.dataset.value || 0)})`, &v)
	if v.State != "live" || len(lines) == 0 {
		return panelSample{}, false
	}
	return panelSample{figs: v.Figs, final: v.Final == "true", line: lines[len(lines)-1],
		verdict: v.Verdict, fbState: v.FBState, fetches: v.Fetches}, true
}

// liveLines are the flood's live lines as the plain line writes them
// ("t=3s rate=… …"): plain ones as they are, and, from a flood with JSON
// logs, its "progress" log lines written in that form, figures formatted
// as the plain line formats them.
func liveLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "t=") {
			lines = append(lines, l)
		}
		var p struct {
			Msg                                         string
			T                                           float64 `json:"t_s"`
			Rate                                        float64
			Offered, Sent, Dropped, Starved, OK, Errors int64
			Status429                                   int64 `json:"status429"`
			Inflight                                    int64
			P50US                                       int64 `json:"p50_us"`
			P99US                                       int64 `json:"p99_us"`
			MaxUS                                       int64 `json:"max_us"`
			LateP99US                                   int64 `json:"late_p99_us"`
			End                                         bool
		}
		if json.Unmarshal([]byte(l), &p) != nil || p.Msg != "progress" {
			continue
		}
		line := fmt.Sprintf("t=%ds rate=%.0f/s offered=%d sent=%d dropped=%d starved=%d p50=%s p99=%s max=%s late_p99=%s ok=%d 429=%d errors=%d inflight=%d",
			int(math.Round(p.T)), p.Rate, p.Offered, p.Sent, p.Dropped, p.Starved, record.FormatMicros(p.P50US), record.FormatMicros(p.P99US),
			record.FormatMicros(p.MaxUS), record.FormatMicros(p.LateP99US), p.OK, p.Status429, p.Errors, p.Inflight)
		if p.End {
			line += " end=1"
		}
		lines = append(lines, line)
	}
	return lines
}

// lineFields splits a live line into its key=value fields.
func lineFields(l string) map[string]string {
	f := map[string]string{}
	for _, kv := range strings.Fields(l) {
		k, v, _ := strings.Cut(kv, "=")
		f[k] = v
	}
	return f
}

// checkPanel: every sample's figures are those of the live line of the
// same second, and no more than one second behind the line the flood had
// printed last before the panel was read.
func checkPanel(t *testing.T, samples []panelSample, out string) {
	t.Helper()
	bySecond := map[string]map[string]string{}
	var final map[string]string
	for _, l := range liveLines(out) {
		f := lineFields(l)
		if f["end"] == "1" {
			final = f
		} else {
			bySecond[f["t"]] = f
		}
	}
	// Read every 250 ms or as fast as the page answers: a loaded machine's DevTools calls
	// may take most of a second, and ten reads of a 10 s flood still see it move.
	if len(samples) < 10 {
		t.Fatalf("%d samples of the panel over a 10 s flood", len(samples))
	}
	for _, s := range samples {
		sec := fmt.Sprintf("%ds", int(math.Round(s.figs["elapsed"])))
		line := bySecond[sec]
		if s.final {
			line = final
		}
		if line == nil {
			t.Errorf("the panel shows t=%s (final %v), a second the flood printed no line for", sec, s.final)
			continue
		}
		us := func(k string) string { return record.FormatMicros(int64(s.figs[k])) }
		n := func(k string) string { return strconv.FormatInt(int64(s.figs[k]), 10) }
		for _, c := range []struct{ field, panel string }{
			{"rate", fmt.Sprintf("%.0f/s", s.figs["rate"])},
			{"offered", n("offered")}, {"sent", n("sent")}, {"dropped", n("dropped")}, {"starved", n("starved")},
			{"p50", us("p50_us")}, {"p99", us("p99_us")}, {"max", us("max_us")}, {"late_p99", us("late_p99_us")},
			{"ok", n("ok")}, {"429", n("status_429")}, {"errors", n("errors")}, {"inflight", n("inflight")},
		} {
			if line[c.field] != c.panel {
				t.Errorf("t=%s: the panel shows %s %s, the live line %s", sec, c.field, c.panel, line[c.field])
			}
		}
		// Within one second: at most one tick behind.
		latest := lineFields(s.line)
		if latest["end"] != "1" && !s.final {
			lt, _ := strconv.Atoi(strings.TrimSuffix(latest["t"], "s"))
			if pt := int(math.Round(s.figs["elapsed"])); lt-pt > 1 {
				t.Errorf("the panel showed t=%ds while the flood had printed t=%ds", pt, lt)
			}
		}
	}
}

// checkPanelPlots screenshots the page and checks each of the panel's
// plots has its series drawn in its frame, the classes plot a bar for
// each of classes (the record's).
func checkPanelPlots(t *testing.T, page *chromiumPage, classes []string) {
	t.Helper()
	page.evalString(t, `(document.getElementById("flood-live").scrollIntoView(), "")`)
	type seriesView struct {
		Name  string  `json:"name"`
		Color string  `json:"color"`
		W     float64 `json:"w"`
		H     float64 `json:"h"`
	}
	var plots []struct {
		ID     string       `json:"id"`
		Frame  rect         `json:"frame"`
		Series []seriesView `json:"series"`
	}
	page.eval(t, `JSON.stringify([...document.querySelectorAll("#flood-live svg.plot")].map(svg => {
		const f = svg.querySelector("rect.frame").getBoundingClientRect();
		return {id: svg.id, frame: {x: f.left, y: f.top, w: f.width, h: f.height},
			series: [...svg.querySelectorAll(".series")].map(p => { const b = p.getBoundingClientRect();
				return {name: p.dataset.series, color: p.getAttribute("stroke") && p.getAttribute("stroke") !== "none" ? p.getAttribute("stroke") : p.getAttribute("fill"), w: b.width, h: b.height}; })};
	}))`, &plots)
	shot := page.screenshot(t)
	dir := t.TempDir()
	shotPath := filepath.Join(dir, "adminpage-live.png")
	os.WriteFile(shotPath, shot, 0o644)
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	if sd := lumaStdDev(img, img.Bounds()); sd < 10 {
		t.Errorf("screenshot %s is nearly blank (luminance std dev %.1f)", shotPath, sd)
	}
	want := map[string]string{"flood-plot-rate": "offered sent", "flood-plot-latency": "latency p50 latency p99 lateness p50 lateness p99",
		"flood-plot-classes": strings.Join(slices.Sorted(slices.Values(classes)), " ")}
	if len(plots) != len(want) {
		t.Fatalf("%d plots in the panel, want %d", len(plots), len(want))
	}
	for _, p := range plots {
		var names []string
		for _, s := range p.Series {
			names = append(names, s.Name)
		}
		if p.ID == "flood-plot-classes" {
			slices.Sort(names) // drawn largest first
		}
		if strings.Join(names, " ") != want[p.ID] {
			t.Errorf("%s draws %q, want %q", p.ID, names, want[p.ID])
		}
		inner := image.Rect(int(p.Frame.X)+2, int(p.Frame.Y)+2, int(p.Frame.X+p.Frame.W)-2, int(p.Frame.Y+p.Frame.H)-2)
		for _, s := range p.Series {
			c, err := paintedColor(s.Color, "1")
			if err != nil {
				t.Errorf("%s %s: %v", p.ID, s.Name, err)
				continue
			}
			if s.W <= 0 && s.H <= 0 {
				t.Errorf("%s %s: nothing drawn", p.ID, s.Name)
			}
			if n := countNear(img, inner, c, 40); n < 20 {
				t.Errorf("%s %s: only %d pixels of its colour %v inside the plot in %s", p.ID, s.Name, n, c, shotPath)
			}
		}
	}
	if t.Failed() {
		t.Logf("screenshot: %s", shotPath)
	}
}

// checkPanelVerdict: the panel's bottleneck verdict is pending before the
// first checkpoint (5 s) and given from the tick after it on; once the
// flood has gone it is the record's verdict, with its reasons and notes.
func checkPanelVerdict(t *testing.T, page *chromiumPage, samples []panelSample, rec *record.Record) {
	t.Helper()
	var before, after int
	for _, s := range samples {
		switch el := s.figs["elapsed"]; {
		case el < 5 && !s.final:
			before++
			if s.verdict != "pending" {
				t.Errorf("at %.0f s, before the first checkpoint, the panel gives a verdict (%q)", el, s.verdict)
			}
		case el >= 6:
			after++
			if s.verdict == "pending" {
				t.Errorf("at %.0f s (final %v), after the first checkpoint, the panel's verdict is still pending", el, s.final)
			}
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("%d samples of the panel before the first checkpoint, %d after it", before, after)
	}
	var v struct {
		Class, Generator string
		Items            []string
	}
	page.eval(t, `(() => { const b = document.getElementById("flood-verdict");
		return JSON.stringify({class: b.className, generator: b.dataset.generator || "",
			items: [...b.querySelectorAll("li")].map(li => li.textContent)}); })()`, &v)
	want := append(append([]string{}, rec.Bottleneck.Reasons...), rec.Bottleneck.Notes...)
	if v.Generator != strconv.FormatBool(rec.Bottleneck.Generator) || strings.Join(v.Items, "\n") != strings.Join(want, "\n") {
		t.Errorf("the panel's final verdict: generator %s, %q; the record's: generator %v, %q",
			v.Generator, v.Items, rec.Bottleneck.Generator, want)
	}
}

// checkPanelFetchback: while the flood ran, the panel showed the SUT's
// fetches back counting up; once its window has closed, the panel's
// figures are the record's fetchback section: the fetches by kind, the
// signed ones and those after the end.
func checkPanelFetchback(t *testing.T, page *chromiumPage, samples []panelSample, rec *record.Record) {
	t.Helper()
	fb := rec.Fetchback
	if fb == nil || fb.Total.Fetches == 0 {
		t.Fatalf("the record counts no fetches back (%+v): the panel has nothing to match", fb)
	}
	counting := 0
	for _, s := range samples {
		if !s.final && s.fbState == "counting" && s.fetches > 0 {
			counting++
		}
	}
	if counting == 0 {
		t.Error("the panel never showed fetches back while the flood ran")
	}
	page.waitUntil(t, `document.getElementById("flood-fetchback").dataset.state === "closed"`)
	var shown map[string]int64
	page.eval(t, `JSON.stringify(Object.fromEntries([...document.querySelectorAll("#flood-fetchback [data-fb]")].map(e => [e.dataset.fb, Number(e.dataset.value)])))`, &shown)
	// Late fetches (after the window closed) come after the record was
	// written, so the record cannot hold them: the closed panel shows the
	// count, which only grows.
	late, ok := shown["late"]
	if !ok || late < 0 {
		t.Errorf("the closed panel shows no count of late fetches: %v", shown)
	}
	delete(shown, "late")
	want := map[string]int64{"fetches": fb.Total.Fetches, "signed": fb.Total.Signed, "after_end": fb.Total.AfterEnd}
	for k, kind := range fb.Kinds {
		if kind.Fetches > 0 {
			want["kind:"+k] = kind.Fetches
		}
	}
	if !maps.Equal(shown, want) {
		t.Errorf("the panel's final fetches back %v, the record's %v", shown, want)
	}
	t.Logf("fetches back: %v", shown)
}
