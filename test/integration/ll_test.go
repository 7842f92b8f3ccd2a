//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// oneshot-ll has no barriers: its protection is the sequence in every LL
// word. It passes on its sizes (and skips larger ones with the reason);
// without the sequence check, a late rank's slots are read stale; a rank
// that never pushes is diagnosed at the slot it was waited for.
func TestOneshotLL(t *testing.T) {
	t.Parallel()
	o := mpirun(t, 3, 3*time.Minute, "--variant", "oneshot-ll", "--dtype", "bf16,f32", "--op", "sum,max",
		"--size", "4,4100,64K,2M", "--mode", "oop,ip,reg,stg,plain,graph")
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "oneshot-ll takes messages up to 1048576 bytes")
	require.Contains(t, o.stdout, "# pass 132, FAIL 0, skipped 44")

	stress := []string{"--variant", "oneshot-ll", "--dtype", "f32", "--op", "sum", "--size", "64K",
		"--mode", "oop,reg,plain,aligned", "--stress", "200", "--inject", "delay:rank=2,us=300"}
	o = mpirun(t, 3, 3*time.Minute, stress...)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	o = mpirun(t, 3, 3*time.Minute, append(stress, "--inject", "ll-no-flag")...)
	require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "stress iterations wrong")

	o = mpirun(t, 3, 2*time.Minute, "--variant", "oneshot-ll", "--dtype", "f32", "--op", "sum", "--size", "4K",
		"--mode", "oop,reg,plain,aligned", "--inject", "delay:rank=2,us=5000000", "--device-timeout", "1s", "--timeout", "30s")
	require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Regexp(t, `rank 0 block \d+ gave up after 1\.\ds waiting for LL slot \d+ from rank 2`, o.stdout+o.stderr)
}
