//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The device-side deadline: rank 2 sleeps 5 s in its launch, its
// peers' blocks give up after --device-timeout 500ms, record where and exit,
// and the runner, reading the diag words after the stream finished, exits 3
// with a line naming the block that gave up and the rank it waited for, well
// before the host watchdog's --timeout 30s.
func TestDeviceTimeoutGivesUpAndNamesTheBlock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		variant, id string
		want        []string // regular expressions: which block gives up first is a race
	}{
		{"oneshot", "oneshot/f32/sum/4KiB/oop-reg-plain/np3",
			[]string{`rank 0 block \d+ gave up after \d+\.\ds at the end barrier waiting for rank 2 \(flag 0, want 1\)`,
				// Rank 1's blocks give up on their own deadline, which may
				// not have passed when rank 0 reads the signal blocks: then
				// the snapshot shows them still waiting.
				`rank 1 block \d+ gave up after \d+\.\ds at the end barrier waiting for rank 2 \(flag 0, want 1\)|ranks 0,1 wait at the end barrier for rank 2`}},
		// Rank 2 never feeds rank 0 (its right neighbour): rank 0's lanes
		// give up waiting for slot 0, and rank 1's (which rank 2 does not
		// credit) for credit or data, depending on how far they got.
		{"ring", "ring/f32/sum/4KiB/oop-reg-plain/np3",
			[]string{`rank 0 lane \d+ gave up after \d+\.\ds waiting for slot 0 seq 1 from rank 2 \(seen 0\)`}},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			start := time.Now()
			o := mpirun(t, 3, 2*time.Minute, "--variant", tc.variant, "--dtype", "f32", "--op", "sum", "--size", "4K",
				"--mode", "oop,reg,plain,aligned", "--inject", "delay:rank=2,us=5000000",
				"--device-timeout", "500ms", "--timeout", "30s")
			took := time.Since(start)
			require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
			require.Less(t, took, 20*time.Second, "the kernels' deadline, not the host watchdog's 30 s")
			require.Contains(t, o.stderr, "hang in case "+tc.id)
			require.Contains(t, o.stderr, "gave up waiting after the device timeout 500ms")
			for _, w := range tc.want {
				require.Regexp(t, w, o.stderr)
			}
		})
	}
}

// The deadline is what makes the kernels give up: with --device-timeout 0
// they wait for ever and the host watchdog (--timeout 2s) fires instead,
// with its own message and no give-up lines.
func TestWithoutDeviceTimeoutTheHostWatchdogFires(t *testing.T) {
	t.Parallel()
	o := mpirun(t, 3, 2*time.Minute, "--variant", "oneshot", "--dtype", "f32", "--op", "sum", "--size", "4K",
		"--mode", "oop,reg,plain,aligned", "--inject", "delay:rank=2,us=5000000",
		"--device-timeout", "0", "--timeout", "2s")
	require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stderr, "saw no completion of")
	require.Contains(t, o.stderr, "within 2s")
	require.NotContains(t, o.stderr, "gave up")
	require.Contains(t, o.stderr, "wait at the end barrier for rank 2")
}
