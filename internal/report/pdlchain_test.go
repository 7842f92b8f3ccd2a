package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWritePDLChain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cases []Case
		want  []string
		not   []string
	}{
		{"no chained times: nothing", []Case{{Variant: "oneshot", TimeUS: 5}}, nil, nil},
		{"one row per chained case, one line per reason", []Case{
			{Variant: "oneshot", Bytes: 4096, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", TimeUS: 6.5, ChainTimeUS: 4.25, ChainGainUS: 2.25},
			{Variant: "oneshot", Bytes: 4096, DType: "bf16", Op: "sum", Mode: "oop-stg-plain", TimeUS: 7, ChainNote: "staged modes copy the input in between calls"},
			{Variant: "oneshot", Bytes: 8192, DType: "bf16", Op: "sum", Mode: "oop-stg-plain", TimeUS: 8, ChainNote: "staged modes copy the input in between calls"},
			{Variant: "twoshot", Bytes: 4096, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", TimeUS: 30},
		}, []string{
			"# pdl-chain: back-to-back calls, each allreduce launched normally and with PDL after the previous one; time per call (us), maximum over ranks",
			"# oneshot                4096   bf16    sum oop-reg-plain            6.50       4.25       2.25",
			"# not chained: oneshot: staged modes copy the input in between calls",
		}, []string{"twoshot", "oop-stg-plain "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := requireTable(t, writePDLChain, tc.cases, tc.want)
			if tc.want == nil {
				return
			}
			require.Equal(t, 1, strings.Count(out, "# not chained:"), "one line per variant and reason")
			for _, s := range tc.not {
				require.NotContains(t, out, s)
			}
		})
	}
}
