package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAgg(t *testing.T) {
	tests := []struct {
		in      string
		want    Agg
		wantErr bool
	}{
		{"", AggMax, false},
		{"max", AggMax, false},
		{"avg", AggAvg, false},
		{"min", AggMin, false},
		{"mean", "", true},
		{"MAX", "", true},
	}
	for _, tt := range tests {
		got, err := ParseAgg(tt.in)
		if tt.wantErr {
			require.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got)
	}
}

func TestAggOf(t *testing.T) {
	xs := []float64{3, 1, 2, 6}
	require.Equal(t, 6.0, AggMax.Of(xs))
	require.Equal(t, 1.0, AggMin.Of(xs))
	require.Equal(t, 3.0, AggAvg.Of(xs))
	require.Zero(t, AggMax.Of(nil))
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"empty", nil, 50, 0},
		{"one", []float64{7}, 99, 7},
		{"odd median", []float64{5, 1, 3}, 50, 3},
		{"even median is the mean of the middle two", []float64{4, 1, 3, 2}, 50, 2.5},
		{"p99 of 101 values is the 100th", seq(101), 99, 99},
		{"p99 interpolates", []float64{0, 10}, 99, 9.9},
		{"p0 and p100 are min and max", []float64{3, 9, 1}, 100, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { require.InDelta(t, tt.want, Percentile(tt.xs, tt.p), 1e-12) })
	}
	xs := []float64{3, 1, 2}
	Percentile(xs, 50)
	require.Equal(t, []float64{3, 1, 2}, xs, "input not reordered")
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

func TestBuildTiming(t *testing.T) {
	reps := [][]float64{
		{10, 12, 11, 30},  // rank 0: one slow repetition
		{11, 11, 13, 10},  // rank 1
		{9, 14, 10, 10.5}, // rank 2
	}
	calls := [][]float64{{1, 2, 3}, {2, 2, 2}, {3, 1, 9}}

	tm := BuildTiming(AggMax, 20, reps, calls)
	require.Equal(t, "max", tm.Agg)
	require.Equal(t, 4, tm.Reps)
	require.Equal(t, 20, tm.Iters)
	require.Equal(t, []float64{11, 14, 13, 30}, tm.RepUS)
	require.Equal(t, 13.5, tm.P50US)
	require.Equal(t, 11.0, tm.MinUS)
	require.Equal(t, 30.0, tm.MaxUS)
	require.InDelta(t, 14+0.97*16, tm.P99US, 1e-9) // h = 3 x 0.99 between 14 and 30
	require.InDelta(t, (30.0-11)/13.5, tm.Spread, 1e-4)
	require.Equal(t, []float64{11.5, 11, 10.25}, tm.RankUS)
	require.Equal(t, []float64{3, 2, 9}, tm.CallUS)
	require.Equal(t, 3.0, tm.CallP50US)

	avg := BuildTiming(AggAvg, 20, reps, nil)
	require.Equal(t, []float64{10, 12.333, 11.333, 16.833}, avg.RepUS, "rounded to 1 ns")
	require.Nil(t, avg.CallUS)

	require.Nil(t, BuildTiming(AggMax, 20, nil, nil))
	require.Nil(t, BuildTiming(AggMax, 20, [][]float64{{1, 2}, {}}, nil), "a rank without repetitions")
	short := BuildTiming(AggMin, 20, [][]float64{{1, 2, 3}, {4, 5}}, nil)
	require.Equal(t, []float64{1, 2}, short.RepUS, "cut to the shortest rank")
}

func TestTimingJSONRoundTrip(t *testing.T) {
	r := benchFixture()
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, r))
	back, err := ReadJSON(&buf)
	require.NoError(t, err)
	require.Equal(t, r.Cases[0].Timing, back.Cases[0].Timing)
	require.True(t, back.Header.Bench)
	require.Equal(t, 20, back.Header.Reps)
}

func TestNormalReportHasNoTiming(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, fixtureReport()))
	require.NotContains(t, buf.String(), `"timing"`)
	require.NotContains(t, buf.String(), `"reps"`)
}
