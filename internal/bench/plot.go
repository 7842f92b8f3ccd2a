package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/report"
)

// PlotFormat is the image format a --plot path names by its extension:
// "svg" or "png". Any other extension is an error (a usage error for the
// CLI), so a typo is caught before the run, not after it.
func PlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--plot %q: want a file ending in .svg or .png", path)
	}
}

// Series is one line of the plot: a variant with one launch kind (and
// dtype, op and mode when the report has several of them), its passing
// timed cases by size.
type Series struct {
	Label   string
	Variant string
	Graph   bool
	Bytes   []int64
	TimeUS  []float64
	BusBW   []float64
}

// BuildSeries groups a report's passing, timed cases into lines, in the
// order they first appear, sorted by size within a line. Failed and skipped
// cases are left out: a wrong kernel's time is not a result.
func BuildSeries(r *report.Report) []Series {
	type key struct{ variant, dtype, op, mode string }
	groups := map[string]bool{}
	for i := range r.Cases {
		c := &r.Cases[i]
		rest, _ := splitLaunch(c.Mode)
		groups[c.DType+" "+c.Op+" "+rest] = true
	}
	index := map[key]int{}
	var out []Series
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Verdict != report.Pass || c.TimeUS <= 0 {
			continue
		}
		rest, launch := splitLaunch(c.Mode)
		k := key{c.Variant, c.DType, c.Op, c.Mode}
		j, ok := index[k]
		if !ok {
			label := c.Variant + " " + launch
			if len(groups) > 1 {
				label += fmt.Sprintf(" (%s %s %s)", c.DType, c.Op, rest)
			}
			j = len(out)
			index[k] = j
			out = append(out, Series{Label: label, Variant: c.Variant, Graph: launch == "graph"})
		}
		s := &out[j]
		s.Bytes = append(s.Bytes, c.Bytes)
		s.TimeUS = append(s.TimeUS, c.TimeUS)
		s.BusBW = append(s.BusBW, c.BusBW)
	}
	for i := range out {
		sortBySize(&out[i])
	}
	return out
}

func sortBySize(s *Series) {
	idx := make([]int, len(s.Bytes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(s.Bytes[a] - s.Bytes[b]) })
	bytes, times, bws := make([]int64, len(idx)), make([]float64, len(idx)), make([]float64, len(idx))
	for i, j := range idx {
		bytes[i], times[i], bws[i] = s.Bytes[j], s.TimeUS[j], s.BusBW[j]
	}
	s.Bytes, s.TimeUS, s.BusBW = bytes, times, bws
}

// splitLaunch cuts the launch word (plain or graph) out of a mode.
func splitLaunch(mode string) (rest, launch string) {
	launch = "plain"
	var kept []string
	for _, w := range strings.Split(mode, "-") {
		if w == "plain" || w == "graph" {
			launch = w
			continue
		}
		kept = append(kept, w)
	}
	return strings.Join(kept, "-"), launch
}

// Plot size: two panels side by side, wide enough for a legend of ten
// lines beside the data.
const (
	plotWidth  = 12 * vg.Inch
	plotHeight = 5 * vg.Inch
	plotDPI    = 110 // PNG: about 1320 x 550 pixels
)

// ErrNothingToPlot: no case passed with a time.
var ErrNothingToPlot = errors.New("nothing to plot: no case passed with a time")

// WritePlot draws time and bus bandwidth against size, log-log, one line
// per variant and launch kind (NCCL included), into path (.svg or .png),
// atomically. A panel with no positive value (busbw on one rank) is left
// out; with nothing at all to draw, it returns ErrNothingToPlot and writes
// nothing. A panic inside the plotting library comes back as an error.
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
	series := BuildSeries(r)
	if len(series) == 0 {
		return fmt.Errorf("--plot %s: %w", path, ErrNothingToPlot)
	}
	var panels []*plot.Plot
	for _, pp := range []struct {
		what, ylabel string
		value        func(*Series) []float64
	}{
		{"time", "time per call (us)", func(s *Series) []float64 { return s.TimeUS }},
		{"bus bandwidth", "busbw (GB/s)", func(s *Series) []float64 { return s.BusBW }},
	} {
		p, err := panel(series, &r.Header, pp.what, pp.ylabel, pp.value)
		if errors.Is(err, ErrNothingToPlot) {
			continue
		}
		if err != nil {
			return fmt.Errorf("--plot %s: %w", path, err)
		}
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return fmt.Errorf("--plot %s: %w", path, ErrNothingToPlot)
	}
	var cw vg.CanvasWriterTo
	if format == "svg" {
		cw = vgsvg.New(plotWidth, plotHeight)
	} else {
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))}
	}
	dc := draw.New(cw)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	return report.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := cw.WriteTo(w)
		return err
	})
}

// panel is one log-log plot of value(series) against size. Points that are
// not positive (busbw of a single rank) cannot sit on a log axis and are
// left out.
func panel(series []Series, h *report.Header, what, ylabel string, value func(*Series) []float64) (*plot.Plot, error) {
	p := plot.New()
	title := fmt.Sprintf("allreduce %s, %d %s, %s backend", what, h.Ranks, plural(h.Ranks, "rank", "ranks"), orUnknown(h.Backend))
	if h.Backend == "host" {
		title += " (CPU models, not GPU times)"
	}
	p.Title.Text = title
	p.X.Label.Text = "size (bytes)"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	// Inside the data area, clear of the axes and the title.
	p.Legend.XOffs, p.Legend.YOffs = 3*vg.Millimeter, -3*vg.Millimeter
	p.Add(plotter.NewGrid())

	colors := map[string]int{}
	var minX, maxX float64 = math.Inf(1), 0
	var minY, maxY float64 = math.Inf(1), 0
	drawn := 0
	for i := range series {
		s := &series[i]
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
		ci, ok := colors[s.Variant]
		if !ok {
			ci = len(colors)
			colors[s.Variant] = ci
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Label, err)
		}
		line.Color = plotutil.Color(ci)
		line.Width = vg.Points(1.5)
		if !s.Graph {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)} // plain launches dashed, graphs solid
		}
		points.Color = plotutil.Color(ci)
		points.Shape = plotutil.Shape(ci)
		p.Add(line, points)
		p.Legend.Add(s.Label, line, points)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%s: %w", ylabel, ErrNothingToPlot)
	}
	p.X.Tick.Marker = sizeTicks{}
	if minX == maxX { // one size: give the log axis a range
		minX, maxX = minX/2, maxX*2
	}
	p.X.Min, p.X.Max = minX, maxX
	// One value: a log axis needs a range, and gonum's own padding of an
	// empty range can reach zero, which a log scale cannot show.
	if minY == maxY {
		minY, maxY = minY/2, maxY*2
	}
	p.Y.Min, p.Y.Max = minY, maxY
	return p, nil
}

// sizeTicks labels powers of two with binary units (4B, 1KiB, 64MiB), at
// most about eight labels, with unlabelled minor ticks at the other powers
// of two.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	first := int(math.Floor(math.Log2(lo)))
	last := int(math.Ceil(math.Log2(hi)))
	const maxLabels = 8
	step := 1
	for (last-first)/step+1 > maxLabels {
		step *= 2
	}
	var ticks []plot.Tick
	for e := first; e <= last; e++ {
		v := math.Ldexp(1, e)
		if v < lo || v > hi {
			continue
		}
		t := plot.Tick{Value: v}
		if e%step == 0 {
			t.Label = cases.FormatSize(int64(v))
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
