package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH                      = 960, 320
	plotLeft, plotRight               = 72, 20
	plotTop, plotBottom               = 34, 44
	plotInnerW                        = plotW - plotLeft - plotRight
	plotInnerH                        = plotH - plotTop - plotBottom
	gridColor, axisColor, warmupColor = "#e3e3e3", "#888", "#f1f1f1"
)

// axis maps data values onto one side of the plot; a log axis maps
// log10(value).
type axis struct {
	lo, hi float64 // data range (for a log axis: positive)
	log    bool
	ticks  []axisTick
}

type axisTick struct {
	v     float64
	label string
}

// frac is where v lies between lo (0) and hi (1).
func (a axis) frac(v float64) float64 {
	lo, hi := a.lo, a.hi
	if a.log {
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	if hi == lo {
		return 0
	}
	return (v - lo) / (hi - lo)
}

// linearAxis is 0 .. a round number above max, with ticks at 1, 2 or 5
// × 10^k steps.
func linearAxis(max float64, label func(float64) string) axis {
	if max <= 0 {
		max = 1
	}
	step := niceStep(max / 5)
	hi := math.Ceil(max/step) * step
	a := axis{lo: 0, hi: hi}
	for i := 0; float64(i)*step <= hi*(1+1e-9); i++ {
		v := float64(i) * step
		a.ticks = append(a.ticks, axisTick{v, label(v)})
	}
	return a
}

// niceStep is the smallest of 1, 2, 5 × 10^k that is at least x.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// durationAxis is a y axis for microsecond values from min to max: a log
// axis by decades when they span more than a factor of 20, else linear from 0.
func durationAxis(min, max float64) axis {
	if max <= 0 {
		return linearAxis(1000, usLabel)
	}
	min = math.Max(min, 1)
	if max/min <= 20 {
		return linearAxis(max, usLabel)
	}
	lo := math.Pow(10, math.Floor(math.Log10(min)))
	hi := math.Pow(10, math.Ceil(math.Log10(max)))
	a := axis{lo: lo, hi: hi, log: true}
	decades := math.Log10(hi / lo)
	for d := lo; d <= hi*(1+1e-9); d *= 10 {
		a.ticks = append(a.ticks, axisTick{d, usLabel(d)})
		if decades <= 2 && d < hi {
			a.ticks = append(a.ticks, axisTick{2 * d, usLabel(2 * d)}, axisTick{5 * d, usLabel(5 * d)})
		}
	}
	return a
}

// usLabel labels a microsecond value compactly: 500µs, 20ms, 1.5s.
func usLabel(us float64) string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	switch {
	case us == 0:
		return "0"
	case us < 1000:
		return g(us) + "µs"
	case us < 1e6:
		return g(us/1e3) + "ms"
	}
	return g(us/1e6) + "s"
}

// numLabel labels a count or rate.
func numLabel(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// secondsLabel labels a time axis value in seconds.
func secondsLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + "s" }

// series is one line (or stacked area) of a plot.
type series struct {
	name, color string
	dash        bool
	wide        bool    // drawn wide and translucent, under a line that may cover it
	pts         []point // a NaN y breaks the line
}

type point struct{ x, y float64 }

// svgPlot draws one plot: frame, grid, shaded bands, lines or stacked bars,
// legend.
type svgPlot struct {
	id, title    string
	x, y         axis
	xName, yName string
	bands        [][2]float64 // shaded x ranges (the warm-up)
	lines        []series
	bars         []series  // stacked in order: pts[i] is a bar from x-barHalf[i] to x+barHalf[i]
	barHalf      []float64 // half the width of bar i, in x units
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func (p *svgPlot) px(v float64) float64 { return plotLeft + p.x.frac(v)*plotInnerW }

func (p *svgPlot) py(v float64) float64 { return plotTop + (1-p.y.frac(v))*plotInnerH }

// inY reports whether v can be drawn on the y axis.
func (p *svgPlot) inY(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!p.y.log || v > 0)
}

// render draws the plot as one <svg> element: the frame and grid under the
// data, the legend above the frame.
func (p *svgPlot) render() template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`+"\n",
		p.id, plotW, plotH, plotW, plotH, esc(p.title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#fff"/>`+"\n", plotW, plotH)
	p.writeBands(&b)
	p.writeGrid(&b)
	p.writeData(&b)
	p.writeLegend(&b)
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// esc escapes text for an SVG attribute or element.
func esc(s string) string { return template.HTMLEscapeString(s) }

// writeBands shades the bands, clipped to the x axis.
func (p *svgPlot) writeBands(b *strings.Builder) {
	for _, band := range p.bands {
		x0, x1 := p.px(math.Max(band[0], p.x.lo)), p.px(math.Min(band[1], p.x.hi))
		if x1 > x0 {
			fmt.Fprintf(b, `<rect class="warmup" x="%s" y="%d" width="%s" height="%d" fill="%s"/>`+"\n",
				f1(x0), plotTop, f1(x1-x0), plotInnerH, warmupColor)
		}
	}
}

// writeGrid draws a grid line and label per tick of each axis, the axis
// names and the frame.
func (p *svgPlot) writeGrid(b *strings.Builder) {
	b.WriteString(`<g class="grid" font-size="11" fill="#444">` + "\n")
	for _, t := range p.y.ticks {
		y := p.py(t.v)
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s"/><text x="%d" y="%s" text-anchor="end">%s</text>`+"\n",
			plotLeft, f1(y), plotW-plotRight, f1(y), gridColor, plotLeft-6, f1(y+4), esc(t.label))
	}
	for _, t := range p.x.ticks {
		x := p.px(t.v)
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s"/><text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n",
			f1(x), plotTop, f1(x), plotTop+plotInnerH, gridColor, f1(x), plotTop+plotInnerH+16, esc(t.label))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", plotLeft+plotInnerW/2, plotH-8, esc(p.xName))
	fmt.Fprintf(b, `<text x="14" y="%d" text-anchor="middle" transform="rotate(-90 14 %d)">%s</text>`+"\n",
		plotTop+plotInnerH/2, plotTop+plotInnerH/2, esc(p.yName))
	b.WriteString("</g>\n")
	fmt.Fprintf(b, `<rect class="frame" x="%d" y="%d" width="%d" height="%d" fill="none" stroke="%s"/>`+"\n",
		plotLeft, plotTop, plotInnerW, plotInnerH, axisColor)
}

// writeData draws the bars, then the lines over them; a plot with nothing
// to draw says "no data" rather than showing an empty frame.
func (p *svgPlot) writeData(b *strings.Builder) {
	b.WriteString(`<g class="data">` + "\n")
	drawn := 0
	for _, s := range p.barPaths() {
		drawn++
		fmt.Fprintf(b, `<path class="series" data-series="%s" d="%s" fill="%s" stroke="none"/>`+"\n", esc(s.name), s.d, s.color)
	}
	for _, s := range p.lines {
		d := p.linePath(s)
		if d == "" {
			continue
		}
		drawn++
		fmt.Fprintf(b, `<path class="series" data-series="%s" d="%s" fill="none" stroke="%s"%s stroke-linejoin="round"/>`+"\n",
			esc(s.name), d, s.color, lineStyle(s))
	}
	b.WriteString("</g>\n")
	if drawn == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-size="14" fill="#888">%s</text>`+"\n",
			plotLeft+plotInnerW/2, plotTop+plotInnerH/2, "no data")
	}
}

// barPath is the outline of one bar series: a rectangle per x.
type barPath struct{ name, color, d string }

// barPaths stacks the bar series in order, each on the ones before it; a
// series with no positive value has no path.
func (p *svgPlot) barPaths() []barPath {
	if len(p.bars) == 0 {
		return nil
	}
	var out []barPath
	base := make([]float64, len(p.bars[0].pts))
	for _, s := range p.bars {
		var d strings.Builder
		for i, pt := range s.pts {
			if pt.y <= 0 || math.IsNaN(pt.y) {
				continue
			}
			half := p.barHalf[i]
			x0, x1 := p.px(pt.x-half), p.px(pt.x+half)
			y0, y1 := p.py(base[i]), p.py(base[i]+pt.y)
			fmt.Fprintf(&d, "M%s %sH%sV%sH%sZ", f1(x0), f1(y0), f1(x1), f1(y1), f1(x0))
			base[i] += pt.y
		}
		if d.Len() > 0 {
			out = append(out, barPath{s.name, s.color, d.String()})
		}
	}
	return out
}

// linePath is the path of one line series, clamped to the y axis; a point
// the axis cannot show lifts the pen. Empty when no point can be drawn.
func (p *svgPlot) linePath(s series) string {
	var d strings.Builder
	pen := false
	for _, pt := range s.pts {
		if !p.inY(pt.y) {
			pen = false
			continue
		}
		op := "L"
		if !pen {
			op = "M"
		}
		fmt.Fprintf(&d, "%s%s %s", op, f1(p.px(pt.x)), f1(p.py(math.Min(math.Max(pt.y, p.y.lo), p.y.hi))))
		pen = true
	}
	return d.String()
}

// lineStyle is the stroke of a line series, the same on the plot and in
// the legend: wide and translucent, else 2 units, dashed if asked.
func lineStyle(s series) string {
	switch {
	case s.wide:
		return ` stroke-width="6" stroke-opacity="0.45"`
	case s.dash:
		return ` stroke-width="2" stroke-dasharray="6 4"`
	}
	return ` stroke-width="2"`
}

// writeLegend names every series above the frame, left to right, bars
// first.
func (p *svgPlot) writeLegend(b *strings.Builder) {
	b.WriteString(`<g class="legend" font-size="12" fill="#222">` + "\n")
	x := plotLeft
	for _, s := range append(append([]series{}, p.bars...), p.lines...) {
		style := lineStyle(s)
		if isBar(p, s) {
			style = ` stroke-width="8"`
		}
		fmt.Fprintf(b, `<line x1="%d" y1="16" x2="%d" y2="16" stroke="%s"%s/><text x="%d" y="20">%s</text>`+"\n",
			x, x+22, s.color, style, x+28, esc(s.name))
		x += 28 + 7*len([]rune(s.name)) + 22
	}
	b.WriteString("</g>\n")
}

func isBar(p *svgPlot, s series) bool {
	for _, b := range p.bars {
		if b.name == s.name {
			return true
		}
	}
	return false
}
