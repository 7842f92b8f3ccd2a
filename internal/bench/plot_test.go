package bench

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

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
		require.Contains(t, string(b), "oneshot graph")
		require.Contains(t, string(b), "busbw (GB/s)")
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
