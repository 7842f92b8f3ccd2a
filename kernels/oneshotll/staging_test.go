package oneshotll

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/internal/cconst"
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

// The fault switch's bit is written on both sides of the launch ABI.
func TestLLNoFlagMatchesCUDA(t *testing.T) {
	src, err := os.ReadFile("oneshot_ll.cuh")
	require.NoError(t, err)
	consts, err := cconst.FromC(string(src))
	require.NoError(t, err)
	require.Equal(t, map[string]uint64{"INJECT_LL_NO_FLAG": uint64(InjectLlNoFlag)}, consts)
}
