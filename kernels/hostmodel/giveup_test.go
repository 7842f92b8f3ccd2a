package hostmodel_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/kernels/ring"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// testWaitTimeout is the deadline of the give-up tests: short, so the tests
// are fast, and far above a scheduling hiccup of the ranks that do run.
const testWaitTimeout = 100 * time.Millisecond

// launchSome runs variant v on the given ranks only, with the deadline
// testWaitTimeout: the other ranks never launch, so their peers must give
// up. It returns each launched rank's error and how long the launches took.
func (w *world) launchSome(t *testing.T, v *kernels.Variant, inject uint32, ranks ...int) (map[int]error, time.Duration) {
	t.Helper()
	errs := map[int]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for _, r := range ranks {
		a := &kernels.Args{Count: uint64(w.count), Rank: uint32(r), NRanks: uint32(w.nranks), Inject: inject,
			VariantID: v.ID, StageBytes: uint64(w.count * w.elem), Out: w.out[r],
			WaitTimeoutNs: uint64(testWaitTimeout.Nanoseconds())}
		for p := 0; p < w.nranks; p++ {
			a.PeerIn[p], a.PeerStage[p], a.PeerSignal[p] = w.in[p], w.stage[p], w.sig[p]
		}
		v.SetParams(a, nil, w.elem)
		if v.ID == ring.ID {
			a.Param1, a.Param2 = 256, 4 // slot bytes, slots: small rings fit the test's staging
		}
		blocks := kernels.Grid(v, a, w.elem, v.HostBlocks, v.Threads)
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			err := hostmodel.Run(&w.mem, &hostmodel.Launch{Variant: v, DType: w.dtype, Op: reference.Sum, Args: a, Blocks: blocks})
			mu.Lock()
			errs[r] = err
			mu.Unlock()
		}(r)
	}
	wg.Wait()
	return errs, time.Since(start)
}

func (w *world) snapshot(r int) sigblock.Snapshot {
	return append(sigblock.Snapshot(nil), w.mem.Bytes(w.sig[r], sigblock.Size)...)
}

// A barrier whose peer never arrives gives up after the launch's deadline:
// the launch completes without an error (as a GPU launch whose blocks
// exited), the diag words say which block waited at which barrier for whom,
// and block 0, which gave up, wrote no trace.
func TestBarrierGivesUpAfterTheDeadline(t *testing.T) {
	for _, name := range []string{"oneshot", "twoshot", "oneshot-cpasync"} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(3, reference.F32, 1024, false)
			w.fill(0)
			errs, took := w.launchSome(t, lookup(t, name), 0, 0, 1)
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			require.Less(t, took, 20*testWaitTimeout, "the launch must end soon after the deadline")
			for _, r := range []int{0, 1} {
				g, ok := w.snapshot(r).GiveUp()
				require.True(t, ok, "rank %d recorded no give-up", r)
				require.Equal(t, r, g.Rank)
				require.Equal(t, sigblock.DiagKindBarrier, g.Kind)
				require.Equal(t, sigblock.PhaseStart, g.Where)
				require.Equal(t, 2, g.Peer, "rank 2 never launched")
				require.Equal(t, uint32(1), g.Want, "the first launch's epoch")
				require.Equal(t, uint32(0), g.Seen)
				require.Equal(t, lookup(t, name).ID, g.Variant)
				require.GreaterOrEqual(t, g.Waited, testWaitTimeout)
				require.Equal(t, testWaitTimeout, g.Timeout)
				_, count := w.trace(r)
				require.Zero(t, count, "block 0 gave up: no trace")
			}
			_, ok := w.snapshot(2).GiveUp()
			require.False(t, ok)
		})
	}
}

// The ring's own waits give up too: with the start barrier switched off,
// rank 0's lane waits for a slot from its left neighbour, rank 2, which
// never launched.
func TestRingWaitGivesUpAfterTheDeadline(t *testing.T) {
	w := newWorld(3, reference.F32, 4096, false)
	w.fill(0)
	v := lookup(t, "ring")
	errs, took := w.launchSome(t, v, kernels.InjectNoStartBarrier, 0, 1)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Less(t, took, 40*testWaitTimeout)
	g, ok := w.snapshot(0).GiveUp()
	require.True(t, ok)
	require.Equal(t, sigblock.DiagKindRingData, g.Kind)
	require.Equal(t, 2, g.Peer)
	require.Equal(t, uint32(1), g.Want, "the first piece's sequence")
	require.Equal(t, uint32(0), g.Seen)
	require.Equal(t, v.ID, g.Variant)
	require.Contains(t, g.String(), "rank 0 lane 0 gave up after")
	require.Contains(t, g.String(), "waiting for slot 0 seq 1 from rank 2 (seen 0)")
}

// Without a deadline (WaitTimeoutNs 0) nothing gives up: the same launch of
// every rank passes and leaves the diag words empty.
func TestNoDeadlineNoGiveUp(t *testing.T) {
	w := newWorld(2, reference.F32, 1024, false)
	w.fill(0)
	for _, err := range w.launch(lookup(t, "oneshot"), reference.Sum, 0, 0) {
		require.NoError(t, err)
	}
	for r := 0; r < 2; r++ {
		_, ok := w.snapshot(r).GiveUp()
		require.False(t, ok)
	}
}
