package e2e

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReportRendersInChromium renders the HTML report of flood's fixture
// record with the crowd binary (`crowd report … -o report.html`), opens the
// file in headless Chromium and checks that the plots drew: every plot has
// the series it should, each a path with a non-empty bounding box inside
// the plot, and a full-page screenshot is a sound PNG in which each
// series' colour is actually painted inside its plot's frame.
func TestReportRendersInChromium(t *testing.T) {
	t.Parallel()
	RequireTools(t, "chromium")
	bin := BuildCrowd(t)
	record := filepath.Join(ModuleRoot(t), "flood", "report", "testdata", "report.json")
	dir := t.TempDir()
	html := filepath.Join(dir, "report.html")
	if out, err := exec.Command(bin, "report", record, "-o", html).CombinedOutput(); err != nil {
		t.Fatalf("crowd report: %v\n%s", err, out)
	}

	browser := startChromium(t)
	page := browser.open(t, (&url.URL{Scheme: "file", Path: html}).String())
	page.waitUntil(t, `document.readyState === "complete" && document.querySelectorAll("svg.plot").length === 4`)

	type seriesView struct {
		Name    string  `json:"name"`
		X, Y    float64 // bounding box, in the SVG's user units
		W, H    float64
		Length  float64 `json:"length"`
		Color   string  `json:"color"`
		Opacity string  `json:"opacity"`
	}
	type plotView struct {
		ID     string       `json:"id"`
		Frame  rect         `json:"frame"` // the plot area, in page pixels
		Series []seriesView `json:"series"`
	}
	var plots []plotView
	page.eval(t, `JSON.stringify([...document.querySelectorAll("svg.plot")].map(svg => {
		const f = svg.querySelector("rect.frame").getBoundingClientRect();
		return {
			id: svg.id,
			frame: {x: f.left + scrollX, y: f.top + scrollY, w: f.width, h: f.height},
			series: [...svg.querySelectorAll("path.series")].map(p => {
				const b = p.getBBox();
				return {name: p.dataset.series, X: b.x, Y: b.y, W: b.width, H: b.height, length: p.getTotalLength(),
					color: p.getAttribute("stroke") === "none" ? p.getAttribute("fill") : p.getAttribute("stroke"),
					opacity: p.getAttribute("stroke-opacity") || "1"};
			}),
		};
	}))`, &plots)

	want := []struct {
		id     string
		series string
	}{
		{"plot-latency-time", "p50 p99 max lateness p99"},
		{"plot-rate-time", "offered sent 2xx"},
		{"plot-percentiles", "service latency lateness"},
		{"plot-status-time", "2xx 429 other errors dropped"},
	}
	if len(plots) != len(want) {
		t.Fatalf("%d plots, want %d", len(plots), len(want))
	}

	shot := page.screenshotFull(t)
	shotPath := filepath.Join(dir, "report.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot %s: %v", shotPath, err)
	}
	if b := img.Bounds(); b.Dx() < 900 || b.Dy() < 1500 || len(shot) < 50_000 {
		t.Errorf("screenshot %s is %dx%d, %d bytes: not the whole page", shotPath, b.Dx(), b.Dy(), len(shot))
	}
	if sd := lumaStdDev(img, img.Bounds()); sd < 10 {
		t.Errorf("screenshot %s is nearly blank (luminance std dev %.1f)", shotPath, sd)
	}

	for i, w := range want {
		p := plots[i]
		var names []string
		for _, s := range p.Series {
			names = append(names, s.Name)
		}
		if p.ID != w.id || strings.Join(names, " ") != w.series {
			t.Errorf("plot %d is %s drawing %q, want %s drawing %q", i, p.ID, names, w.id, w.series)
			continue
		}
		if p.Frame.W < 500 || p.Frame.H < 150 {
			t.Errorf("%s: plot area %+v is too small to read", p.ID, p.Frame)
		}
		// Inside the frame, a few pixels in: no axis, no legend, only data
		// on white, the warm-up band and the light grid.
		inner := image.Rect(int(p.Frame.X)+3, int(p.Frame.Y)+3, int(p.Frame.X+p.Frame.W)-3, int(p.Frame.Y+p.Frame.H)-3)
		for _, s := range p.Series {
			if s.W <= 0 || s.H <= 0 || s.Length <= 0 {
				t.Errorf("%s %s: bounding box %gx%g, length %g: nothing drawn", p.ID, s.Name, s.W, s.H, s.Length)
			}
			if s.X < 0 || s.Y < 0 || s.X+s.W > 960.5 || s.Y+s.H > 320.5 {
				t.Errorf("%s %s: drawn outside the plot: box %g,%g %gx%g", p.ID, s.Name, s.X, s.Y, s.W, s.H)
			}
			c, err := paintedColor(s.Color, s.Opacity)
			if err != nil {
				t.Errorf("%s %s: %v", p.ID, s.Name, err)
				continue
			}
			if n := countNear(img, inner, c, 40); n < 30 {
				t.Errorf("%s %s: only %d pixels of its colour %v inside the plot in %s", p.ID, s.Name, n, c, shotPath)
			}
		}
	}
	if t.Failed() {
		t.Logf("the page is %s, its screenshot %s", html, shotPath)
	}
}

// rect is a box in page pixels.
type rect struct{ X, Y, W, H float64 }

// paintedColor is the RGB a "#rrggbb" colour at an opacity shows on white.
func paintedColor(hex, opacity string) ([3]float64, error) {
	var c [3]float64
	if len(hex) != 7 || hex[0] != '#' {
		return c, fmt.Errorf("colour %q is not #rrggbb", hex)
	}
	a, err := strconv.ParseFloat(opacity, 64)
	if err != nil {
		return c, fmt.Errorf("opacity %q: %v", opacity, err)
	}
	for i := range 3 {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			return c, fmt.Errorf("colour %q: %v", hex, err)
		}
		c[i] = float64(v)*a + 255*(1-a)
	}
	return c, nil
}

// countNear counts the pixels in r within distance d (RGB) of c.
func countNear(img image.Image, r image.Rectangle, c [3]float64, d float64) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			dr, dg, db := float64(pr>>8)-c[0], float64(pg>>8)-c[1], float64(pb>>8)-c[2]
			if dr*dr+dg*dg+db*db <= d*d {
				n++
			}
		}
	}
	return n
}

// lumaStdDev is the standard deviation of the pixels' luminance in r.
func lumaStdDev(img image.Image, r image.Rectangle) float64 {
	var sum, sq, n float64
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			l := (0.299*float64(pr) + 0.587*float64(pg) + 0.114*float64(pb)) / 257
			sum += l
			sq += l * l
			n++
		}
	}
	if n == 0 {
		return 0
	}
	mean := sum / n
	return math.Sqrt(math.Max(0, sq/n-mean*mean))
}
