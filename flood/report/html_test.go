package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// fixturePath is the deterministic record the report tests render. It is
// shared: cmd/crowd's and e2e's report tests read it too. go test -update
// rewrites it from fixtureResult.
const fixturePath = "testdata/report.json"

// fixtureResult simulates, deterministically, a 40 s run at 200/s (5 s
// warm-up, 64 slots) against a SUT that slows down from 16 s to 28 s:
// service time climbs to a few hundred ms, the SUT sheds load with 429s
// and a few 503s, sends wait for connections, and at the peak every slot
// is busy so some sends are dropped. A few Follows are refused (401) and
// a few connections fail. The timeline is computed from the simulated
// sends the way the engine computes it, so the plots show a real shape.
func fixtureResult() *record.Result {
	rng := rand.New(rand.NewPCG(7, 11))
	const (
		rate     = 200.0
		nSlots   = 64
		duration = 40 * time.Second
		warmup   = 5 * time.Second
	)
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	// load is how far into the slow-down the SUT is at t seconds: 0 .. 1.
	load := func(t float64) float64 {
		switch {
		case t < 16 || t > 28:
			return 0
		case t < 22:
			return (t - 16) / 6
		case t < 25:
			return 1
		}
		return (28 - t) / 3
	}
	res := &record.Result{
		Start: t0, Overall: record.NewStats(), Types: map[string]*record.Stats{}, Dispatch: record.NewHist(),
		Rate: rate, Duration: duration, Warmup: warmup, MaxInflight: nSlots, Timeout: 10 * time.Second,
		Measured: duration - warmup,
	}
	type second struct {
		tick      record.Tick
		lat, late *hdr.Histogram
	}
	var secs []*second
	at := func(d time.Duration) *second {
		i := int(d / time.Second)
		for len(secs) <= i {
			secs = append(secs, &second{tick: record.Tick{T: len(secs) + 1, Span: 1}, lat: record.NewHist(), late: record.NewHist()})
		}
		return secs[i]
	}
	slots := make([]time.Duration, nSlots) // when each slot is free again
	var last time.Duration
	n := int(rate * duration.Seconds())
	for i := range n {
		intended := sec(float64(i) / rate)
		t := intended.Seconds()
		l := load(t)
		typ := record.TypeCreate
		switch w := rng.IntN(10); {
		case w >= 9:
			typ = record.TypeFollow
		case w >= 6:
			typ = record.TypeLike
		}
		measured := intended >= warmup
		st := res.Types[string(typ)]
		if measured && st == nil {
			st = record.NewStats()
			res.Types[string(typ)] = st
		}
		counts := &res.WarmupCounts
		if measured {
			counts = &st.Counts
		}
		counts.Offered++
		at(intended).tick.Offered++
		slot := -1
		for j, free := range slots {
			if free <= intended {
				slot = j
				break
			}
		}
		if slot < 0 { // every slot busy: dropped, never delayed
			counts.Dropped++
			at(intended).tick.Dropped++
			continue
		}
		counts.Sent++
		at(intended).tick.Sent++
		dispatch := time.Duration(30+rng.IntN(120)) * time.Microsecond
		late := dispatch + ms(l*rng.ExpFloat64()*4) // waiting for a connection the SUT holds
		service := ms(2 + rng.ExpFloat64()*1.5 + l*(250+350*rng.Float64()))
		if typ == record.TypeFollow {
			service += ms(3) // the SUT fetches the follower's actor
		}
		if rng.Float64() < 0.005 {
			service *= 10 // an occasional slow one (a GC pause, a lock)
		}
		class := record.Class202
		switch p := rng.Float64(); {
		case p < 0.12*l:
			class, service = record.Class429, ms(1+rng.Float64())
		case p < 0.14*l:
			class = record.Class503
		case typ == record.TypeFollow && p > 0.997:
			class = record.Class401
		case p > 0.9995:
			class, service = record.ClassConnError, ms(0.5)
		}
		actual := intended + late
		done := actual + service
		slots[slot] = done
		last = max(last, done)
		if measured {
			st.Counts.Completed++
			st.Tally.Add(class, class == record.Class429)
			record.RecordDuration(st.Latency, done-intended)
			record.RecordDuration(st.Service, service)
			record.RecordDuration(st.Lateness, late)
			record.RecordDuration(res.Dispatch, dispatch)
		} else {
			counts.Completed++
		}
		s := at(done)
		s.tick.Completed++
		if class.OK() {
			s.tick.OK++
		} else {
			s.tick.Errors++
		}
		if class == record.Class429 {
			s.tick.Status429++
		}
		record.RecordDuration(s.lat, done-intended)
		record.RecordDuration(s.late, late)
	}
	at(last) // the timeline reaches the last completion
	res.End = t0.Add(last)
	res.Elapsed = last
	for i, s := range secs {
		end := time.Duration(i+1) * time.Second
		if i == len(secs)-1 {
			s.tick.Span = math.Round((last-time.Duration(i)*time.Second).Seconds()*1000) / 1000
			end = last
		}
		s.tick.Warmup = end <= warmup
		for _, free := range slots {
			if free > end {
				s.tick.Inflight++
			}
		}
		if s.lat.TotalCount() > 0 {
			s.tick.LatencyP50 = s.lat.ValueAtQuantile(50)
			s.tick.LatencyP99 = s.lat.ValueAtQuantile(99)
			s.tick.LatencyMax = s.lat.Max()
			s.tick.LatenessP99 = s.late.ValueAtQuantile(99)
		}
		res.Timeline = append(res.Timeline, s.tick)
	}
	for _, st := range res.Types {
		res.Overall.Merge(st)
	}
	return res
}

// fixtureRecord is fixtureResult's record, with a fixed part id.
func fixtureRecord(t *testing.T) *record.Record {
	t.Helper()
	r, err := fixtureResult().Record(record.Settings{Label: "fixture", Arrivals: "constant", Mix: "create=6,like=3,follow=1",
		Signing: "pipeline", Target: "personas alice@sut.test, bob@sut.test (shared inbox)"})
	if err != nil {
		t.Fatal(err)
	}
	r.Parts[0].ID = "FIXTURE1"
	return r
}

// loadFixture reads testdata/report.json.
func loadFixture(t *testing.T) *record.Record {
	t.Helper()
	r, err := record.LoadRecord(fixturePath)
	if err != nil {
		t.Fatalf("%v (go test -update ./flood/ writes it)", err)
	}
	return r
}

// withoutHDR returns the record as JSON with every encoded histogram
// blanked, after checking that each decodes to the same histogram as in
// want: the compressed bytes may differ between zlib versions, the
// histograms may not.
func withoutHDR(t *testing.T, got, want *record.Record) []byte {
	t.Helper()
	c := *got
	c.Types = map[string]*record.TypeRecord{}
	pair := func(name string, g, w *record.HistRecord) record.HistRecord {
		hg, err := g.Decode()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		hw, err := w.Decode()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !hg.Equals(hw) {
			t.Errorf("%s histogram differs from the generator's", name)
		}
		out := *g
		out.HDR = ""
		return out
	}
	strip := func(name string, g, w *record.TypeRecord) record.TypeRecord {
		out := *g
		out.Latency = pair(name+" latency", &g.Latency, &w.Latency)
		out.Service = pair(name+" service", &g.Service, &w.Service)
		out.Lateness = pair(name+" lateness", &g.Lateness, &w.Lateness)
		return out
	}
	c.Overall = strip("overall", &got.Overall, &want.Overall)
	for name, tr := range got.Types {
		w, ok := want.Types[name]
		if !ok {
			t.Fatalf("type %s is not the generator's", name)
		}
		s := strip(name, tr, w)
		c.Types[name] = &s
	}
	c.Dispatch = pair("dispatch", &got.Dispatch, &want.Dispatch)
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReportFixture: testdata/report.json is what fixtureResult makes (-update
// rewrites it), and it has the shape the report tests rely on: a warm-up,
// a slow-down with 429s, 503s and drops, and three types.
func TestReportFixture(t *testing.T) {
	gen := fixtureRecord(t)
	if *update {
		b, err := json.MarshalIndent(gen, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fixturePath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := loadFixture(t)
	if got, want := withoutHDR(t, file, gen), withoutHDR(t, recordtest.RoundTrip(t, gen), gen); !bytes.Equal(got, want) {
		t.Errorf("%s is not what fixtureResult makes (go test -update ./flood/ rewrites it)", fixturePath)
	}
	c, tl := file.Overall.Counts, file.Overall.Tally
	if c.Dropped == 0 || tl.Classes[record.Class429] == 0 || tl.Classes[record.Class503] == 0 || len(file.Types) != 3 ||
		!file.Timeline[0].Warmup || file.Timeline[10].Warmup || file.Overall.Latency.P99 < 100_000 {
		t.Errorf("the fixture lost its shape: counts %+v tally %+v types %v p99 %dµs", c, tl, file.TypeNames(), file.Overall.Latency.P99)
	}
}

// TestReportGoldens renders the fixture as text, Markdown and HTML.
func TestReportGoldens(t *testing.T) {
	r := loadFixture(t)
	for _, c := range []struct {
		golden string
		write  func(*bytes.Buffer) error
	}{
		// The final table, as crowd flood prints it.
		{"report.txt.golden", func(b *bytes.Buffer) error { return WriteTable(b, r) }},
		// The runs.md row plus the per-type table.
		{"report.md.golden", func(b *bytes.Buffer) error { return WriteMarkdown(b, r, "report.json") }},
		// The self-contained page.
		{"report.html.golden", func(b *bytes.Buffer) error { return WriteHTML(b, r) }},
	} {
		var b bytes.Buffer
		if err := c.write(&b); err != nil {
			t.Fatalf("%s: %v", c.golden, err)
		}
		recordtest.Golden(t, c.golden, b.Bytes(), *update)
	}
}

// plotSeries returns, per plot id, the data-series names of its paths.
func plotSeries(page string) map[string][]string {
	out := map[string][]string{}
	plot := regexp.MustCompile(`(?s)<svg id="([^"]+)".*?</svg>`)
	series := regexp.MustCompile(`<path class="series" data-series="([^"]+)" d="M`)
	for _, m := range plot.FindAllStringSubmatch(page, -1) {
		out[m[1]] = []string{}
		for _, s := range series.FindAllStringSubmatch(m[0], -1) {
			out[m[1]] = append(out[m[1]], s[1])
		}
	}
	return out
}

// TestHTMLIsSelfContained: the page loads nothing and runs nothing, and
// every plot has its series.
func TestHTMLIsSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, loadFixture(t)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", " src=", " href=", "@import", "url(", "<link", "<iframe", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q: it must not load or run anything", bad)
		}
	}
	if n := strings.Count(page, "http"); n != strings.Count(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("the page names a URL other than the SVG namespace")
	}
	want := map[string]string{
		"plot-latency-time": "p50 p99 max lateness p99",
		"plot-rate-time":    "offered sent 2xx",
		"plot-percentiles":  "service latency lateness",
		"plot-status-time":  "2xx 429 other errors dropped",
	}
	got := plotSeries(page)
	for id, names := range want {
		if g := strings.Join(got[id], " "); g != names {
			t.Errorf("%s draws %q, want %q", id, g, names)
		}
	}
	if len(got) != len(want) {
		t.Errorf("plots %v", got)
	}
}

// TestHTMLEscapesTheRecord: free text from a record (label, target,
// partial reason, bottleneck notes) is text on the page, never markup.
func TestHTMLEscapesTheRecord(t *testing.T) {
	r := loadFixture(t)
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	r.Settings.Label, r.Settings.Target, r.Settings.Mix = evil, evil, evil
	r.Partial, r.PartialReason = true, record.StopReason(evil)
	r.Bottleneck.Notes = append(r.Bottleneck.Notes, evil)
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "<img"} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("the record's text reached the page as markup (%q)", bad)
		}
	}
	if !strings.Contains(b.String(), "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the label is not shown, escaped")
	}
}

// TestHTMLOfLittleData: a record with nothing measured, and a merged one,
// still render, saying so.
func TestHTMLOfLittleData(t *testing.T) {
	empty := recordtest.MustRecord(t, recordtest.Run(t0, 0, map[string]*record.Stats{}), record.Settings{Label: "empty"})
	empty.Timeline = nil
	var b bytes.Buffer
	if err := WriteHTML(&b, empty); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), ">no data</text>"); got != 4 {
		t.Errorf("an empty record shows %d empty plots, want 4", got)
	}
	if !strings.Contains(b.String(), "no completed sends") {
		t.Error("an empty record's status table does not say it is empty")
	}

	mk := func(shard string) *record.Record {
		return recordtest.RoundTrip(t, recordtest.MustRecord(t, recordtest.Run(t0, 5*time.Second, map[string]*record.Stats{
			"Create": recordtest.Sends(50, func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }, recordtest.Every(10, record.Class429)),
		}), record.Settings{Label: "m", Shard: shard}))
	}
	m, err := record.Merge(mk("1/2"), mk("2/2"))
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteHTML(&b, m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 generators merged", "an upper bound", "1/2", "2/2"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("a merged record's page lacks %q", want)
		}
	}
}

func TestAxes(t *testing.T) {
	for _, c := range []struct {
		name     string
		min, max float64
		log      bool
		ticks    string
	}{
		// A narrow range is linear from 0, in round steps.
		{"narrow", 1500, 9000, false, "0 2ms 4ms 6ms 8ms 10ms"},
		// Over a factor of 20: log by decades, with 2 and 5 when few decades.
		{"wide, two decades", 2000, 90000, true, "1ms 2ms 5ms 10ms 20ms 50ms 100ms"},
		// Many decades: decades only.
		{"very wide", 3, 2_000_000, true, "1µs 10µs 100µs 1ms 10ms 100ms 1s 10s"},
		// Nothing to show: a placeholder linear axis.
		{"empty", math.Inf(1), 0, false, "0 200µs 400µs 600µs 800µs 1ms"},
	} {
		a := durationAxis(c.min, c.max)
		var labels []string
		for _, tk := range a.ticks {
			labels = append(labels, tk.label)
		}
		if a.log != c.log || strings.Join(labels, " ") != c.ticks {
			t.Errorf("%s: log %v ticks %q, want log %v %q", c.name, a.log, strings.Join(labels, " "), c.log, c.ticks)
		}
		if lo, hi := a.frac(a.lo), a.frac(a.hi); lo != 0 || hi != 1 {
			t.Errorf("%s: the axis maps its ends to %v and %v", c.name, lo, hi)
		}
	}
	for _, c := range []struct {
		x, want float64
	}{
		{0.7, 1},   // below 1: 1
		{1.2, 2},   // to 2
		{3, 5},     // to 5
		{6, 10},    // to the next decade
		{200, 200}, // a nice number stays
	} {
		if got := niceStep(c.x); got != c.want {
			t.Errorf("niceStep(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

// TestRatePlotDrainAndAxis: a 60 s run at 300/s whose last 41 answers came
// in a 0.1 s drain after the schedule. The rate plot divides each bucket
// by its real width, the drain folded into the last second (no 410/s
// spike: the y axis stays at 400), and its x axis ends at the run's end,
// 60.1 s (not rounded up to 80 s).
func TestRatePlotDrainAndAxis(t *testing.T) {
	r := &record.Record{}
	for s := 1; s <= 60; s++ {
		r.Timeline = append(r.Timeline, record.Tick{T: s, Span: 1, Offered: 300, Sent: 300, Completed: 300, OK: 300})
	}
	r.Timeline = append(r.Timeline, record.Tick{T: 61, Span: 0.1, Completed: 41, OK: 41})
	for name, svg := range map[string]string{"rate": string(rateTimePlot(r)), "status": string(statusTimePlot(r))} {
		for _, bad := range []string{">500</text>", ">80s</text>"} {
			if strings.Contains(svg, bad) {
				t.Errorf("%s plot has a %s label: a drain spike or an axis past the run", name, bad)
			}
		}
		if !strings.Contains(svg, ">400</text>") || !strings.Contains(svg, ">60s</text>") {
			t.Errorf("%s plot lacks the 400/s or 60s label", name)
		}
	}
	if a := timeAxis(r); a.hi != 60.1 {
		t.Errorf("time axis ends at %g, want the run's end 60.1", a.hi)
	}
}
