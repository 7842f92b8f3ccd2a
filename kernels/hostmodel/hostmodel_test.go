package hostmodel_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// barriers is a model built from the toolkit alone, as a variant's folder
// builds its own: start barrier, reduce this block's span into the output,
// end barrier. It tests the toolkit without any variant.
func barriers(k *hostmodel.Kernel, b int) error {
	a := k.Args()
	epoch, err := k.EpochBegin(b)
	if err != nil {
		return err
	}
	if err := k.Barrier(sigblock.PhaseStart, b, epoch); err != nil {
		return err
	}
	k.Delay()
	count := int64(a.Count)
	lo, hi := hostmodel.Span(count, b, k.Blocks())
	k.ReduceInto(k.Bytes(a.Out, count*k.Elem()), lo, k.OutEnd(hi))
	k.Overrun(lo, hi)
	if err := k.Barrier(sigblock.PhaseEnd, b, epoch); err != nil {
		return err
	}
	k.EpochEnd(b, epoch)
	return nil
}

func modelVariant(body hostmodel.Body) *kernels.Variant {
	return &kernels.Variant{Name: "barriers", ID: 0x7e57, DTypes: kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 8, Order: reference.OrderRankAscendingF32, Kind: kernels.KindKernel,
		Blocks: 4, Threads: 512, HostBlocks: 3, Host: body}
}

// The toolkit's reduction is the reference's order, bit for bit, over
// blocks that split the message, and block 0 writes the trace.
func TestToolkitModelMatchesReference(t *testing.T) {
	v := modelVariant(barriers)
	for _, d := range reference.DTypes {
		for _, op := range reference.Ops {
			w := hostmodeltest.NewWorld(3, d, 1001, false)
			for launch := 1; launch <= 2; launch++ {
				w.Fill(launch)
				for _, err := range w.Launch(v, op, 0, 0) {
					require.NoError(t, err)
				}
				for r := 0; r < 3; r++ {
					spec := reference.CheckSpec{Gen: w.Gen, Op: op, NRanks: 3, Iter: launch, Order: v.Order}
					cr := reference.Check(spec, w.Result(r))
					require.Zero(t, cr.Wrong, "%s %s rank %d: %s", d, op, r, cr.String())
					id, count := w.Trace(r)
					require.Equal(t, v.ID, id)
					require.Equal(t, uint32(launch), count)
				}
			}
		}
	}
}

func TestToolkitBarrierGivesUpAfterTheDeadline(t *testing.T) {
	hostmodeltest.CheckBarrierGivesUp(t, modelVariant(barriers))
}

func TestToolkitTagMismatchDiagnosesADifferentCall(t *testing.T) {
	hostmodeltest.CheckTagMismatch(t, modelVariant(barriers))
}

// Run refuses what a GPU launch would refuse, and a model's bad address
// is the launch's error (as the GPU's illegal address), not a crash.
func TestRunRefusesBadLaunches(t *testing.T) {
	w := hostmodeltest.NewWorld(2, reference.F32, 64, false)
	v := modelVariant(barriers)
	args := func(rank uint32) *kernels.Args {
		a := &kernels.Args{Count: 64, Rank: rank, NRanks: 2, Out: w.Out[rank]}
		for p := 0; p < 2; p++ {
			a.PeerIn[p], a.PeerStage[p], a.PeerSignal[p] = w.In[p], w.Stage[p], w.Sig[p]
		}
		return a
	}
	run := func(v *kernels.Variant, a *kernels.Args, blocks int) error {
		return hostmodel.Run(&w.Mem, &hostmodel.Launch{Variant: v, DType: reference.F32, Op: reference.Sum, Args: a, Blocks: blocks})
	}
	require.ErrorContains(t, run(v, args(0), 0), "host barriers: 0 blocks, want 1..256")
	require.ErrorContains(t, run(v, args(0), sigblock.MaxBlocks+1), "257 blocks")
	bad := args(0)
	bad.Rank = 2
	require.ErrorContains(t, run(v, bad, 1), "host barriers: rank 2 of 2")
	none := modelVariant(barriers)
	none.Host = nil // as nccl's
	require.ErrorContains(t, run(none, args(0), 1), `host backend has no model of variant "barriers"`)
	unmapped := modelVariant(func(k *hostmodel.Kernel, b int) error {
		k.Bytes(1<<40, 16)
		return nil
	})
	require.ErrorContains(t, run(unmapped, args(0), 2), "host barriers block ")
}

// OncePerLaunch runs its function once for all the blocks of a launch, and
// again for the next launch.
func TestOncePerLaunch(t *testing.T) {
	var calls atomic.Int32
	v := modelVariant(func(k *hostmodel.Kernel, b int) error {
		got := k.OncePerLaunch(func() any { return calls.Add(1) }).(int32)
		if got != calls.Load() {
			t.Errorf("block %d got %d, want %d", b, got, calls.Load())
		}
		return nil
	})
	w := hostmodeltest.NewWorld(1, reference.F32, 64, false)
	for launch := int32(1); launch <= 3; launch++ {
		for _, err := range w.Launch(v, reference.Sum, 0, 0) {
			require.NoError(t, err)
		}
		require.Equal(t, launch, calls.Load())
	}
}
