package bench

import (
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/artest/artest/internal/report"
)

// Plot size: up to three panels side by side, the legend to their right.
const (
	plotWidth  = 16 * vg.Inch
	plotHeight = 5.5 * vg.Inch
	plotDPI    = 110 // PNG: about 1760 x 605 pixels
)

// Layout lengths of the figure.
var (
	figurePad          = 3 * vg.Millimeter
	panelGap           = 8 * vg.Millimeter
	legendFontSize     = vg.Points(11)
	minLegendFont      = vg.Points(6)
	titleFontSize      = vg.Points(13)
	panelTitleFontSize = vg.Points(12)
)

// ErrNothingToPlot: no case passed with a time.
var ErrNothingToPlot = errors.New("nothing to plot: no case passed with a time")

// WritePlot draws the figure of a bench run into path (.svg or .png),
// atomically: time per call and bus bandwidth against size, log-log, one
// line per variant and launch kind (NCCL and plugins included), and, when
// some own variant has a fieldbest (report.FieldBests), each own variant's
// gain over it; one legend to the right of the panels. A panel with no
// positive value (busbw on one rank) is left out; with nothing at all to
// draw, it returns ErrNothingToPlot and writes nothing. A panic inside the
// plotting library comes back as an error.
func WritePlot(path string, r *report.Report) error {
	return writePlotGuarded(path, func() error { return writePlot(path, r) })
}

// writePlotGuarded runs draw and turns a panic in it (gonum/plot panics on
// data it cannot scale) into an error naming the plot.
func writePlotGuarded(path string, draw func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("--plot %s: drawing failed: %v", path, p)
		}
	}()
	return draw()
}

func writePlot(path string, r *report.Report) error {
	format, err := PlotFormat(path)
	if err != nil {
		return err
	}
	f, err := buildFigure(r)
	if err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	var cw vg.CanvasWriterTo
	if format == "svg" {
		cw = vgsvg.New(plotWidth, plotHeight)
	} else {
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))}
	}
	f.draw(draw.New(cw))
	return report.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := cw.WriteTo(w)
		return err
	})
}

// Panel kinds, in the order they are drawn.
const (
	panelTime  = "time"
	panelBusBW = "busbw"
	panelGain  = "gain"
)

// panel is one plot of the figure. Its title is drawn by the figure, at
// the same height over every panel.
type panel struct {
	kind, title string
	plot        *plot.Plot
}

// figure is what WritePlot draws: a title, the panels side by side, and
// one legend for all of them to their right, outside every data area.
type figure struct {
	title  string
	panels []panel
	legend legend
	styles map[string]variantStyle // by variant
	series []Series
}

// buildFigure makes r's figure; ErrNothingToPlot when no case passed with
// a time.
func buildFigure(r *report.Report) (*figure, error) {
	series := BuildSeries(r)
	if len(series) == 0 {
		return nil, ErrNothingToPlot
	}
	f := &figure{series: series, styles: variantStyles(series)}
	h := &r.Header
	f.title = fmt.Sprintf("allreduce, %d %s, %s backend", h.Ranks, plural(h.Ranks, "rank", "ranks"), orUnknown(h.Backend))
	if h.Agg != "" {
		f.title += fmt.Sprintf("; time per call, the median of the repetitions, each the %s over ranks", h.Agg)
	}
	switch {
	case h.Backend == "host":
		f.title += " (CPU models, not GPU times)"
	case h.SharedGPUs != "":
		f.title += " (GPUs shared: " + h.SharedGPUs + "; the times mean nothing)"
	}
	multiGroup := false
	for i := range series {
		multiGroup = multiGroup || series[i].GroupIndex > 0
	}
	for _, spec := range []struct {
		kind, title, ylabel string
		value               func(*Series) []float64
	}{
		{panelTime, "time per call", "time per call (us)", func(s *Series) []float64 { return s.TimeUS }},
		{panelBusBW, "bus bandwidth", "busbw (GB/s)", func(s *Series) []float64 { return s.BusBW }},
		{panelGain, "gain over fieldbest, the fastest NCCL mode or plugin (>1: faster)", "fieldbest's time / variant's time", func(s *Series) []float64 { return s.Gain }},
	} {
		p, err := f.panel(spec.kind, spec.ylabel, spec.value, multiGroup)
		if errors.Is(err, ErrNothingToPlot) {
			continue
		}
		if err != nil {
			return nil, err
		}
		f.panels = append(f.panels, panel{spec.kind, spec.title, p})
	}
	if len(f.panels) == 0 {
		return nil, ErrNothingToPlot
	}
	f.legend = f.buildLegend(multiGroup)
	return f, nil
}

// panel is one log-log plot of value(series) against size. Points that are
// not positive (busbw of a single rank, a gain where no field entry
// passed) cannot sit on a log axis and are left out. The gain panel has
// artest's own variants only, and a line at 1: as fast as the fieldbest.
func (f *figure) panel(kind, ylabel string, value func(*Series) []float64, multiGroup bool) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text = "size (bytes)"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = sizeTicks{}, valueTicks{}
	p.Add(plotter.NewGrid())

	var minX, maxX float64 = math.Inf(1), 0
	var minY, maxY float64 = math.Inf(1), 0
	drawn := 0
	for i := range f.series {
		s := &f.series[i]
		if kind == panelGain && s.Kind != report.Own {
			continue
		}
		vals := value(s)
		var pts plotter.XYs
		for j, b := range s.Bytes {
			if vals[j] > 0 {
				pts = append(pts, plotter.XY{X: float64(b), Y: vals[j]})
				minX, maxX = min(minX, float64(b)), max(maxX, float64(b))
				minY, maxY = min(minY, vals[j]), max(maxY, vals[j])
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Label, err)
		}
		st := f.styles[s.Variant]
		line.LineStyle = lineStyle(st, s.Graph)
		points.GlyphStyle = f.glyph(s, multiGroup)
		p.Add(line, points)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%s: %w", ylabel, ErrNothingToPlot)
	}
	if minX == maxX { // one size: give the log axis a range
		minX, maxX = minX/2, maxX*2
	}
	p.X.Min, p.X.Max = minX, maxX
	if kind == panelGain {
		minY, maxY = min(minY, 1), max(maxY, 1)
		one, err := plotter.NewLine(plotter.XYs{{X: minX, Y: 1}, {X: maxX, Y: 1}})
		if err != nil {
			return nil, fmt.Errorf("gain 1: %w", err)
		}
		one.LineStyle = draw.LineStyle{Color: referenceRGB, Width: vg.Points(1.2)}
		p.Add(one)
	}
	// One value: a log axis needs a range, and gonum's own padding of an
	// empty range can reach zero, which a log scale cannot show. Otherwise
	// a little room keeps the extreme points off the frame.
	if minY == maxY {
		minY, maxY = minY/2, maxY*2
	} else {
		pad := math.Pow(maxY/minY, 0.03)
		minY, maxY = minY/pad, maxY*pad
	}
	p.Y.Min, p.Y.Max = minY, maxY
	return p, nil
}

// glyph is the marker of s: its variant's, or its group's when the report
// has several dtypes, ops or modes; in the variant's colour.
func (f *figure) glyph(s *Series, multiGroup bool) draw.GlyphStyle {
	st := f.styles[s.Variant]
	shape := st.Shape
	if multiGroup {
		shape = groupShapes[s.GroupIndex%len(groupShapes)]
	}
	return draw.GlyphStyle{Color: st.Color, Radius: glyphRadius, Shape: shape}
}

// buildLegend lists, under a heading each, artest's own variants, NCCL's
// modes and the plugins' variants (each once, in order of first
// appearance), then what the line styles mean, then the markers of the
// dtype, op and mode groups when there are several.
func (f *figure) buildLegend(multiGroup bool) legend {
	l := newLegend(legendFontSize)
	for _, sec := range []struct {
		kind    report.Kind
		heading string
	}{
		{report.Own, "artest variants"},
		{report.NCCLMode, "NCCL modes"},
		{report.PluginVariant, "plugins"},
	} {
		seen := map[string]bool{}
		for i := range f.series {
			s := &f.series[i]
			if s.Kind != sec.kind || seen[s.Variant] {
				continue
			}
			if len(seen) == 0 {
				l.heading(sec.heading)
			}
			seen[s.Variant] = true
			st := f.styles[s.Variant]
			ls := lineStyle(st, true)
			t := thumb{line: &ls}
			if !multiGroup {
				g := draw.GlyphStyle{Color: st.Color, Radius: glyphRadius, Shape: st.Shape}
				t.glyph = &g
			}
			l.add(s.Variant, t)
		}
	}
	l.heading("launch")
	graph := draw.LineStyle{Color: referenceRGB, Width: ownWidth}
	plain := graph
	plain.Dashes = plainDashes
	l.add("graph replays", thumb{line: &graph})
	l.add("plain launches", thumb{line: &plain})
	if multiGroup {
		l.heading("dtype op mode")
		seen := map[int]bool{}
		for i := range f.series {
			s := &f.series[i]
			if seen[s.GroupIndex] {
				continue
			}
			seen[s.GroupIndex] = true
			g := draw.GlyphStyle{Color: referenceRGB, Radius: glyphRadius, Shape: groupShapes[s.GroupIndex%len(groupShapes)]}
			l.add(s.Group, thumb{glyph: &g})
		}
	}
	return l
}

// figureLayout is where the parts of the figure go.
type figureLayout struct {
	title  vg.Point // start of the title's line (its vertical centre)
	panels []draw.Canvas
	// panelTitle is the vertical centre of the panels' titles, over the
	// highest data area.
	panelTitle vg.Length
	legend     vg.Rectangle // what the legend's rows cover
}

// layout places the figure on dc: the title on top, the legend in a column
// at the right (its font shrunk, down to minLegendFont, until it fits the
// height), the panels side by side in what is left, each with its title
// over its data area.
func (f *figure) layout(dc draw.Canvas) figureLayout {
	var out figureLayout
	ts := f.textStyle(titleFontSize)
	line := ts.FontExtents().Height
	titleBand := line + 2*figurePad
	out.title = vg.Point{X: dc.Min.X + figurePad, Y: dc.Max.Y - figurePad - line/2}

	top := dc.Max.Y - titleBand
	avail := top - dc.Min.Y - 2*figurePad
	lw, lh := f.legend.size()
	for lh > avail && f.legend.style.Font.Size > minLegendFont {
		f.legend.style.Font.Size -= vg.Points(0.5)
		lw, lh = f.legend.size()
	}
	out.legend = vg.Rectangle{
		Min: vg.Point{X: dc.Max.X - figurePad - lw, Y: top - figurePad - lh},
		Max: vg.Point{X: dc.Max.X - figurePad, Y: top - figurePad},
	}

	// The panels' titles take a row under the figure's title.
	panelTitleBand := f.textStyle(panelTitleFontSize).FontExtents().Height * 1.5
	area := draw.Crop(dc, 0, -(lw + 2*figurePad + panelGap), 0, -(titleBand + panelTitleBand))
	plots := make([]*plot.Plot, len(f.panels))
	for i, p := range f.panels {
		plots[i] = p.plot
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: panelGap, PadBottom: figurePad, PadLeft: figurePad, PadRight: figurePad}
	dataTop := func() vg.Length {
		var top vg.Length
		for i, p := range f.panels {
			top = max(top, p.plot.DataCanvas(out.panels[i]).Max.Y)
		}
		return top
	}
	// Align leaves room above the data for the tallest axis' labels; the
	// panels' titles are drawn over the data instead, so the area grows
	// until the data reach its first top (a few steps: Align spreads the
	// growth over the parts of each panel).
	target := area.Max.Y
	out.panels = plot.Align([][]*plot.Plot{plots}, tiles, area)[0]
	for range 3 {
		gap := target - dataTop()
		if gap < vg.Points(0.5) && gap > -vg.Points(0.5) {
			break
		}
		area.Max.Y += gap
		out.panels = plot.Align([][]*plot.Plot{plots}, tiles, area)[0]
	}
	out.panelTitle = dataTop() + panelTitleBand/2
	return out
}

// dataRect is the data area of panel i placed at c.
func (f *figure) dataRect(i int, c draw.Canvas) vg.Rectangle {
	return f.panels[i].plot.DataCanvas(c).Rectangle
}

func (f *figure) textStyle(size vg.Length) text.Style {
	return text.Style{Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler, YAlign: text.YCenter}
}

// draw draws the figure on dc.
func (f *figure) draw(dc draw.Canvas) {
	at := f.layout(dc)
	dc.FillText(f.textStyle(titleFontSize), at.title, f.title)
	pts := f.textStyle(panelTitleFontSize)
	pts.XAlign = text.XCenter
	for i, p := range f.panels {
		p.plot.Draw(at.panels[i])
		r := f.dataRect(i, at.panels[i])
		dc.FillText(pts, vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: at.panelTitle}, p.title)
	}
	f.legend.draw(dc, at.legend)
}
