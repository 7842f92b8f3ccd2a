package coresident

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBlocks(t *testing.T) {
	for _, c := range []struct {
		name string
		l    Limits
		want int
		text string
	}{
		{"4 ranks, 512 threads, 4 per SM", Limits{PerSM: 4, SMs: 132, Ranks: 4}, 132, "occupancy 4 blocks/SM x 132 SMs / 4 ranks per GPU = 132"},
		{"8 ranks round down", Limits{PerSM: 3, SMs: 132, Ranks: 8}, 49, "occupancy 3 blocks/SM x 132 SMs / 8 ranks per GPU = 49"},
		{"one rank takes the whole GPU", Limits{PerSM: 2, SMs: 132, Ranks: 1}, 264, ""},
		{"MPS limits the context", Limits{PerSM: 4, SMs: 132, ContextSMs: 7, Ranks: 2}, 28, "at most 4 blocks/SM x 7 SMs of this rank's context = 28"},
		{"context limit above the even share", Limits{PerSM: 4, SMs: 132, ContextSMs: 100, Ranks: 4}, 132, ""},
		{"context SMs equal to the GPU's", Limits{PerSM: 1, SMs: 132, ContextSMs: 132, Ranks: 2}, 66, "occupancy 1 blocks/SM x 132 SMs / 2 ranks per GPU = 66"},
		{"more ranks than block slots", Limits{PerSM: 1, SMs: 4, Ranks: 8}, 0, "= 0"},
		{"kernel does not fit an SM", Limits{PerSM: 0, SMs: 132, Ranks: 2}, 0, ""},
		{"no ranks", Limits{PerSM: 2, SMs: 132}, 0, ""},
		{"late rank: one block per SM of the share", Limits{PerSM: 4, SMs: 132, Ranks: 4, Late: true}, 33,
			"occupancy 4 blocks/SM x 132 SMs / 4 ranks per GPU, at most 1 block/SM of this rank's share under a late rank (33) = 33"},
		{"late rank: occupancy still lower", Limits{PerSM: 1, SMs: 132, Ranks: 8, Late: true}, 16, "= 16"},
		{"late rank: context limit", Limits{PerSM: 4, SMs: 132, ContextSMs: 7, Ranks: 2, Late: true}, 7, "(7) = 7"},
		{"late rank: more ranks than SMs", Limits{PerSM: 4, SMs: 2, Ranks: 4, Late: true}, 0, "= 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.l.Blocks())
			require.Contains(t, c.l.String(), c.text)
			// The grids of all ranks fit: Ranks x Blocks <= PerSM x SMs.
			require.LessOrEqual(t, c.l.Ranks*c.l.Blocks(), c.l.PerSM*c.l.SMs)
		})
	}
}

// Exhaustive over small shapes: the cap is the largest grid that fits.
func TestBlocksIsTheLargestThatFits(t *testing.T) {
	for per := 1; per <= 8; per++ {
		for sms := 1; sms <= 40; sms++ {
			for ranks := 1; ranks <= 9; ranks++ {
				l := Limits{PerSM: per, SMs: sms, Ranks: ranks}
				b := l.Blocks()
				require.LessOrEqual(t, ranks*b, per*sms)
				require.Greater(t, ranks*(b+1), per*sms)
			}
		}
	}
}
