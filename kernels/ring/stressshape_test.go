package ring

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
)

// resolvedPlans resolves a launch over msgBytes of bf16 on n ranks with
// the parameter values set (the rest default) and plans every lane.
func resolvedPlans(t *testing.T, msgBytes, n int64, set map[string]uint32) ([]Plan, int64) {
	t.Helper()
	v := Variant()
	a := kernels.Args{Count: uint64(msgBytes / 2), NRanks: uint32(n)}
	v.SetParams(&a, set, 2)
	var plans []Plan
	for l := int64(0); l < int64(a.Param0); l++ {
		plans = append(plans, NewPlan(int64(a.Count), n, int64(a.Param0), int64(a.Param1), int64(a.Param2), l))
	}
	return plans, int64(a.Param2)
}

// At the stress matrix's sizes (cases/matrix.go: 4100 B, 64 KiB and the
// slow path's 1 MiB + 12 B) the ring's defaults give 2 slots at 2 ranks,
// where no producer can lap its reader: a credit check one slot short
// passes there whatever the schedule. Its stress shape lets every lane
// lap, at 2 ranks and at 4.
func TestRingStressShapeLetsAProducerLapItsReader(t *testing.T) {
	sizes := []int64{4100, 64 << 10, 1<<20 + 12}
	for _, bytes := range sizes {
		plans, slots := resolvedPlans(t, bytes, 2, nil)
		for _, p := range plans {
			require.False(t, RunsAhead(p, slots), "defaults at %d B: %d slots, Q %d, %d pieces", bytes, slots, p.Q, p.Pieces)
		}
	}
	for _, n := range []int64{2, 4} {
		for _, bytes := range sizes {
			t.Run(fmt.Sprintf("np%d/%dB", n, bytes), func(t *testing.T) {
				plans, slots := resolvedPlans(t, bytes, n, Variant().StressParams)
				require.GreaterOrEqual(t, slots, int64(4))
				for l, p := range plans {
					require.True(t, RunsAhead(p, slots), "lane %d: %d slots, Q %d, %d pieces", l, slots, p.Q, p.Pieces)
				}
			})
		}
	}
}

func TestRingRunsAhead(t *testing.T) {
	for _, tc := range []struct {
		p     Plan
		slots int64
		want  bool
	}{
		{Plan{N: 2, Q: 1, Pieces: 10}, 2, false}, // Q = S/2: the data wait covers the slot
		{Plan{N: 2, Q: 3, Pieces: 12}, 4, true},
		{Plan{N: 2, Q: 3, Pieces: 4}, 4, false}, // never laps
		{Plan{N: 3, Q: 1, Pieces: 12}, 2, true},
		{Plan{N: 4, Q: 6, Pieces: 8}, 8, false},
	} {
		require.Equal(t, tc.want, RunsAhead(tc.p, tc.slots), "%+v on %d slots", tc.p, tc.slots)
	}
}
