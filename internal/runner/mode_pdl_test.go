package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
)

func TestInjectPdlNoWait(t *testing.T) {
	var in Inject
	require.NoError(t, in.Parse("pdl-no-wait", nil))
	require.Equal(t, kernels.InjectPdlNoWait, in.Bits)
	require.Equal(t, []string{"pdl-no-wait"}, in.Specs())
	require.Contains(t, FaultHelp(), "pdl-no-wait")
}

func TestPDLMerge(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		time      float64
		ranks     [][]float64
		want, gap float64
	}{
		{"untimed case", Config{PDL: true}, 0, [][]float64{{12}, {14}}, 0, 0},
		{"a rank without the sample", Config{PDL: true}, 10, [][]float64{{12}, nil}, 0, 0},
		// Per repetition the max over ranks (14, 11, 20), then the median.
		{"max over ranks then median", Config{PDL: true}, 10, [][]float64{{12, 11, 20}, {14, 9, 3}}, 14, 4},
		{"min over ranks", Config{PDL: true, Agg: report.AggMin}, 10, [][]float64{{12, 11, 20}, {14, 9, 3}}, 9, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := make([]rankResult, len(tc.ranks))
			for i, r := range tc.ranks {
				rs[i].addSeries(pdlName, pdlSeriesNo, r...)
			}
			out := report.Case{TimeUS: tc.time}
			newPDLMode(&tc.cfg).merge(&out, rs, &tc.cfg)
			require.Equal(t, tc.want, out.NoPDLTimeUS)
			require.Equal(t, tc.gap, out.PDLGainUS)
		})
	}
}
