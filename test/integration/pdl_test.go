//go:build integration

package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

// --pdl: every call poisons the input, runs the producer and launches the
// allreduce to overlap it; the kernels wait for the producer, so small
// cases of oneshot, twoshot and ring pass in every mode, and nccl is
// skipped (ncclAllReduce has no griddepcontrol.wait).
func TestPDLPasses(t *testing.T) {
	t.Parallel()
	js := filepath.Join(t.TempDir(), "r.json")
	o := mpirun(t, 3, 5*time.Minute, "--pdl", "--variant", "oneshot,twoshot,ring", "--dtype", "bf16,f32", "--op", "sum,max",
		"--size", "12,4100,64K", "--iters", "2", "--reps", "1", "--warmup", "1", "--json", js)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, ", FAIL 0, skipped 0")
	r := readReport(t, js)
	require.True(t, r.Header.PDL)
	require.NotEmpty(t, r.Cases)
}

// A kernel that reads its input without waiting for the producer
// (--inject pdl-no-wait) reads the poison: exit 1, every case a mismatch.
func TestPDLNoWaitFailsWithMismatch(t *testing.T) {
	t.Parallel()
	js := filepath.Join(t.TempDir(), "r.json")
	o := mpirun(t, 2, 5*time.Minute, "--pdl", "--inject", "pdl-no-wait", "--variant", "oneshot,twoshot,ring",
		"--dtype", "bf16", "--op", "sum", "--size", "4K,64K", "--mode", "oop,reg", "--iters", "1", "--reps", "1",
		"--warmup", "0", "--json", js)
	require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "mismatch")
	r := readReport(t, js)
	require.NotEmpty(t, r.Cases)
	for _, c := range r.Cases {
		require.Equal(t, report.Fail, c.Verdict, c.ID)
		require.Equal(t, "mismatch", c.Failures[0].Kind, "%s: %s", c.ID, c.Reason)
	}
	require.True(t, strings.Contains(o.stderr, "--pdl --inject pdl-no-wait"), "the repro line reruns with --pdl:\n%s", o.stderr)
}

// bench --pdl reports, per case, the time with PDL, without, and the gain.
func TestPDLBench(t *testing.T) {
	t.Parallel()
	js := filepath.Join(t.TempDir(), "b.json")
	o := mpirun(t, 2, 5*time.Minute, "bench", "-b", "4K", "-e", "64K", "-f", "4", "--pdl", "--variant", "oneshot,twoshot",
		"--json", js)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# pdl: one call is the input poisoned, the producer kernel and the allreduce")
	r := readReport(t, js)
	require.Len(t, r.Cases, 3*2*2) // 3 sizes x plain/graph x 2 variants
	for _, c := range r.Cases {
		require.Positive(t, c.NoPDLTimeUS, c.ID)
		require.InDelta(t, c.NoPDLTimeUS-c.TimeUS, c.PDLGainUS, 1e-6, c.ID)
	}
}

// The fault switch without --pdl is a usage error: without a producer there
// is nothing to wait for.
func TestPDLNoWaitNeedsPDL(t *testing.T) {
	t.Parallel()
	o := mpirun(t, 2, time.Minute, "--inject", "pdl-no-wait", "--variant", "oneshot")
	require.Equal(t, 2, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stderr, "--inject pdl-no-wait needs --pdl")
}
