package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
)

func TestLoadUnits(t *testing.T) {
	for _, tc := range []struct {
		name          string
		repUS, unitUS float64
		want          int
	}{
		{"a repetition of ten units", 100, 10, 10},
		{"rounded", 104, 10, 10},
		{"shorter than a unit: one", 3, 10, 1},
		{"no unit time: one", 100, 0, 1},
		{"no repetition time: one", 0, 10, 1},
		{"capped", 1e9, 1, kernels.ComputeMaxUnits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, loadUnits(tc.repUS, tc.unitUS))
		})
	}
}

func TestOverlapMerge(t *testing.T) {
	ranks := []rankResult{
		overlapResult([]float64{12, 14, 13}, []float64{100, 100, 100}, []float64{150, 130, 140}),
		overlapResult([]float64{11, 15, 12}, []float64{90, 110, 100}, []float64{120, 160, 150}),
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		time  float64
		rs    []rankResult
		want  report.Case
		unset bool
	}{
		{"max over ranks, median over repetitions", Config{Bench: true, Overlap: 66}, 10, ranks, report.Case{
			OverlapBlocks: 66, OverlapTimeUS: 13, LoadAloneUS: 100, LoadWithAllreduceUS: 150, LoadSlowdown: 1.5}, false},
		{"min over ranks", Config{Bench: true, Overlap: 4, Agg: report.AggMin}, 10, ranks, report.Case{
			OverlapBlocks: 4, OverlapTimeUS: 12, LoadAloneUS: 100, LoadWithAllreduceUS: 130, LoadSlowdown: 1.3}, false},
		{"an untimed case", Config{Bench: true, Overlap: 4}, 0, ranks, report.Case{}, true},
		{"a rank without times under load", Config{Bench: true, Overlap: 4}, 10, []rankResult{ranks[0], {}}, report.Case{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := report.Case{TimeUS: tc.time}
			newOverlapMode(&tc.cfg).merge(&out, tc.rs, &tc.cfg)
			tc.want.TimeUS = tc.time
			if tc.unset {
				require.Equal(t, report.Case{TimeUS: tc.time}, out)
				return
			}
			require.Equal(t, tc.want.OverlapBlocks, out.OverlapBlocks)
			require.InDelta(t, tc.want.OverlapTimeUS, out.OverlapTimeUS, 1e-9)
			require.InDelta(t, tc.want.LoadAloneUS, out.LoadAloneUS, 1e-9)
			require.InDelta(t, tc.want.LoadWithAllreduceUS, out.LoadWithAllreduceUS, 1e-9)
			require.InDelta(t, tc.want.LoadSlowdown, out.LoadSlowdown, 1e-9)
		})
	}
}

// overlapResult is a rank's result with the overlap mode's series.
func overlapResult(calls, alone, with []float64) rankResult {
	var res rankResult
	res.addSeries(overlapName, overlapSeriesCall, calls...)
	res.addSeries(overlapName, overlapSeriesLoad, alone...)
	res.addSeries(overlapName, overlapSeriesWith, with...)
	return res
}
