package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
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

	// The scrapes keep their own 250 ms beat, apart from the panel's reads: a DevTools call
	// waits on the page's thread, and a slow one must not cost a second of scrapes.
	type rawScrape struct {
		body  string
		ended bool
	}
	scraped := make(chan []rawScrape, 1)
	go func() {
		var raw []rawScrape
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for done := false; !done; {
			select {
			case <-fl.done:
				done = true
			case <-tick.C:
			}
			ended := finalLine(fl.Output()) // before the scrape: a scrape that fails before the end is the flood's failure
			body, err := nsGet(f.control, "http://"+metrics+"/metrics")
			switch {
			case err == nil:
				raw = append(raw, rawScrape{body, ended})
			case !ended && !done:
				t.Errorf("a scrape of --metrics-addr while the flood ran: %v", err)
			}
		}
		scraped <- raw
	}()
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
	}
	var scrapes []liveScrape
	for _, r := range <-scraped {
		scrapes = append(scrapes, parseScrape(t, r.body, r.ended))
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
	checkPanelVerdict(t, page, samples, rec)
	checkPanelFetchback(t, page, samples, rec)
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
