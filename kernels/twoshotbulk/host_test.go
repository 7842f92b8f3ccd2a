package twoshotbulk

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"
	"github.com/artest/artest/kernels/twoshot"
	"github.com/artest/artest/reference"
)

// The model computes twoshot's pull bits, and what the order-aware
// reference says, on every rank; the trace word names this variant.
func TestModelMatchesTwoshotPull(t *testing.T) {
	two := twoshot.Variant()
	bulk := Variant()
	for _, tc := range []struct {
		n       int
		dtype   reference.DType
		op      reference.Op
		count   int64
		inPlace bool
	}{
		{1, reference.F32, reference.Sum, 5, false},
		{2, reference.F32, reference.Sum, 1, false},
		{3, reference.BF16, reference.Sum, 1027, false},
		{4, reference.F16, reference.Max, 4099, true},
		{3, reference.F32, reference.Min, 777, true},
	} {
		t.Run(fmt.Sprintf("np%d/%s/%s/%d/inplace=%v", tc.n, tc.dtype, tc.op, tc.count, tc.inPlace), func(t *testing.T) {
			results := map[string][][]byte{}
			for _, run := range []struct {
				v      *kernels.Variant
				param0 uint32
			}{{&bulk, 0}, {&two, twoshot.GatherPull}} {
				w := hostmodeltest.NewWorld(tc.n, tc.dtype, tc.count, tc.inPlace)
				for launch := 1; launch <= 2; launch++ { // the second launch runs at epoch 2
					w.Fill(launch)
					for _, err := range w.Launch(run.v, tc.op, run.param0, 0) {
						require.NoError(t, err, run.v.Name)
					}
					for r := 0; r < tc.n; r++ {
						got := w.Result(r)
						spec := reference.CheckSpec{Gen: w.Gen, Op: tc.op, NRanks: tc.n, Iter: launch, Order: run.v.Order}
						cr := reference.Check(spec, got)
						require.Zero(t, cr.Wrong, "%s rank %d launch %d: %s", run.v.Name, r, launch, cr.String())
						id, count := w.Trace(r)
						require.Equal(t, run.v.ID, id, "%s rank %d", run.v.Name, r)
						require.Equal(t, uint32(launch), count)
						if launch == 2 {
							results[run.v.Name] = append(results[run.v.Name], got)
						}
					}
				}
			}
			require.Equal(t, results["twoshot"], results["twoshot-bulk"])
		})
	}
}
