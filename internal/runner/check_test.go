package runner

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The host checks the first and last iteration of every case and one in
// spotPeriod of the rest, drawn from seed and case: at most one in 16, and
// about 64 KiB per iteration at large sizes.
func TestSpotChecks(t *testing.T) {
	for _, tc := range []struct {
		bytes  int64
		period uint64
	}{
		{4, 16}, {64 << 10, 16}, {1 << 20, 16}, {4 << 20, 64}, {64 << 20, 1024}, {256 << 20, 4096}, {1<<20 + 1, 17},
	} {
		require.Equal(t, tc.period, spotPeriod(tc.bytes), "%d bytes", tc.bytes)
	}
	const n, id = 200000, "oneshot/bf16/sum/4MiB/oop-reg-plain/np8"
	spots, other := 0, 0
	for i := 0; i < n; i++ {
		if SpotChecked(7, id, i, n, 4<<20) {
			spots++
		}
		if SpotChecked(7, id, i, n, 4<<20) != SpotChecked(8, id, i, n, 4<<20) {
			other++
		}
	}
	require.True(t, SpotChecked(7, id, 0, n, 4<<20))
	require.True(t, SpotChecked(7, id, n-1, n, 4<<20))
	require.InDelta(t, n/64, spots, n/64/5, "one in 64 at 4 MiB")
	require.Greater(t, other, spots/2, "another seed, other iterations")
	require.True(t, SpotChecked(7, id, 0, 1, 1<<30), "a one-iteration case is checked on the host")
}

// mergeChecks keeps the fewest iterations and the slowest rate of any rank.
func TestMergeChecks(t *testing.T) {
	require.Nil(t, mergeChecks([]rankResult{{}, {}}))
	got := mergeChecks([]rankResult{
		{Check: &checkStats{Checker: CheckDevice, DeviceIters: 100, HostIters: 9, DeviceSec: 0.5, HostSec: 1, Bytes: 1e9}},
		{Check: &checkStats{Checker: CheckDevice, DeviceIters: 100, HostIters: 8, DeviceSec: 1, HostSec: 0.5, Bytes: 1e9}},
	})
	require.Equal(t, CheckDevice, got.Checker)
	require.Equal(t, 100, got.DeviceIters)
	require.Equal(t, 8, got.HostIters)
	require.InDelta(t, 100.0, got.DeviceGBps, 1e-9)
	require.InDelta(t, 9.0, got.HostGBps, 1e-9)
}
