package e2e

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/crowdfed/crowd/flood/record"
)

// TestFloodLiveMetrics runs a 10 s flood attached to a real `crowd serve`
// (flooding the crowd's own actors over HTTPS) with --metrics-addr and
// watches it the three ways a user does:
//
//   - its /metrics scraped every second: the counters' final values equal
//     the record's (sent, dropped, per class, per type), the histograms'
//     counts its latency, service and lateness counts, and promtool check
//     metrics passes on a scrape;
//   - the serve's /metrics, which the flood pushes to: the same final
//     values, with the run's labels; and every metric the Grafana
//     dashboard queries is there;
//   - the admin page in headless Chromium: the live panel's figures are
//     the flood's live line of the same second, at most one second behind
//     it, and its plots are drawn (screenshot pixels of each series).
func TestFloodLiveMetrics(t *testing.T) {
	RequireTools(t, "chromium", "promtool")
	bin := BuildCrowd(t)
	state := t.TempDir()
	admin, https, metrics := freeLoopbackAddr(t), freeLoopbackAddr(t), freeLoopbackAddr(t)
	StartProcess(t, exec.Command(bin, "serve", "--state", state, "--origins", "2", "--actors", "3",
		"--https", https, "--http", "", "--dns", "", "--admin", admin, "--log-format", "json"), readyAdmin(admin))

	page := startChromium(t).open(t, "http://"+admin+"/")
	page.waitUntil(t, `document.body.dataset.loaded === "yes" && document.getElementById("flood-live").dataset.state === "idle"`)

	out := t.TempDir()
	fl := StartProcess(t, exec.Command(bin, "flood", "--admin", admin, "--state", state, "--crowd-https", https,
		"--rate", "100", "--seconds", "10", "--out", out, "--label", "live", "--seed", "7",
		"--metrics-addr", metrics, "--metrics-linger", "3s", "--log-format", "json"), ReadyOutput(`"msg":"flooding"`))

	var scrapes []string
	var samples []panelSample
	nextScrape := time.Now()
	for done := false; !done; {
		select {
		case <-fl.done:
			done = true
		case <-time.After(250 * time.Millisecond):
		}
		if s, ok := takePanel(t, page, fl); ok {
			samples = append(samples, s)
		}
		if time.Now().After(nextScrape) {
			nextScrape = nextScrape.Add(time.Second)
			if body, err := httpGet("http://" + metrics + "/metrics"); err == nil {
				scrapes = append(scrapes, body)
			}
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
	if rec.Overall.Counts.Sent < 900 {
		t.Fatalf("only %d sent: %+v", rec.Overall.Counts.Sent, rec.Overall.Counts)
	}
	if len(scrapes) < 10 {
		t.Fatalf("%d scrapes of --metrics-addr, want one a second over the run", len(scrapes))
	}
	last := scrapes[len(scrapes)-1]
	checkAgainstRecord(t, "--metrics-addr", last, rec)
	promtool := exec.Command("promtool", "check", "metrics")
	promtool.Stdin = strings.NewReader(last)
	if b, err := promtool.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics on a scrape: %v\n%s", err, b)
	}
	served, err := httpGet("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstRecord(t, "the serve's /metrics", served, rec)
	checkDashboardNames(t, served)
	checkPanel(t, samples, fl.Output())
	checkPanelPlots(t, page)
}

// httpGet is the body of a 200 answer to GET url.
func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
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
// plots has its series drawn in its frame.
func checkPanelPlots(t *testing.T, page *chromiumPage) {
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
		"flood-plot-classes": "202"}
	if len(plots) != len(want) {
		t.Fatalf("%d plots in the panel, want %d", len(plots), len(want))
	}
	for _, p := range plots {
		var names []string
		for _, s := range p.Series {
			names = append(names, s.Name)
		}
		if p.ID == "flood-plot-classes" && len(names) > 0 {
			names = names[:1] // the largest class first: all 202 from the crowd's own inboxes
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
