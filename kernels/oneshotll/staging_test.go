package oneshotll

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
)

func TestLLStaging(t *testing.T) {
	for _, tc := range []struct {
		name     string
		msg      int64
		n        int
		stageFor int64 // StageBytes(msg, n)
	}{
		{"one element", 2, 2, 2*2*32 + 16},
		{"a partial slot counts whole", 17, 4, 2*4*2*32 + 16},
		{"64 KiB on 8 ranks", 64 << 10, 8, 2*8*4096*32 + 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			need := StageBytes(tc.msg, tc.n)
			require.Equal(t, tc.stageFor, need)
			// What the runner allocates for it holds both halves of n
			// regions even when the staging pointer is misaligned by up
			// to 15 bytes (Align).
			slots := (tc.msg + kernels.VecBytes - 1) / kernels.VecBytes
			require.GreaterOrEqual(t, HalfBytes(uint64(need)), uint64(int64(tc.n)*slots*SlotBytes))
		})
	}
	require.Zero(t, HalfBytes(15))
	require.Equal(t, uint64(32), Align(17))
	require.Equal(t, uint64(32), Align(32))
	require.Empty(t, TooBig(MaxBytes))
	require.Contains(t, TooBig(MaxBytes+1), "oneshot-ll takes messages up to")
}
