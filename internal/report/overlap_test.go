package report

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteOverlap(t *testing.T) {
	loaded := Case{Variant: "oneshot", Bytes: 4096, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", TimeUS: 10,
		OverlapBlocks: 66, OverlapTimeUS: 12.5, LoadAloneUS: 200, LoadWithAllreduceUS: 250, LoadSlowdown: 1.25}
	unloaded := Case{Variant: "twoshot", Bytes: 4096, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", TimeUS: 30}
	for _, tc := range []struct {
		name   string
		header Header
		cases  []Case
		want   []string // lines, in order
	}{
		{"no --overlap: nothing", Header{}, []Case{loaded}, nil},
		{"the load could not run: the note alone", Header{Overlap: 4, OverlapNote: "overlap off: the x backend has no compute load"},
			[]Case{loaded}, []string{"#", "# overlap off: the x backend has no compute load"}},
		{"no case timed under load: nothing", Header{Overlap: 4}, []Case{unloaded}, nil},
		{"one row per case timed under load", Header{Overlap: 66, Agg: "avg"}, []Case{loaded, unloaded}, []string{
			"#",
			"# overlap: a compute load of 66 blocks beside every timed repetition; allreduce time per call without and with it, the load's time alone and beside the calls (us), average over ranks; slowdown = beside / alone",
			"# variant                size   type  redop mode                   time     loaded       load     beside slowdown",
			"#                         (B)                                      (us)       (us)       (us)       (us)      (x)",
			"# oneshot                4096   bf16    sum oop-reg-plain         10.00      12.50     200.00     250.00     1.25",
		}},
		{"one block is singular", Header{Overlap: 1}, []Case{loaded}, []string{
			"#",
			"# overlap: a compute load of 1 block beside every timed repetition; allreduce time per call without and with it, the load's time alone and beside the calls (us), maximum over ranks; slowdown = beside / alone",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sb strings.Builder
			w := bufio.NewWriter(&sb)
			writeOverlap(w, &Report{Header: tc.header, Cases: tc.cases})
			require.NoError(t, w.Flush())
			if tc.want == nil {
				require.Empty(t, sb.String())
				return
			}
			lines := strings.Split(strings.TrimSuffix(sb.String(), "\n"), "\n")
			require.GreaterOrEqual(t, len(lines), len(tc.want))
			require.Equal(t, tc.want, lines[:len(tc.want)])
			require.NotContains(t, sb.String(), "twoshot")
			for _, line := range lines {
				require.True(t, strings.HasPrefix(line, "#"), "line %q", line)
			}
		})
	}
}
