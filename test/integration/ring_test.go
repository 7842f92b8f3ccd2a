//go:build integration

package integration

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The ring passes with its smallest rings (many pieces through 2 slots:
// 256 at 4100 B), odd sizes and misaligned offsets, and with the most
// lanes; at 3 ranks, where chunks do not divide evenly. (65534 B, 4096
// pieces, added a minute on 2 cores and no new case of the protocol.)
func TestRingSmallRingsOddSizesAndMaxLanes(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--size", "2,6,12,100,1020,4100", "--param", "slots=2", "--param", "slot-bytes=16", "--op", "sum,max"},
		{"--size", "1M", "--param", "lanes=32", "--dtype", "bf16", "--op", "sum"},
	} {
		full := append([]string{"--variant", "ring", "--iters", "1", "--reps", "1", "--warmup", "0"}, args...)
		o := mpirun(t, 3, 5*time.Minute, full...)
		require.Equal(t, 0, o.code, "%v\n%s\n%s", args, o.stdout, o.stderr)
		require.Contains(t, o.stdout, ", FAIL 0, skipped 0")
	}
}

// The credits are what keeps a slot from being overwritten before its
// consumer has read it: without the credit wait, and with the last rank
// slow to start (so its left neighbour runs ahead), the stress mode fails
// with wrong values at 2 and 4 ranks; with the credit wait it passes.
func TestRingNoCreditWaitFailsUnderStress(t *testing.T) {
	t.Parallel()
	for _, np := range []int{2, 4} {
		args := []string{"--variant", "ring", "--dtype", "f32", "--op", "sum", "--size", "64K", "--mode", "oop,reg,plain,aligned",
			"--stress", "50", "--param", "slots=4", "--param", "slot-bytes=1024", "--inject", "delay:rank=" + itoa(np-1) + ",us=2000"}
		js := filepath.Join(t.TempDir(), "r.json")
		o := mpirun(t, np, 3*time.Minute, append(args, "--inject", "no-credit-wait", "--json", js)...)
		require.Equal(t, 1, o.code, "np %d\n%s\n%s", np, o.stdout, o.stderr)
		require.Contains(t, o.stdout, "# FAIL ring/f32/sum/64KiB/oop-reg-plain/np"+itoa(np))
		r := readReport(t, js)
		require.Equal(t, 1, r.Summary.Fail)
		require.Positive(t, r.Cases[0].Wrong, "wrong values, not an error")

		o = mpirun(t, np, 3*time.Minute, args...)
		require.Equal(t, 0, o.code, "np %d\n%s\n%s", np, o.stdout, o.stderr)
	}
}

// A rank that never feeds its right neighbour hangs the ring; the watchdog
// exits 3 and says who waits for which slot of whom, and which rank waits
// for nobody.
func TestRingHangNamesTheWaitingRanks(t *testing.T) {
	t.Parallel()
	o := mpirun(t, 4, 2*time.Minute, "--variant", "ring", "--dtype", "f32", "--op", "sum", "--size", "64K",
		"--mode", "oop,reg,plain,aligned", "--inject", "delay:rank=2,us=3000000", "--timeout", "1s")
	require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stderr, "hang in case ring/f32/sum/64KiB/oop-reg-plain/np4")
	require.Contains(t, o.stderr, "rank 3 lane 0 waits for slot 0 seq 1 from rank 2 (seen 0)")
	require.Contains(t, o.stderr, "rank 2 lane 0 is in a ring launch and waits for no peer")
}
