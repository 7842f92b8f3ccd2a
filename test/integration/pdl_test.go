//go:build integration

package integration

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
