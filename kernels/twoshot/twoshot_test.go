package twoshot

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
)

func TestTwoshotResolve(t *testing.T) {
	v := Variant()
	for _, tc := range []struct {
		name  string
		set   map[string]uint32
		count uint64
		want  uint32
	}{
		{"auto, small: pull", nil, PushMinBytes/2 - 1, GatherPull},
		{"auto, at the threshold: push", nil, PushMinBytes / 2, GatherPush},
		{"pull asked for at a large size", map[string]uint32{"gather": 1}, 1 << 24, GatherPull},
		{"push asked for at a small size", map[string]uint32{"gather": 2}, 8, GatherPush},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := kernels.Args{Count: tc.count}
			v.SetParams(&a, tc.set, 2)
			require.Equal(t, tc.want, a.Param0)
		})
	}
}

// The grid covers one chunk, not the message: one 16-byte vector per
// thread, within the block cap.
func TestGrid(t *testing.T) {
	v := Variant()
	for _, tc := range []struct {
		count   uint64
		n       uint32
		elem    int64
		threads int
		want    int
	}{
		{1, 4, 4, 512, 1},
		{4 * 512 * 4, 4, 4, 512, 1},     // chunks of 512 vectors' elements: one block
		{4 * 512 * 4 * 3, 4, 4, 512, 3}, // three blocks per chunk
		{4*512*4*3 + 4, 4, 4, 512, 4},   // the chunk rounds up to a fourth block
		{1 << 28, 2, 2, 512, v.Blocks},  // capped
		{3 * 512 * 8, 1, 2, 512, 3},     // one rank: the chunk is the message
	} {
		a := kernels.Args{Count: tc.count, NRanks: tc.n}
		require.Equal(t, tc.want, kernels.Grid(&v, &a, tc.elem, v.Blocks, tc.threads), "%+v", tc)
	}
}
