package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

// Reference p-values: the two-sided normal approximation with continuity
// and tie correction (what scipy.stats.mannwhitneyu calls method="asymptotic",
// use_continuity=True), computed independently in Python with math.erfc.
func TestMannWhitneyP(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		want float64
	}{
		{"separated, 5 and 5", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0.012186},
		{"interleaved", []float64{1, 3, 5, 7, 9}, []float64{2, 4, 6, 8, 10}, 0.6761},
		{"ties", []float64{1, 2, 2, 3, 3, 3}, []float64{3, 4, 4, 5, 5, 6}, 0.00873},
		{"all equal", []float64{2, 2, 2, 2}, []float64{2, 2, 2, 2}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.InDelta(t, tt.want, MannWhitneyP(tt.x, tt.y), 1e-4)
			require.InDelta(t, MannWhitneyP(tt.x, tt.y), MannWhitneyP(tt.y, tt.x), 1e-12, "symmetric")
		})
	}
}

func withReps(c report.Case, reps ...float64) *report.Case {
	c.Timing = &report.Timing{RepUS: reps}
	return &c
}

// With repetitions on both sides, a change beyond the threshold that the
// samples cannot tell from noise is NOISE, not SLOWER; a clear shift stays
// SLOWER; too few repetitions leave the threshold alone to decide.
func TestJudgeWithSamples(t *testing.T) {
	const small = 64 << 10
	tests := []struct {
		name       string
		old, new   *report.Case
		want       Status
		regression bool
	}{
		{"20% slower, overlapping samples", withReps(timedCase("x", small, 10), 6, 10, 14, 8, 12), withReps(timedCase("x", small, 12), 7, 12, 15, 9, 13), StatusNoise, false},
		{"20% slower, a clear shift", withReps(timedCase("x", small, 10), 9.9, 10, 10.1, 10, 9.95), withReps(timedCase("x", small, 12), 12, 12.1, 11.9, 12, 12.05), StatusRegression, true},
		{"20% faster, overlapping samples", withReps(timedCase("x", small, 10), 6, 10, 14, 8, 12), withReps(timedCase("x", small, 8), 5, 8, 13, 7, 9), StatusNoise, false},
		{"20% slower, 3 repetitions: threshold alone", withReps(timedCase("x", small, 10), 6, 10, 14), withReps(timedCase("x", small, 12), 7, 12, 15), StatusRegression, true},
		{"within the threshold: no test needed", withReps(timedCase("x", small, 10), 9, 10, 11, 10), withReps(timedCase("x", small, 10.5), 10, 10.5, 11, 10.5), StatusOK, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := judge(tt.old, tt.new, DefaultThresholds)
			require.Equal(t, tt.want, row.Status, row.Why)
			require.Equal(t, tt.regression, row.Regression())
		})
	}
	row := judge(withReps(timedCase("x", small, 10), 6, 10, 14, 8, 12), withReps(timedCase("x", small, 12), 7, 12, 15, 9, 13), DefaultThresholds)
	require.Contains(t, row.Why, "time +20.0% but p=")
	require.Contains(t, row.Why, "5 and 5 repetitions")

	off := DefaultThresholds
	off.Alpha = 0
	row = judge(withReps(timedCase("x", small, 10), 6, 10, 14, 8, 12), withReps(timedCase("x", small, 12), 7, 12, 15, 9, 13), off)
	require.Equal(t, StatusRegression, row.Status, "--alpha 0: the threshold alone")
}

// Repetitions do not bring host times back into the gate: a host bench
// run keeps them too, and a clear shift of them is still not speed.
func TestHostRepetitionsAreNotJudged(t *testing.T) {
	const small = 64 << 10
	tests := []struct {
		name     string
		old, new *report.Case
	}{
		{"20% slower, a clear shift", withReps(timedCase("x", small, 10), 9.9, 10, 10.1, 10, 9.95), withReps(timedCase("x", small, 12), 12, 12.1, 11.9, 12, 12.05)},
		{"20% slower, overlapping samples", withReps(timedCase("x", small, 10), 6, 10, 14, 8, 12), withReps(timedCase("x", small, 12), 7, 12, 15, 9, 13)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := report.Header{Tool: "artest", Backend: "host", Bench: true}
			rows := Compare(&report.Report{Header: h, Cases: []report.Case{*tt.old}}, &report.Report{Header: h, Cases: []report.Case{*tt.new}}, DefaultThresholds)
			require.Len(t, rows, 1)
			require.Equal(t, StatusOK, rows[0].Status, rows[0].Why)
			require.Zero(t, rows[0].P, "no test of noise where times are not judged")
			require.InDelta(t, 0.2, rows[0].TimeChange, 1e-12)
		})
	}
}
