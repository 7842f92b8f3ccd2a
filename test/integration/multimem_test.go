//go:build integration

package integration

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

// The multimem variant's protocol on the host backend's multicast model:
// the quick matrix passes (sum; max is skipped: the variant has no max
// kernel), and the report header says multicast is the host model.
func TestMultimemQuickPassesOnHost(t *testing.T) {
	t.Parallel()
	js := filepath.Join(t.TempDir(), "r.json")
	o := mpirun(t, 4, 3*time.Minute, "--variant", "multimem", "--quick", "--json", js)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	r := readReport(t, js)
	require.Contains(t, r.Header.Versions["multicast"], "host model")
	var pass int
	for _, c := range r.Cases {
		if c.Op == "sum" {
			require.Equal(t, report.Pass, c.Verdict, "%s: %s", c.ID, c.Reason)
			pass++
			continue
		}
		require.Equal(t, report.Skipped, c.Verdict, c.ID)
		require.Equal(t, "multimem has no "+c.Op+" kernel", c.Reason)
	}
	require.Positive(t, pass)
}

// Under stress, both forms stay right on every iteration; without the end
// barrier, one-shot lets a fast rank overwrite its registered input while a
// slow rank still reduces it, and the stress run fails.
func TestMultimemStressAndNoEndBarrier(t *testing.T) {
	t.Parallel()
	args := []string{"--variant", "multimem", "--dtype", "f32", "--op", "sum", "--size", "4K", "--mode", "oop,reg,plain,aligned", "--stress", "50"}
	for _, shots := range []string{"1", "2"} {
		o := mpirun(t, 3, 3*time.Minute, append(args, "--param", "shots="+shots)...)
		require.Equal(t, 0, o.code, "shots=%s\n%s\n%s", shots, o.stdout, o.stderr)
	}
	o := mpirun(t, 3, 3*time.Minute, append(args, "--param", "shots=1", "--inject", "no-end-barrier", "--inject", "delay:rank=2,us=500")...)
	require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "multimem/f32/sum/4KiB/oop-reg-plain/np3")
}
