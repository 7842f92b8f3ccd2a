package oneshotcpasync

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"
	"github.com/artest/artest/kernels/oneshot"
	"github.com/artest/artest/reference"
)

// The host model of oneshot-cpasync computes what the oneshot model does,
// bit for bit, and what the order-aware reference says, on every rank; and
// the trace word names this variant, not oneshot.
func TestCpasyncModelMatchesOneshot(t *testing.T) {
	one := oneshot.Variant()
	cp := variant()
	for _, tc := range []struct {
		n       int
		dtype   reference.DType
		op      reference.Op
		count   int64
		inPlace bool
	}{
		{2, reference.F32, reference.Sum, 1, false},
		{3, reference.BF16, reference.Sum, 1027, false},
		{4, reference.F16, reference.Max, 4099, true},
		{3, reference.F32, reference.Min, 777, true},
	} {
		t.Run(fmt.Sprintf("np%d/%s/%s/%d/inplace=%v", tc.n, tc.dtype, tc.op, tc.count, tc.inPlace), func(t *testing.T) {
			results := map[string][][]byte{}
			for _, v := range []*kernels.Variant{cp, &one} {
				w := hostmodeltest.NewWorld(tc.n, tc.dtype, tc.count, tc.inPlace)
				for launch := 1; launch <= 2; launch++ { // the second launch runs at epoch 2
					w.Fill(launch)
					for _, err := range w.Launch(v, tc.op, 0, 0) {
						require.NoError(t, err, v.Name)
					}
					for r := 0; r < tc.n; r++ {
						got := w.Result(r)
						spec := reference.CheckSpec{Gen: w.Gen, Op: tc.op, NRanks: tc.n, Iter: launch, Order: v.Order}
						cr := reference.Check(spec, got)
						require.Zero(t, cr.Wrong, "%s rank %d launch %d: %s", v.Name, r, launch, cr.String())
						id, count := w.Trace(r)
						require.Equal(t, v.ID, id, "%s rank %d", v.Name, r)
						require.Equal(t, uint32(launch), count)
						if launch == 2 {
							results[v.Name] = append(results[v.Name], got)
						}
					}
				}
			}
			require.Equal(t, results["oneshot"], results["oneshot-cpasync"])
		})
	}
}

// Like the kernel's trap, the model refuses a stage count outside the range.
func TestCpasyncModelRejectsBadStages(t *testing.T) {
	cp := variant()
	for _, stages := range []uint32{1, MaxStages + 1} {
		w := hostmodeltest.NewWorld(2, reference.F32, 64, false)
		w.Fill(0)
		for _, err := range w.Launch(cp, reference.Sum, stages, 0) {
			require.ErrorContains(t, err, fmt.Sprintf("stages (param0) %d", stages))
		}
	}
	for _, stages := range []uint32{MinStages, MaxStages} {
		w := hostmodeltest.NewWorld(2, reference.F32, 64, false)
		w.Fill(0)
		for _, err := range w.Launch(cp, reference.Sum, stages, 0) {
			require.NoError(t, err)
		}
	}
}
