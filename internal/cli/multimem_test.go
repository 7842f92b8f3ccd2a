package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

// The multimem variant runs on the host backend by default (its model needs
// no GPU and no gate): the quick matrix passes, max and min are skipped
// with the registry's reason, and the header says how multicast is modelled.
func TestMultimemQuickOnHost(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	res := runWorld(t, 3, same("--backend", "host", "--variant", "multimem", "--quick", "--dtype", "f16,f32",
		"--iters", "1", "--reps", "1", "--warmup", "0", "--json", js))
	require.Equal(t, []int{0, 0, 0}, res.codes, res.stderr)
	rep := readReport(t, js)
	require.Contains(t, rep.Header.Versions["multicast"], "host model")
	var pass int
	for _, c := range rep.Cases {
		switch c.Op {
		case "sum":
			require.Equal(t, report.Pass, c.Verdict, "%s: %s", c.ID, c.Reason)
			pass++
		default:
			require.Equal(t, report.Skipped, c.Verdict, c.ID)
			require.Equal(t, "multimem has no "+c.Op+" kernel", c.Reason)
		}
	}
	require.Positive(t, pass)
}

// Both forms on every mode of the default matrix's small sizes, including
// the misaligned offsets, on the host model.
func TestMultimemFormsOnHost(t *testing.T) {
	for _, shots := range []string{"1", "2"} {
		res := runWorld(t, 2, same("--backend", "host", "--variant", "multimem", "--op", "sum", "--dtype", "bf16",
			"--size", "2,12,4100,65536", "--param", "shots="+shots, "--iters", "0"))
		require.Equal(t, []int{0, 0}, res.codes, "shots=%s: %v\n%s", shots, res.stderr, res.stdout[0])
		require.Contains(t, res.stdout[0], "# pass 44, FAIL 0, skipped 0")
	}
}

// Without the mid barrier, and with rank 1 slow, two-shot's all-gather
// copies staging before rank 1's chunk arrived.
func TestMultimemNoMidBarrierFails(t *testing.T) {
	args := []string{"--backend", "host", "--variant", "multimem", "--dtype", "f32", "--op", "sum", "--size", "64K",
		"--mode", "oop,reg,plain,aligned", "--param", "shots=2", "--iters", "0"}
	res := runWorld(t, 2, same(append(args, "--inject", "no-mid-barrier", "--inject", "delay:rank=1,us=200000")...))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr)
	require.True(t, strings.Contains(res.stdout[0], "FAIL"), res.stdout[0])

	res = runWorld(t, 2, same(args...))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
}
