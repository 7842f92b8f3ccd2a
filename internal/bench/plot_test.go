package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/artest/artest/internal/report"
)

// plotFixture: oneshot and nccl with plain and graph launches over a size
// sweep, plus a failed and a skipped case that must not be drawn.
func plotFixture() *report.Report {
	r := &report.Report{Header: report.Header{Tool: "artest", Ranks: 4, Backend: "cuda"}}
	for _, v := range []string{"oneshot", "nccl"} {
		for _, mode := range []string{"oop-reg-plain", "oop-reg-graph"} {
			for b := int64(1 << 10); b <= 256<<20; b *= 4 {
				us := 5 + float64(b)/100e3
				if v == "nccl" {
					us *= 1.3
				}
				c := timedCase(v+"/bf16/sum/"+mode, b, us)
				c.DType, c.Op, c.Mode = "bf16", "sum", mode
				r.Cases = append(r.Cases, c)
			}
		}
	}
	r.Cases = append(r.Cases,
		report.Case{ID: "twoshot/x", Variant: "twoshot", DType: "bf16", Op: "sum", Mode: "oop-reg-plain", Bytes: 1 << 20, Verdict: report.Fail, TimeUS: 9},
		report.Case{ID: "ring/x", Variant: "ring", DType: "bf16", Op: "sum", Mode: "oop-reg-plain", Bytes: 1 << 20, Verdict: report.Skipped},
	)
	return r
}

func TestBuildSeries(t *testing.T) {
	s := BuildSeries(plotFixture())
	var labels []string
	for _, x := range s {
		labels = append(labels, x.Label)
		require.Len(t, x.Bytes, 10, x.Label)
		require.IsIncreasing(t, x.Bytes, x.Label)
	}
	require.Equal(t, []string{"oneshot plain", "oneshot graph", "nccl plain", "nccl graph"}, labels, "failed and skipped cases are not drawn")
	require.True(t, s[1].Graph)
	require.Equal(t, []report.Kind{report.Own, report.Own, report.NCCLMode, report.NCCLMode}, []report.Kind{s[0].Kind, s[1].Kind, s[2].Kind, s[3].Kind})
	// oneshot's gain over nccl, the fieldbest: nccl's time is 1.3 times
	// oneshot's at every size; nccl itself has none.
	for i, g := range s[0].Gain {
		require.InDelta(t, 1.3, g, 1e-9, "size %d", s[0].Bytes[i])
	}
	require.Equal(t, make([]float64, 10), s[2].Gain)

	// Two dtypes: labels say which.
	r := plotFixture()
	extra := timedCase("oneshot/f32", 1<<10, 4)
	extra.DType, extra.Op, extra.Mode = "f32", "sum", "oop-reg-plain"
	r.Cases = append(r.Cases, extra)
	s = BuildSeries(r)
	require.Equal(t, "oneshot plain (bf16 sum oop-reg)", s[0].Label)
	require.Equal(t, "oneshot plain (f32 sum oop-reg)", s[len(s)-1].Label)
}

func TestWritePlot(t *testing.T) {
	dir := t.TempDir()
	t.Run("svg", func(t *testing.T) {
		p := filepath.Join(dir, "bench.svg")
		require.NoError(t, WritePlot(p, plotFixture()))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(b), "<svg")
		for _, want := range []string{"artest variants", "NCCL modes", "graph replays", "busbw (GB/s)", "gain over fieldbest"} {
			require.Contains(t, string(b), want)
		}
	})
	t.Run("png", func(t *testing.T) {
		p := filepath.Join(dir, "bench.PNG")
		require.NoError(t, WritePlot(p, plotFixture()))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(b))
		require.NoError(t, err)
		require.Greater(t, img.Bounds().Dx(), 1000)
	})
	t.Run("one size, one rank", func(t *testing.T) {
		r := &report.Report{Header: report.Header{Tool: "artest", Ranks: 1, Backend: "host"}}
		c := report.Case{ID: "a", Variant: "oneshot", Mode: "oop-reg-plain", Bytes: 4096, Verdict: report.Pass, TimeUS: 3}
		r.Cases = append(r.Cases, c)
		// One rank has no busbw: that panel is left out, the time is drawn.
		require.NoError(t, WritePlot(filepath.Join(dir, "one.svg"), r))
		r.Header.Ranks = 2
		r.Cases[0].BusBW = 1.5
		require.NoError(t, WritePlot(filepath.Join(dir, "one.svg"), r))
	})
	t.Run("nothing timed", func(t *testing.T) {
		r := &report.Report{Cases: []report.Case{{ID: "a", Verdict: report.Skipped}}}
		p := filepath.Join(dir, "none.svg")
		require.ErrorIs(t, WritePlot(p, r), ErrNothingToPlot)
		_, err := os.Stat(p)
		require.ErrorIs(t, err, os.ErrNotExist, "no file on error")
	})
	t.Run("unknown extension", func(t *testing.T) {
		require.ErrorContains(t, WritePlot(filepath.Join(dir, "bench.pdf"), plotFixture()), "want a file ending in .svg or .png")
	})
}

func TestPlotFormat(t *testing.T) {
	tests := []struct {
		path, want string
		ok         bool
	}{
		{"a.svg", "svg", true},
		{"dir/a.PNG", "png", true},
		{"a.pdf", "", false},
		{"a", "", false},
		{"svg", "", false},
	}
	for _, tt := range tests {
		got, err := PlotFormat(tt.path)
		if !tt.ok {
			require.Error(t, err, tt.path)
			continue
		}
		require.NoError(t, err, tt.path)
		require.Equal(t, tt.want, got)
	}
}

func TestSizeTicks(t *testing.T) {
	ticks := sizeTicks{}.Ticks(1024, 256<<20)
	var labels []string
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	require.Len(t, ticks, 19, "every power of two from 1 KiB to 256 MiB")
	require.LessOrEqual(t, len(labels), 8)
	require.Contains(t, labels, "1MiB")
	require.Empty(t, sizeTicks{}.Ticks(0, 10))
}

// Reports with little to draw: one point, equal values, a zero value. None
// may panic; what can be drawn is drawn.
func TestWritePlotWithFewPoints(t *testing.T) {
	one := func(bytes int64, us, busbw float64) report.Case {
		c := timedCase("oneshot/f32/sum/4KiB/oop-reg-plain/np2", bytes, us)
		c.DType, c.Op, c.Mode, c.BusBW = "f32", "sum", "oop-reg-plain", busbw
		return c
	}
	tests := []struct {
		name    string
		cases   []report.Case
		wantErr error
	}{
		{"one point", []report.Case{one(4096, 150, 0.05)}, nil},
		{"one point with a zero busbw", []report.Case{one(4096, 150, 0)}, nil},
		{"two sizes, one value", []report.Case{one(4096, 150, 0.05), one(8192, 150, 0.05)}, nil},
		{"only zero busbw", []report.Case{one(4096, 150, 0), one(8192, 170, 0)}, nil},
		{"nothing passed", []report.Case{{ID: "x", Variant: "oneshot", Verdict: report.Fail}}, ErrNothingToPlot},
	}
	for _, tt := range tests {
		for _, ext := range []string{"svg", "png"} {
			t.Run(tt.name+" "+ext, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "p."+ext)
				r := &report.Report{Header: report.Header{Ranks: 2, Backend: "host"}, Cases: tt.cases}
				err := WritePlot(path, r)
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
					require.NoFileExists(t, path)
					return
				}
				require.NoError(t, err)
				info, err := os.Stat(path)
				require.NoError(t, err)
				require.Positive(t, info.Size())
			})
		}
	}
}

func TestWritePlotTurnsAPanicIntoAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.svg")
	err := writePlotGuarded(path, func() error { panic("Values must be greater than 0 for a log scale.") })
	require.ErrorContains(t, err, "--plot "+path+": drawing failed: Values must be greater than 0 for a log scale.")
	require.NoFileExists(t, path)
}

// fieldFixture: two own variants, two NCCL modes and a plugin's variant,
// plain and graph, at four sizes; nccl-reg fails at the largest size, and
// at the smallest no field entry ran.
func fieldFixture() *report.Report {
	r := &report.Report{Header: report.Header{Tool: "artest", Ranks: 2, Backend: "cuda", Agg: "max",
		Plugins: []report.Plugin{{Name: "ex", Variants: []string{"ex:a"}}}}}
	scale := map[string]float64{"oneshot": 1, "twoshot": 1.2, "nccl": 1.4, "nccl-reg": 1.1, "ex:a": 1.3}
	for _, v := range []string{"oneshot", "twoshot", "nccl", "nccl-reg", "ex:a"} {
		for _, mode := range []string{"oop-reg-plain", "oop-reg-graph"} {
			for b := int64(1 << 10); b <= 1<<16; b *= 4 {
				if b == 1<<10 && report.KindOf(&r.Header, v) != report.Own {
					continue
				}
				c := timedCase(v+"/bf16/sum/"+mode, b, scale[v]*(5+float64(b)/1e4))
				c.Variant, c.DType, c.Op, c.Mode = v, "bf16", "sum", mode
				if v == "nccl-reg" && b == 1<<16 {
					c.Verdict = report.Fail
				}
				r.Cases = append(r.Cases, c)
			}
		}
	}
	return r
}

// placed lays f out on a canvas of the plot's size.
func placed(t *testing.T, f *figure) figureLayout {
	t.Helper()
	return f.layout(draw.New(vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))))
}

func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

func inside(a, b vg.Rectangle) bool {
	return a.Min.X >= b.Min.X && a.Max.X <= b.Max.X && a.Min.Y >= b.Min.Y && a.Max.Y <= b.Max.Y
}

func TestFigureStructure(t *testing.T) {
	whole := vg.Rectangle{Max: vg.Point{X: plotWidth, Y: plotHeight}}
	many := fieldFixture()
	for i := range 12 { // a legend of many variants still fits beside the panels
		for _, c := range fieldFixture().Cases {
			if c.Variant == "oneshot" {
				c.Variant = fmt.Sprintf("variant-with-a-long-name-%d", i)
				many.Cases = append(many.Cases, c)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		r      *report.Report
		panels []string
	}{
		{"own, NCCL and plugin", fieldFixture(), []string{panelTime, panelBusBW, panelGain}},
		{"many variants", many, []string{panelTime, panelBusBW, panelGain}},
		{"no field entry: no gain panel", filterCases(fieldFixture(), func(c *report.Case) bool { return c.Variant == "oneshot" || c.Variant == "twoshot" }),
			[]string{panelTime, panelBusBW}},
		{"field alone: no gain panel", filterCases(fieldFixture(), func(c *report.Case) bool { return c.Variant == "nccl" || c.Variant == "ex:a" }),
			[]string{panelTime, panelBusBW}},
		{"one rank: no busbw", oneRank(fieldFixture()), []string{panelTime, panelGain}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := buildFigure(tc.r)
			require.NoError(t, err)
			var kinds []string
			for _, p := range f.panels {
				kinds = append(kinds, p.kind)
			}
			require.Equal(t, tc.panels, kinds)

			at := placed(t, f)
			require.True(t, inside(at.legend, whole), "legend %v inside the figure", at.legend)
			require.Less(t, at.panelTitle, at.title.Y, "panel titles under the figure's")
			var data []vg.Rectangle
			for i := range f.panels {
				r := f.dataRect(i, at.panels[i])
				require.True(t, inside(r, whole), "panel %d inside the figure", i)
				require.False(t, overlaps(at.legend, r), "legend %v over panel %d's data %v", at.legend, i, r)
				for j, o := range data {
					require.False(t, overlaps(o, r), "panels %d and %d", j, i)
				}
				data = append(data, r)
			}
		})
	}
}

func filterCases(r *report.Report, keep func(*report.Case) bool) *report.Report {
	var kept []report.Case
	for i := range r.Cases {
		if keep(&r.Cases[i]) {
			kept = append(kept, r.Cases[i])
		}
	}
	r.Cases = kept
	return r
}

func oneRank(r *report.Report) *report.Report {
	r.Header.Ranks = 1
	for i := range r.Cases {
		r.Cases[i].BusBW = 0
	}
	return r
}

// Every variant has a colour of its own; NCCL's modes are greys, the
// plugins' variants browns, artest's own neither; a variant's plain and
// graph lines share its colour.
func TestVariantStyles(t *testing.T) {
	r := fieldFixture()
	for i := range 12 { // more own variants than hues
		c := timedCase(fmt.Sprintf("v%d/x", i), 4096, 5)
		c.Mode = "oop-reg-graph"
		r.Cases = append(r.Cases, c)
	}
	series := BuildSeries(r)
	styles := variantStyles(series)
	type look struct {
		c     color.Color
		shape draw.GlyphDrawer
	}
	seen := map[look]string{}
	grey := func(c color.Color) bool {
		r, g, b, _ := c.RGBA()
		return r == g && g == b
	}
	for v, st := range styles {
		l := look{st.Color, st.Shape}
		require.Empty(t, seen[l], "%s and %s look the same", v, seen[l])
		seen[l] = v
		switch report.KindOf(&r.Header, v) {
		case report.NCCLMode:
			require.True(t, grey(st.Color), v)
		case report.PluginVariant:
			require.Contains(t, pluginColors, st.Color, v)
		default:
			require.False(t, grey(st.Color), v)
			require.NotContains(t, pluginColors, st.Color, v)
		}
	}
	require.NotEqual(t, styles["nccl"].Color, styles["nccl-reg"].Color)
	// The first nine own variants have nine hues.
	hues := map[color.Color]bool{}
	for i := range series {
		if series[i].Kind == report.Own && len(hues) < len(ownColors) {
			hues[styles[series[i].Variant].Color] = true
		}
	}
	require.Len(t, hues, len(ownColors))

	f, err := buildFigure(r)
	require.NoError(t, err)
	for i := range f.series {
		s := &f.series[i]
		ls := lineStyle(f.styles[s.Variant], s.Graph)
		require.Equal(t, f.styles[s.Variant].Color, ls.Color)
		require.Equal(t, !s.Graph, len(ls.Dashes) > 0, "%s: plain launches dashed, graph replays solid", s.Label)
	}
}

// The legend names each variant once, under its family's heading, and
// what the line styles mean.
func TestLegendEntries(t *testing.T) {
	f, err := buildFigure(fieldFixture())
	require.NoError(t, err)
	var got []string
	for _, e := range f.legend.entries {
		if e.heading {
			got = append(got, "# "+e.text)
		} else {
			got = append(got, e.text)
		}
	}
	require.Equal(t, []string{"# artest variants", "oneshot", "twoshot", "# NCCL modes", "nccl", "nccl-reg",
		"# plugins", "ex:a", "# launch", "graph replays", "plain launches"}, got)
}

func TestGainPanel(t *testing.T) {
	f, err := buildFigure(fieldFixture())
	require.NoError(t, err)
	s := f.series[0]
	require.Equal(t, "oneshot plain", s.Label)
	// No field entry at 1 KiB; nccl-reg (1.1 times oneshot) is the
	// fieldbest at 4 and 16 KiB; at 64 KiB it failed and ex:a (1.3) is.
	require.Equal(t, []int64{1 << 10, 1 << 12, 1 << 14, 1 << 16}, s.Bytes)
	require.Zero(t, s.Gain[0])
	require.InDelta(t, 1.1, s.Gain[1], 1e-9)
	require.InDelta(t, 1.1, s.Gain[2], 1e-9)
	require.InDelta(t, 1.3, s.Gain[3], 1e-9)
	gain := f.panels[len(f.panels)-1]
	require.Equal(t, panelGain, gain.kind)
	require.LessOrEqual(t, gain.plot.Y.Min, 1.0, "the line at 1 is on the axis")
	require.GreaterOrEqual(t, gain.plot.Y.Max, 1.0)
}

func TestValueTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (valueTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	require.Equal(t, []string{"0.2", "0.5", "1", "2"}, labels(0.15, 2.5), "gains: 1, 2 and 5 times powers of ten")
	require.Equal(t, []string{"1", "10", "100", "1000"}, labels(0.5, 2000), "wide ranges: powers of ten")
	require.Equal(t, []string{"4", "5", "6", "7", "8"}, labels(3.5, 8.5), "less than a decade: every tick")
	require.Empty(t, (valueTicks{}).Ticks(0, 1))
}
