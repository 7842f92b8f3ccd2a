package report

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWritePDLGain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cases []Case
		want  []string
	}{
		{"no pdl times: nothing", []Case{{Variant: "oneshot", TimeUS: 5}}, nil},
		{"one row per case with both times", []Case{
			{Variant: "oneshot", Bytes: 4096, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", TimeUS: 25.5, NoPDLTimeUS: 28, PDLGainUS: 2.5},
			{Variant: "twoshot", Bytes: 4096, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", TimeUS: 30},
		}, []string{
			"# pdl: one call is the input poisoned, the producer kernel and the allreduce; time per call (us), maximum over ranks",
			"# oneshot                4096   bf16    sum oop-reg-plain         25.50      28.00       2.50",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := requireTable(t, writePDLGain, tc.cases, tc.want)
			require.NotContains(t, out, "twoshot")
		})
	}
}

// requireTable runs one of bench's extra tables over cases: with want nil
// it must write nothing; else every line of want, and every line it
// writes starts with # (scripts read the other lines as nccl-tests rows).
// It returns what was written.
func requireTable(t *testing.T, write func(*bufio.Writer, *Report), cases []Case, want []string) string {
	t.Helper()
	var sb strings.Builder
	w := bufio.NewWriter(&sb)
	write(w, &Report{Cases: cases})
	require.NoError(t, w.Flush())
	out := sb.String()
	if want == nil {
		require.Empty(t, out)
		return out
	}
	for _, line := range want {
		require.Contains(t, out, line+"\n")
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		require.True(t, strings.HasPrefix(line, "#"), "line %q", line)
	}
	return out
}
