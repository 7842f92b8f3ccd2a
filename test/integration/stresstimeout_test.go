//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --timeout bounds the wait for one step of the stream, not for a stress
// batch: at the documented minimum of 100ms, batches of 511 calls of
// 256 KiB that take seconds on the host backend are no hang. The run is
// `--variant oneshot --size 256K --stress 1000 --schedule none --timeout
// 100ms` narrowed to one dtype and op (every mode stays); the batches do
// not depend on either. Not parallel: it runs before the parallel tests,
// alone, since a host rank starved of a core for 100ms by the other tests'
// ranks (2 cores, 4 jobs at once) makes no progress either, and that is a
// hang by this timeout's measure.
func TestStressTimeoutMeasuresProgress(t *testing.T) {
	o := mpirun(t, 2, 10*time.Minute, "--variant", "oneshot", "--size", "256K", "--stress", "1000", "--schedule", "none",
		"--timeout", "100ms", "--dtype", "f32", "--op", "sum")
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# pass 11, FAIL 0, skipped 0")
}

// A stress call that never ends is still a hang at that timeout: rank 1's
// blocks sleep 3 s in every call, no call finishes within 100ms, and the
// watchdog names the batch and the rank its peer waits for.
func TestStressHangIsStillDetected(t *testing.T) {
	t.Parallel()
	o := mpirun(t, 2, 2*time.Minute, "--variant", "oneshot", "--dtype", "f32", "--op", "sum", "--size", "256K",
		"--mode", "oop,reg,plain,aligned", "--stress", "1000", "--schedule", "none", "--timeout", "100ms",
		"--device-timeout", "0", "--inject", "delay:rank=1,us=3000000")
	require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stderr, "hang in case oneshot/f32/sum/256KiB/oop-reg-plain/np2: rank 0 saw no completion of stress iterations 0..510 within 100ms")
	require.Contains(t, o.stderr, "for rank 1")
}
