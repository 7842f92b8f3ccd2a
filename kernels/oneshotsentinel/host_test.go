package oneshotsentinel

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"
	"github.com/artest/artest/reference"
)

// Every lag reduces every slot once, from this launch's data: blocks of
// several slots (HostBlocks 4 over 1000-odd slots), launches of both
// halves, ranks that start in any order (goroutines), and a lag past the
// span (all pushes first).
func TestLagReducesEverySlotOnce(t *testing.T) {
	v := Variant()
	for _, lag := range []uint32{1, 2, 3, 64, LagAll} {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("lag%d-np%d", lag, n), func(t *testing.T) {
				w := hostmodeltest.NewWorldFor(&v, n, reference.BF16, 8195, false)
				w.Params = map[string]uint32{"lag": lag}
				for iter := 0; iter < 3; iter++ {
					w.Fill(iter)
					for r, err := range w.Launch(&v, reference.Sum, 0, 0) {
						require.NoError(t, err, "rank %d iteration %d", r, iter)
					}
					for r := 0; r < n; r++ {
						res := w.Check(r, reference.Sum, iter, v.Order)
						require.True(t, res.OK(), "rank %d iteration %d: %s", r, iter, res)
					}
				}
			})
		}
	}
}

// The variant's parameter: auto resolves to LagTwoRanks at two ranks and
// all pushes first at more; a set lag stays as it is.
func TestResolveLag(t *testing.T) {
	v := Variant()
	for _, tc := range []struct {
		set   uint32
		ranks uint32
		want  uint32
	}{{0, 2, LagTwoRanks}, {0, 1, LagTwoRanks}, {0, 4, LagAll}, {0, 8, LagAll}, {1, 2, 1}, {8, 4, 8}, {LagAll, 2, LagAll}} {
		a := &kernels.Args{Count: 1 << 20, NRanks: tc.ranks}
		v.SetParams(a, map[string]uint32{"lag": tc.set}, 2)
		require.Equal(t, tc.want, a.Param0, "lag=%d on %d ranks", tc.set, tc.ranks)
	}
}
