package bench

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"

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
// timed cases by size, and, for artest's own variants, the gain over the
// fieldbest at each size (report.FieldBests; 0 where no field entry
// passed).
type Series struct {
	Label   string
	Variant string
	Kind    report.Kind
	// Group is the dtype, op and mode without launch word; GroupIndex its
	// order of first appearance in the report.
	Group      string
	GroupIndex int
	Graph      bool
	Bytes      []int64
	TimeUS     []float64
	BusBW      []float64
	Gain       []float64
}

// BuildSeries groups a report's passing, timed cases into lines, in the
// order they first appear, sorted by size within a line. Failed and skipped
// cases are left out: a wrong kernel's time is not a result.
func BuildSeries(r *report.Report) []Series {
	type key struct{ variant, dtype, op, mode string }
	groups := map[string]int{}
	for i := range r.Cases {
		c := &r.Cases[i]
		rest, _ := splitLaunch(c.Mode)
		g := c.DType + " " + c.Op + " " + rest
		if _, ok := groups[g]; !ok {
			groups[g] = len(groups)
		}
	}
	bests := report.FieldBests(r)
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
			group := c.DType + " " + c.Op + " " + rest
			label := c.Variant + " " + launch
			if len(groups) > 1 {
				label += " (" + group + ")"
			}
			j = len(out)
			index[k] = j
			out = append(out, Series{Label: label, Variant: c.Variant, Kind: report.KindOf(&r.Header, c.Variant),
				Group: group, GroupIndex: groups[group], Graph: launch == "graph"})
		}
		s := &out[j]
		gain := 0.0
		if s.Kind == report.Own {
			gain = report.FieldGain(bests[report.FieldKeyOf(c)], c.TimeUS)
		}
		s.Bytes = append(s.Bytes, c.Bytes)
		s.TimeUS = append(s.TimeUS, c.TimeUS)
		s.BusBW = append(s.BusBW, c.BusBW)
		s.Gain = append(s.Gain, gain)
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
	bytes, times, bws, gains := make([]int64, len(idx)), make([]float64, len(idx)), make([]float64, len(idx)), make([]float64, len(idx))
	for i, j := range idx {
		bytes[i], times[i], bws[i], gains[i] = s.Bytes[j], s.TimeUS[j], s.BusBW[j], s.Gain[j]
	}
	s.Bytes, s.TimeUS, s.BusBW, s.Gain = bytes, times, bws, gains
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
