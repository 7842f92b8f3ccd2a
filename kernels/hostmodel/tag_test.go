package hostmodel_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// launchTagged runs v on every rank at once with launch tags set as the
// backends set them: count[r] elements on rank r (the grid of the common
// count, as the size-mismatch injection launches), and gens[r] the
// generations rank r holds of every rank's buffers. It returns the errors
// and how long the launches took.
func (w *world) launchTagged(t *testing.T, v *kernels.Variant, counts []int64, gens [][]uint32, timeout time.Duration) (map[int]error, time.Duration) {
	t.Helper()
	errs := map[int]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for r := 0; r < w.nranks; r++ {
		a := &kernels.Args{Count: uint64(counts[r]), Rank: uint32(r), NRanks: uint32(w.nranks),
			VariantID: v.ID, StageBytes: uint64(w.count * w.elem), Out: w.out[r],
			WaitTimeoutNs: uint64(timeout.Nanoseconds())}
		for p := 0; p < w.nranks; p++ {
			a.PeerIn[p], a.PeerStage[p], a.PeerSignal[p] = w.in[p], w.stage[p], w.sig[p]
		}
		v.SetParams(a, nil, w.elem)
		blocks := v.HostBlocks
		kernels.SetTags(a, kernels.CallHash(v, w.dtype, reference.Sum, a, blocks, v.Threads), gens[r])
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

func sameGens(n int, gens ...uint32) [][]uint32 {
	out := make([][]uint32, n)
	for r := range out {
		out[r] = gens
	}
	return out
}

// One rank launching a smaller count: every rank's blocks find another tag
// at the start barrier and give up at once, long before the deadline,
// naming the barrier and the rank whose call differs.
func TestTagMismatchDiagnosesADifferentCall(t *testing.T) {
	for _, name := range []string{"oneshot", "twoshot", "oneshot-cpasync"} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(3, reference.F32, 1024, false)
			w.fill(0)
			counts := []int64{1024, 1020, 1024} // rank 1: one 16-byte slot less
			errs, took := w.launchTagged(t, lookup(t, name), counts, sameGens(3, 1, 1, 1), 30*time.Second)
			for r := 0; r < 3; r++ {
				require.NoError(t, errs[r])
			}
			require.Less(t, took, 10*time.Second, "a mismatch is found at the barrier, not at the 30 s deadline")
			for r := 0; r < 3; r++ {
				g, ok := w.snapshot(r).GiveUp()
				require.True(t, ok, "rank %d recorded nothing", r)
				require.Equal(t, sigblock.DiagKindTagMismatch, g.Kind)
				require.Equal(t, sigblock.PhaseStart, g.Where)
				if r != 1 {
					require.Equal(t, 1, g.Peer, "rank %d must name rank 1", r)
				}
				require.Contains(t, g.String(), "at the start barrier: rank ")
				require.Contains(t, g.String(), "launched a different call")
			}
		})
	}
}

// A peer whose buffers are newer than the ones a launch holds (it
// re-registered after the launch was captured): the ranks holding the old
// generation name it; the re-registered rank, whose expectations all hold,
// passes the start barrier and gives up at its next barrier's deadline,
// since its peers left.
func TestTagMismatchDiagnosesAReregisteredPeer(t *testing.T) {
	w := newWorld(3, reference.F32, 1024, false)
	w.fill(0)
	gens := [][]uint32{{1, 1, 1}, {1, 2, 1}, {1, 1, 1}} // rank 1 holds its own new generation
	errs, _ := w.launchTagged(t, lookup(t, "oneshot"), []int64{1024, 1024, 1024}, gens, testWaitTimeout)
	for r := 0; r < 3; r++ {
		require.NoError(t, errs[r])
	}
	for _, r := range []int{0, 2} {
		g, ok := w.snapshot(r).GiveUp()
		require.True(t, ok)
		require.Equal(t, sigblock.DiagKindTagMismatch, g.Kind)
		require.Equal(t, 1, g.Peer)
		require.Contains(t, g.String(), "at the start barrier: rank 1 re-registered its buffers (generation 2) after this launch was captured (generation 1)")
	}
	g, ok := w.snapshot(1).GiveUp()
	require.True(t, ok)
	require.Equal(t, sigblock.DiagKindBarrier, g.Kind)
	require.Equal(t, sigblock.PhaseEnd, g.Where)
}

// A block whose epoch word is claimed by another launch of the same rank
// (one still in flight on a second stream) does not run: it records the
// claim and leaves; the peers, whose block 0 never meets it, give up at
// their deadline.
func TestClaimedBlockGivesUp(t *testing.T) {
	w := newWorld(2, reference.F32, 1024, false)
	w.fill(0)
	own := sigblock.Block(w.mem.Bytes(w.sig[0], sigblock.Size))
	_, held, _ := own.ClaimEpoch(0) // the other launch, in flight
	require.False(t, held)
	errs, _ := w.launchTagged(t, lookup(t, "oneshot"), []int64{1024, 1024}, sameGens(2, 1, 1), testWaitTimeout)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	g, ok := w.snapshot(0).GiveUp()
	require.True(t, ok)
	require.Equal(t, sigblock.DiagKindClaimed, g.Kind)
	require.Equal(t, 0, g.Block)
	require.Equal(t, uint32(1), g.Want, "the epoch it would have used")
	require.Contains(t, g.String(), "rank 0 block 0 gave up before the start barrier: another launch of rank 0 was still using block 0's signal state")
	g, ok = w.snapshot(1).GiveUp()
	require.True(t, ok)
	require.Equal(t, sigblock.DiagKindBarrier, g.Kind)
	require.Equal(t, 0, g.Peer)
}

// Matching tags change nothing: launch after launch passes, and every
// block's claim is released at its end.
func TestMatchingTagsPassAndReleaseClaims(t *testing.T) {
	w := newWorld(3, reference.F32, 1024, false)
	for iter := 0; iter < 3; iter++ {
		w.fill(iter)
		errs, _ := w.launchTagged(t, lookup(t, "twoshot"), []int64{1024, 1024, 1024}, sameGens(3, 1, 2, 1), 0)
		for r := 0; r < 3; r++ {
			require.NoError(t, errs[r])
			_, ok := w.snapshot(r).GiveUp()
			require.False(t, ok)
		}
	}
	for r := 0; r < 3; r++ {
		for b := 0; b < lookup(t, "twoshot").HostBlocks; b++ {
			require.Zero(t, w.snapshot(r).Claim(b))
			require.Equal(t, uint32(3), w.snapshot(r).Epoch(b))
		}
	}
}
