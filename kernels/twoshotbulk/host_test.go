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

// The checks every model with barriers passes.
func TestBarrierGivesUpAfterTheDeadline(t *testing.T) {
	v := Variant()
	hostmodeltest.CheckBarrierGivesUp(t, &v)
}

func TestTagMismatchDiagnosesADifferentCall(t *testing.T) {
	v := Variant()
	hostmodeltest.CheckTagMismatch(t, &v)
}

// Matching tags change nothing: launch after launch passes, and every
// block's claim is released at its end.
func TestMatchingTagsPassAndReleaseClaims(t *testing.T) {
	v := Variant()
	w := hostmodeltest.NewWorld(3, reference.F32, 1024, false)
	for iter := 0; iter < 3; iter++ {
		w.Fill(iter)
		errs, _ := w.LaunchTagged(t, &v, []int64{1024, 1024, 1024}, hostmodeltest.SameGens(3, 1, 2, 1), 0)
		for r := 0; r < 3; r++ {
			require.NoError(t, errs[r])
			_, ok := w.Snapshot(r).GiveUp()
			require.False(t, ok)
		}
	}
	for r := 0; r < 3; r++ {
		for b := 0; b < v.HostBlocks; b++ {
			require.Zero(t, w.Snapshot(r).Claim(b))
			require.Equal(t, uint32(3), w.Snapshot(r).Epoch(b))
		}
	}
}

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

// The planted bugs reach the output: skip-last leaves the last element
// unwritten, overrun writes one element past the end (where the runner's
// guard bytes sit).
func TestModelPlantedBugs(t *testing.T) {
	v := Variant()
	const count = 100
	for _, inPlace := range []bool{false, true} {
		w := hostmodeltest.NewWorld(2, reference.F32, count, inPlace)
		w.Fill(0)
		out := w.Mem.Bytes(w.Out[0], (count+1)*4)
		if inPlace {
			out = w.Mem.Bytes(w.In[0], (count+1)*4)
		}
		for i := range out[count*4:] {
			out[count*4+i] = 0xAB
		}
		for _, err := range w.Launch(&v, reference.Sum, 0, kernels.InjectOverrun) {
			require.NoError(t, err)
		}
		require.NotEqual(t, []byte{0xAB, 0xAB, 0xAB, 0xAB}, out[count*4:], "overrun writes one element past the end (in place %v)", inPlace)
	}
	w := hostmodeltest.NewWorld(2, reference.F32, count, false)
	w.Fill(0)
	last := w.Mem.Bytes(w.Out[0], count*4)[(count-1)*4:]
	copy(last, []byte{1, 2, 3, 4})
	for _, err := range w.Launch(&v, reference.Sum, 0, kernels.InjectSkipLast) {
		require.NoError(t, err)
	}
	require.Equal(t, []byte{1, 2, 3, 4}, last, "skip-last leaves the last element alone")
}
