package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
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

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/crowdfed/crowd/flood/record"
)

// TestFloodLiveMetrics runs a 10 s flood of the real Fedify SUT, attached
// to a real `crowd serve`, with --metrics-addr, and watches it the three
// ways a user does. Fedify answers the flood's Likes 429 (its inbox paused
// for them) and its Creates 202, and --max-inflight 4 under Poisson
// arrivals drops sends, so every counter the record is compared with has
// something in it to get wrong:
//
//   - its /metrics scraped four times a second: a scrape of every tick
//     1…9 s and of the end while the flood ran, no scrape failing, every
//     counter rising or still from one scrape to the next, and the last
//     one equal to the record (sent, dropped, starved per type, completed
//     per type and class, the overall counts and tally), the histograms'
//     counts its latency, service and lateness counts; promtool check
//     metrics passes on a mid-run scrape and on the last;
//   - the serve's /metrics, which the flood pushes to: the same final
//     values, with the run's labels; and every metric the Grafana
//     dashboard queries is there;
//   - the admin page in headless Chromium (adminpage_test.go's checks):
//     the live panel's figures are the flood's live line of the same
//     second, its plots are drawn, its verdict forms at the first
//     checkpoint and ends as the record's, and it shows what Fedify
//     fetched back from the crowd, as the record counts it.
func TestFloodLiveMetrics(t *testing.T) {
	RequireTools(t, "chromium", "promtool")
	bin := BuildCrowd(t)
	f := startFederation(t, 3)
	if code := f.call(t, "POST", fedifyCtl+"/inbox/pause", map[string]any{"status": 429, "types": []string{"Like"}}, nil); code != 200 {
		t.Fatalf("pausing Fedify's inbox for Likes: %d", code)
	}

	// A follow between two crowd actors: the serve's own inbox and delivery
	// series, which the dashboard shows beside the flood's, have a value.
	if out := f.ns.Run(t, bin, "send", "--admin", "127.0.0.1:9180", "--from", "alice@flood1.test", "--type", "Follow",
		"--to", "acct:bob@flood2.test"); !strings.Contains(out, "→ 202 Accepted") {
		t.Fatalf("crowd send: %s", out)
	}

	page := startChromiumIn(t, f.ns).open(t, crowdAdmin+"/")
	page.waitUntil(t, `document.body.dataset.loaded === "yes" && document.getElementById("flood-live").dataset.state === "idle"`)

	out := t.TempDir()
	const metrics = "127.0.0.1:9190"
	fl := StartProcess(t, f.ns.Command(context.Background(), bin, "flood", "--admin", "127.0.0.1:9180", "--state", f.state,
		"--personas", sutPersonas+"@sut.test", "--count", "3", "--mix", "create=1,like=1",
		"--rate", "100", "--seconds", "10", "--arrivals", "poisson", "--max-inflight", "4", "--timeout", "30s",
		"--fetchback-grace", "2s", "--out", out, "--label", "live", "--seed", "7",
		"--metrics-addr", metrics, "--metrics-linger", "3s", "--log-format", "json"), ReadyOutput(`"msg":"flooding"`))

	var scrapes []liveScrape
	var samples []panelSample
	for done := false; !done; {
		select {
		case <-fl.done:
			done = true
		case <-time.After(250 * time.Millisecond):
		}
		if s, ok := takePanel(t, page, fl); ok {
			samples = append(samples, s)
		}
		ended := finalLine(fl.Output()) // before the scrape: a scrape that fails before the end is the flood's failure
		body, err := nsGet(f.control, "http://"+metrics+"/metrics")
		switch {
		case err == nil:
			scrapes = append(scrapes, parseScrape(t, body, ended))
		case !ended && !done:
			t.Errorf("a scrape of --metrics-addr while the flood ran: %v", err)
		}
	}
	if code := fl.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("crowd flood exited %d:\n%s", code, fl.Output())
	}
	paths, _ := filepath.Glob(filepath.Join(out, "*-live.json"))
	if len(paths) != 1 {
		t.Fatalf("records %v", paths)
	}
	rec, err := record.LoadRecord(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	c := rec.Overall.Counts
	t.Logf("sent %d, dropped %d, starved %d, classes %v", c.Sent, c.Dropped, c.Starved, rec.Overall.Tally.Classes)
	if c.Sent < 100 || c.Dropped == 0 || rec.Overall.Tally.Classes[record.Class202] == 0 || rec.Overall.Tally.Classes[record.Class429] == 0 {
		t.Fatalf("the flood did not meet both 202 and 429 and drop sends, so the comparisons below could not fail: %+v %v",
			c, rec.Overall.Tally.Classes)
	}

	checkScrapes(t, scrapes)
	last := scrapes[len(scrapes)-1]
	checkAgainstRecord(t, "--metrics-addr", last.body, rec)
	promtoolCheckMetrics(t, "the last scrape", last.body)
	served, err := nsGet(f.control, crowdAdmin+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstRecord(t, "the serve's /metrics", served, rec)
	checkDashboardNames(t, served)
	checkPanel(t, samples, fl.Output())
	var classes []string // the record's classes, as the panel names them
	for c := range record.NumClasses {
		if rec.Overall.Tally.Classes[c] > 0 {
			classes = append(classes, c.String())
		}
	}
	checkPanelPlots(t, page, classes)
}

// nsGet is the body of a 200 answer to GET url through client (a
// namespace's), within 5 s.
func nsGet(client *http.Client, url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return string(b), err
}

// finalLine says whether the flood printed its final live line (end=1).
func finalLine(out string) bool {
	for _, l := range liveLines(out) {
		if lineFields(l)["end"] == "1" {
			return true
		}
	}
	return false
}

// liveScrape is one scrape of --metrics-addr: its text, the run's
// series' values by name and labels (counters, and histograms' counts),
// its elapsed seconds, and whether the flood had ended before it.
type liveScrape struct {
	body     string
	counters map[string]float64
	elapsed  float64
	afterEnd bool
}

// parseScrape reads the run-labelled series of one scrape.
func parseScrape(t *testing.T, body string, afterEnd bool) liveScrape {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("a scrape of --metrics-addr does not parse: %v\n%s", err, body)
	}
	s := liveScrape{body: body, counters: map[string]float64{}, elapsed: -1, afterEnd: afterEnd}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				s.counters[key] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.counters[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_GAUGE:
				if name == "crowd_flood_elapsed_seconds" {
					s.elapsed = m.GetGauge().GetValue()
				}
			}
		}
	}
	return s
}

// checkScrapes: the scrapes taken while the flood ran saw each of its
// ticks 1…9 s and its end (at least 9.5 s), so it was scraped every
// second; no counter (nor histogram count) ever went down or vanished
// from one scrape to the next; promtool passes on a scrape of mid-run.
func checkScrapes(t *testing.T, scrapes []liveScrape) {
	t.Helper()
	seen := map[float64]bool{}
	var running, mid []liveScrape
	for _, s := range scrapes {
		if !s.afterEnd {
			running = append(running, s)
			seen[s.elapsed] = true
		}
		if s.elapsed == 5 && mid == nil {
			mid = []liveScrape{s}
		}
	}
	var missing []int
	for k := 1; k <= 9; k++ {
		if !seen[float64(k)] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 || len(running) == 0 || running[len(running)-1].elapsed < 9.5 && scrapes[len(scrapes)-1].elapsed < 9.5 {
		var got []float64
		for _, s := range running {
			got = append(got, s.elapsed)
		}
		t.Fatalf("the scrapes while the flood ran saw elapsed %v: no scrape of second(s) %v, or none of the end", got, missing)
	}
	for i := 1; i < len(scrapes); i++ {
		prev, cur := scrapes[i-1], scrapes[i]
		for k, v := range prev.counters {
			if w, ok := cur.counters[k]; !ok || w < v {
				t.Errorf("%s went from %v (scrape at %.1f s) to %v (ok %v) at %.1f s", k, v, prev.elapsed, w, ok, cur.elapsed)
			}
		}
	}
	if mid == nil {
		t.Fatal("no scrape of the tick at 5 s")
	}
	promtoolCheckMetrics(t, "a scrape at 5 s", mid[0].body)
}

// promtoolCheckMetrics runs `promtool check metrics` on an exposition.
func promtoolCheckMetrics(t *testing.T, what, exposition string) {
	t.Helper()
	promtool := exec.Command("promtool", "check", "metrics")
	promtool.Stdin = strings.NewReader(exposition)
	if b, err := promtool.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics on %s: %v\n%s", what, err, b)
	}
}

// checkAgainstRecord compares a text exposition's crowd_flood_ series of
// the run labelled "live" with the record: every counter per type (and
// class), every histogram's count.
func checkAgainstRecord(t *testing.T, where, exposition string, rec *record.Record) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(exposition))
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	got := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["label"] != "live" || labels["seed"] != "7" {
				continue
			}
			key := name + "/" + labels["type"] + "/" + labels["class"]
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				got[key] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				got[name+"_count/"+labels["type"]+"/"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	if len(rec.Types) == 0 {
		t.Fatal("the record has no types")
	}
	for typ, st := range rec.Types {
		want := map[string]int64{
			"crowd_flood_offered_total": st.Counts.Offered, "crowd_flood_sent_total": st.Counts.Sent,
			"crowd_flood_dropped_total": st.Counts.Dropped, "crowd_flood_starved_total": st.Counts.Starved,
			"crowd_flood_latency_seconds_count": st.Latency.Count, "crowd_flood_service_seconds_count": st.Service.Count,
			"crowd_flood_lateness_seconds_count": st.Lateness.Count,
		}
		for c := range record.NumClasses {
			want["crowd_flood_completed_total/"+c.String()] = st.Tally.Classes[c]
		}
		for name, w := range want {
			base, class, _ := strings.Cut(name, "/")
			if g := got[base+"/"+typ+"/"+class]; g != float64(w) {
				t.Errorf("%s: %s{type=%q,class=%q} = %v, the record has %d", where, base, typ, class, g, w)
			}
		}
	}
	// The sums over the types are the record's overall figures.
	sum := func(base, class string) (n float64) {
		for typ := range rec.Types {
			n += got[base+"/"+typ+"/"+class]
		}
		return n
	}
	o := rec.Overall
	want := map[string]int64{"crowd_flood_offered_total": o.Counts.Offered, "crowd_flood_sent_total": o.Counts.Sent,
		"crowd_flood_dropped_total": o.Counts.Dropped, "crowd_flood_starved_total": o.Counts.Starved,
		"crowd_flood_latency_seconds_count": o.Latency.Count}
	for c := range record.NumClasses {
		want["crowd_flood_completed_total/"+c.String()] = o.Tally.Classes[c]
	}
	for name, w := range want {
		base, class, _ := strings.Cut(name, "/")
		if g := sum(base, class); g != float64(w) {
			t.Errorf("%s: the sum of %s{class=%q} over the types is %v, the record's overall figure %d", where, base, class, g, w)
		}
	}
}

// panelSample is what the live panel showed, and the flood's latest live
// line just before the panel was read.
type panelSample struct {
	figs  map[string]float64
	final bool
	line  string
}

// takePanel reads the flood's latest live line, then the panel's figures.
func takePanel(t *testing.T, page *chromiumPage, fl *Process) (panelSample, bool) {
	lines := liveLines(fl.Output())
	var v struct {
		State string             `json:"state"`
		Final string             `json:"final"`
		Figs  map[string]float64 `json:"figs"`
	}
	page.eval(t, `JSON.stringify({state: document.getElementById("flood-live").dataset.state,
		final: document.getElementById("flood-live").dataset.final || "",
		figs: Object.fromEntries([...document.querySelectorAll("#flood-live [data-fig]")].map(e => [e.dataset.fig, Number(e.dataset.value)]))})`, &v)
	if v.State != "live" || len(lines) == 0 {
		return panelSample{}, false
	}
	return panelSample{figs: v.Figs, final: v.Final == "true", line: lines[len(lines)-1]}, true
}

// liveLines are the flood's plain live lines ("t=3s rate=… …").
func liveLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "t=") {
			lines = append(lines, l)
		}
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
	if len(samples) < 15 {
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
