//go:build integration

package integration

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --timeout bounds the wait for one step of the stream, not for a stress
// batch: batches of 511 calls of 256 KiB that take seconds on the host
// backend are no hang at --timeout 1s. The run is `--variant oneshot --size
// 256K --stress 4000 --schedule none --timeout 1s` narrowed to one dtype, one
// op and the aligned registered modes out of place (plain launches and
// graph replays, the two ways a batch reaches the stream); the batches do
// not depend on the rest. The test also requires that some case took at
// least three times the timeout, so it cannot pass on a machine fast
// enough to finish every batch within it.
// The timeout is 1s rather than the documented minimum of 100ms: a host
// rank starved of a core for 100ms by other processes (2 cores, parallel
// tests, other jobs) makes no progress either, which is a hang by that
// timeout's measure. Not parallel: it runs before the parallel tests.
func TestStressTimeoutMeasuresProgress(t *testing.T) {
	const timeout = time.Second
	o := mpirun(t, 2, 10*time.Minute, "--variant", "oneshot", "--size", "256K", "--stress", "4000", "--schedule", "none",
		"--timeout", timeout.String(), "--dtype", "f32", "--op", "sum", "--mode", "oop,reg,aligned")
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# pass 2, FAIL 0, skipped 0")
	// The per-case progress lines on stderr: "# [1/2] ID pass 9.65s (...)".
	var longest time.Duration
	for _, m := range regexp.MustCompile(`(?m)^# \[\d+/\d+\] \S+ pass ([0-9.]+)s`).FindAllStringSubmatch(o.stderr, -1) {
		d, err := time.ParseDuration(m[1] + "s")
		require.NoError(t, err)
		longest = max(longest, d)
	}
	require.Greater(t, longest, 3*timeout, "no stress case ran longer than 3x --timeout, so none showed that the timeout measures progress: raise --stress\n%s", o.stderr)
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
