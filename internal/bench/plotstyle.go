package bench

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/artest/artest/internal/report"
)

// The colours tell whose a line is: each of artest's own variants has a
// hue of its own; NCCL's modes are greys and the plugins' variants
// browns, so the field reads as one family beside the variants it is
// measured against. The line style tells the launch kind (plain launches
// dashed, graph replays solid), the marker the variant, or the dtype, op
// and mode when a report has several.
var (
	// No orange: beside the plugins' ochres (0xd9a441, 0xb5651d) it read as
	// one of them (seen in the 2-H200 field plot, twoshot against
	// trtllm:oneshot).
	ownColors = []color.Color{
		rgb(0x1f77b4), // blue
		rgb(0xc51b7d), // magenta
		rgb(0x2ca02c), // green
		rgb(0xd62728), // red
		rgb(0x9467bd), // purple
		rgb(0x17becf), // cyan
		rgb(0xe377c2), // pink
		rgb(0xbcbd22), // olive
		rgb(0x393b79), // indigo
	}
	ncclColors = []color.Color{rgb(0x303030), rgb(0x7a7a7a), rgb(0xb0b0b0)} // in NCCLBaselines' order
	// Browns and ochres, neighbours far apart in lightness or hue: with
	// three plugins' variants in one plot the first four browns of the
	// earlier palette were hard to tell apart.
	pluginColors = []color.Color{rgb(0x8c564b), rgb(0xd9a441), rgb(0x4a2c17), rgb(0xd2a38c), rgb(0xb5651d), rgb(0x7f6a3a), rgb(0xe6cfa8), rgb(0x6b3d3d)}

	ownShapes    = []draw.GlyphDrawer{draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}}
	fieldShapes  = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	groupShapes  = []draw.GlyphDrawer{draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	plainDashes  = []vg.Length{vg.Points(5), vg.Points(3)}
	ownWidth     = vg.Points(1.6)
	ncclWidth    = vg.Points(2.2)
	pluginWidth  = vg.Points(1.6)
	glyphRadius  = vg.Points(2.6)
	referenceRGB = rgb(0x000000)
)

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// variantStyle is how one variant's lines are drawn.
type variantStyle struct {
	Color color.Color
	Shape draw.GlyphDrawer
	Width vg.Length
}

// variantStyles gives each variant of series its colour, marker and line
// width: own variants the hues of ownColors in order of first appearance
// (past the ninth, the hues repeat with the next marker), NCCL's modes
// their grey, plugins' variants the browns in order of first appearance.
func variantStyles(series []Series) map[string]variantStyle {
	out := map[string]variantStyle{}
	var own, plugins int
	for i := range series {
		s := &series[i]
		if _, ok := out[s.Variant]; ok {
			continue
		}
		var st variantStyle
		switch s.Kind {
		case report.NCCLMode:
			j := ncclIndex(s.Variant)
			st = variantStyle{ncclColors[j%len(ncclColors)], fieldShapes[j%len(fieldShapes)], ncclWidth}
		case report.PluginVariant:
			st = variantStyle{pluginColors[plugins%len(pluginColors)], fieldShapes[plugins%len(fieldShapes)], pluginWidth}
			plugins++
		default:
			// Past the last hue, the next marker keeps the pair unique.
			shape := ownShapes[(own%len(ownColors)+own/len(ownColors))%len(ownShapes)]
			st = variantStyle{ownColors[own%len(ownColors)], shape, ownWidth}
			own++
		}
		out[s.Variant] = st
	}
	return out
}

func ncclIndex(variant string) int {
	for i, v := range report.NCCLBaselines {
		if v == variant {
			return i
		}
	}
	return 0
}

// lineStyle is the line of a series: its variant's colour and width,
// dashed for plain launches.
func lineStyle(st variantStyle, graph bool) draw.LineStyle {
	ls := draw.LineStyle{Color: st.Color, Width: st.Width}
	if !graph {
		ls.Dashes = plainDashes
	}
	return ls
}

// thumb is a legend entry's picture: a line across it and a marker in the
// middle; either may be absent.
type thumb struct {
	line  *draw.LineStyle
	glyph *draw.GlyphStyle
}

func (t thumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	if t.line != nil {
		c.StrokeLine2(*t.line, c.Min.X, y, c.Max.X, y)
	}
	if t.glyph != nil {
		c.DrawGlyph(*t.glyph, c.Center())
	}
}

// valueTicks marks a log axis of times, bandwidths or gains: powers of ten
// labelled, with unlabelled ticks at 2 to 9 times each; where the axis
// spans at most two decades, 2 and 5 times a power of ten are labelled
// too, and where that still leaves fewer than two labels, every tick is.
type valueTicks struct{}

func (valueTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	first := int(math.Floor(math.Log10(lo)))
	last := int(math.Ceil(math.Log10(hi)))
	few := hi/lo <= 100
	var ticks []plot.Tick
	labels := 0
	for e := first; e <= last; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, float64(e))
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || few && (m == 2 || m == 5) {
				t.Label = formatTick(v, e)
				labels++
			}
			ticks = append(ticks, t)
		}
	}
	if labels < 2 {
		for i := range ticks {
			ticks[i].Label = formatTick(ticks[i].Value, int(math.Floor(math.Log10(ticks[i].Value)+1e-9)))
		}
	}
	return ticks
}

// formatTick writes v, a multiple of 10^e, with as many decimals as e
// needs and no more.
func formatTick(v float64, e int) string {
	if e >= 0 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.*f", -e, v)
}
