//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// oneshot-sentinel on the host backend at 3 ranks: its matrix (special
// inputs too, and after twoshot, whose data the staging holds until the
// runner zeroes it), each fault switch seen failing under stress beside a
// late rank, and a rank that never pushes diagnosed at the slot.
func TestOneshotSentinel(t *testing.T) {
	t.Parallel()
	o := mpirun(t, 3, 3*time.Minute, "--variant", "twoshot,oneshot-sentinel", "--dtype", "bf16,f32", "--op", "sum,max",
		"--size", "4,4100,64K", "--mode", "oop,ip,reg,stg,plain,graph")
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Regexp(t, `# variant oneshot-sentinel: \d+ cases, pass \d+, FAIL 0, skipped 0`, o.stdout)
	// Special inputs: signed zeros go through bit for bit, and NaNs of
	// every payload (all ones among them, which travels as another NaN).
	o = mpirun(t, 3, 3*time.Minute, "--variant", "oneshot-sentinel", "--dtype", "bf16,f16,f32", "--op", "sum,max,min",
		"--size", "4100,64K", "--mode", "oop,ip,reg,plain", "--input", "special")
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# pass 72, FAIL 0, skipped 0")

	stress := []string{"--variant", "oneshot-sentinel", "--dtype", "f32", "--op", "sum", "--size", "64K",
		"--mode", "oop,reg,plain,aligned", "--stress", "200", "--inject", "delay:rank=2,us=300"}
	o = mpirun(t, 3, 3*time.Minute, stress...)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	for _, fault := range []string{"sentinel-no-wait", "sentinel-no-clear"} {
		o = mpirun(t, 3, 3*time.Minute, append(stress, "--inject", fault)...)
		require.Equal(t, 1, o.code, "%s: %s\n%s", fault, o.stdout, o.stderr)
		require.Contains(t, o.stdout, "stress iterations wrong", fault)
	}

	o = mpirun(t, 3, 2*time.Minute, "--variant", "oneshot-sentinel", "--dtype", "f32", "--op", "sum", "--size", "4K",
		"--mode", "oop,reg,plain,aligned", "--inject", "delay:rank=2,us=5000000", "--device-timeout", "1s", "--timeout", "30s")
	require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Regexp(t, `rank 0 block \d+ gave up after 1\.\ds waiting for slot \d+ from rank 2 to be written`, o.stdout+o.stderr)
}
