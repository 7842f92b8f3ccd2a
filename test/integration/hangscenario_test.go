//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The hang scenarios (--inject size-mismatch, reregister, two-streams), on
// the host backend: each ends with exit 3 and
// a diagnosis line naming the rank and the barrier, long before the host
// watchdog's --timeout 60s. Launch-tag mismatches and claimed blocks give
// up at once; the deadline (--device-timeout 2s) only ends the blocks
// that wait for peers which already left. Rank 0 prints the diagnosis as
// soon as its own stream is done, so only its own line is certain to be
// in it (the others' records may come a moment later).
func TestHangScenariosAreDiagnosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, variant, mode, inject string
		want                        []string // regular expressions
	}{
		{"size-mismatch oneshot", "oneshot", "oop,reg,plain,aligned", "size-mismatch:rank=1", []string{
			`on rank 0, a kernel block of the checked call gave up at a barrier: a peer's launch is not the call this launch made`,
			`rank 0 block \d+ gave up at the start barrier: rank 1 launched a different call \(tag 0x[0-9a-f]{8}, want 0x[0-9a-f]{8}: size, variant, dtype, op, grid or parameters differ\)`}},
		{"size-mismatch twoshot", "twoshot", "oop,reg,plain,aligned", "size-mismatch:rank=2", []string{
			`rank 0 block \d+ gave up at the start barrier: rank 2 launched a different call`}},
		{"reregister oneshot graph", "oneshot", "oop,reg,graph,aligned", "reregister:rank=1", []string{
			`rank 0 block \d+ gave up at the start barrier: rank 1 re-registered its buffers \(generation 1\) after this launch was captured \(generation 0\): a graph replayed with a peer's old pointers`}},
		{"reregister twoshot graph", "twoshot", "ip,reg,graph,aligned", "reregister:rank=2", []string{
			`rank 0 block \d+ gave up at the start barrier: rank 2 re-registered its buffers \(generation 1\)`}},
		{"two-streams oneshot", "oneshot", "oop,reg,plain,aligned", "two-streams", []string{
			`on rank 0, a kernel block of the checked call gave up at its start: another launch of this rank was using its SignalBlock`,
			`rank 0 block \d+ gave up before the start barrier: another launch of rank 0 was still using block \d+'s signal state \(two allreduces in flight on one SignalBlock, e.g. on two streams\)`}},
		{"two-streams twoshot", "twoshot", "oop,stg,plain,aligned", "two-streams", []string{
			`rank 0 block \d+ gave up before the start barrier: another launch of rank 0`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			o := mpirun(t, 3, 2*time.Minute, "--variant", tc.variant, "--dtype", "f32", "--op", "sum", "--size", "4K",
				"--mode", tc.mode, "--inject", tc.inject, "--device-timeout", "2s", "--timeout", "60s")
			took := time.Since(start)
			require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
			require.Less(t, took, 40*time.Second, "diagnosed, not left to the host watchdog's 60 s")
			require.Contains(t, o.stderr, "hang in case "+tc.variant+"/f32/sum/4KiB/")
			for _, w := range tc.want {
				require.Regexp(t, w, o.stderr)
			}
			require.NotContains(t, o.stderr, "goroutine ", "no Go stack trace")
			require.NotContains(t, o.stderr, "panic:")
		})
	}
}

// The same re-registration in a plain case is harmless: every call is
// built from the current buffers, so the case passes.
func TestReregisterOnlyHurtsGraphs(t *testing.T) {
	t.Parallel()
	o := mpirun(t, 2, 2*time.Minute, "--variant", "oneshot", "--dtype", "f32", "--op", "sum", "--size", "4K",
		"--mode", "oop,reg,plain,aligned", "--inject", "reregister:rank=1", "--device-timeout", "2s", "--timeout", "60s")
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
}
