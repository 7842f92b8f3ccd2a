package sigblock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLayoutFitsAndDoesNotOverlap(t *testing.T) {
	require.Equal(t, 0, OffEpoch%4)
	require.GreaterOrEqual(t, OffDiag, OffTraceCount+4)
	require.GreaterOrEqual(t, OffEpoch, OffDiag+4*DiagWords)
	require.Equal(t, OffEpoch+8*MaxBlocks, FlagOffset(0, 0, 0))
	require.Equal(t, OffRing-8, FlagOffset(NumPhases-1, MaxBlocks-1, MaxRanks-1))
	// Every (phase, block, peer) has its own word.
	seen := map[int]bool{}
	for ph := 0; ph < NumPhases; ph++ {
		for b := 0; b < MaxBlocks; b++ {
			for p := 0; p < MaxRanks; p++ {
				off := FlagOffset(ph, b, p)
				require.False(t, seen[off])
				seen[off] = true
			}
		}
	}
}

func TestReachedWrapsAround(t *testing.T) {
	for _, tc := range []struct {
		seen, want uint32
		ok         bool
	}{
		{5, 5, true},
		{6, 5, true}, // a peer that ran ahead (skipped a barrier)
		{4, 5, false},
		{0, 1, false},
		{0, 0xffffffff, true}, // counter wrapped past want
		{0xffffffff, 0, false},
		{0x80000001, 1, false}, // 2^31 or more ahead reads as behind
	} {
		require.Equal(t, tc.ok, Reached(tc.seen, tc.want), "%#x vs %#x", tc.seen, tc.want)
	}
}

func newBlocks(n int) []Block {
	bs := make([]Block, n)
	for i := range bs {
		bs[i] = make(Block, Size)
		bs[i].Init(i, n)
	}
	return bs
}

// A barrier must hold every rank back until the slowest arrives, launch
// after launch, with flags never reset.
func TestBarrierOrdersRanks(t *testing.T) {
	const n, launches = 4, 200
	bs := newBlocks(n)
	var arrived [launches]atomic.Int32
	var wg sync.WaitGroup
	var bad atomic.Int32
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for l := 0; l < launches; l++ {
				epoch := bs[r].Epoch(0) + 1
				if r == l%n {
					time.Sleep(20 * time.Microsecond) // a different straggler each launch
				}
				arrived[l].Add(1)
				Arrive(bs, PhaseStart, 0, r, 0, epoch)
				require.True(t, Wait(bs[r], PhaseStart, 0, n, epoch, nil))
				if arrived[l].Load() != n {
					bad.Add(1)
				}
				bs[r].Store(EpochOffset(0), epoch)
			}
		}(r)
	}
	wg.Wait()
	require.Zero(t, bad.Load(), "a rank left the barrier before every rank arrived")
	for r := 0; r < n; r++ {
		require.Equal(t, uint32(launches), bs[r].Epoch(0))
	}
}

func TestWaitStops(t *testing.T) {
	bs := newBlocks(2)
	Arrive(bs, PhaseEnd, 3, 0, 0, 1)
	var calls atomic.Int32
	ok := Wait(bs[0], PhaseEnd, 3, 2, 1, func() bool { return calls.Add(1) > 3 })
	require.False(t, ok, "rank 1 never arrived")
	require.Greater(t, calls.Load(), int32(3))
}

func snapshots(bs []Block) []Snapshot {
	out := make([]Snapshot, len(bs))
	for i, b := range bs {
		out[i] = Snapshot(append([]byte(nil), b...))
	}
	return out
}

func TestDiagnoseNamesTheLateRank(t *testing.T) {
	const n = 4
	bs := newBlocks(n)
	// Launch 1 in progress on 2 blocks: everyone passed start; ranks 0,1,3
	// reached the end barrier, rank 2 did not (it is still reading).
	for b := 0; b < 2; b++ {
		for r := 0; r < n; r++ {
			Arrive(bs, PhaseStart, b, r, 0, 1)
		}
		for _, r := range []int{0, 1, 3} {
			Arrive(bs, PhaseEnd, b, r, 0, 1)
		}
	}
	ws := Diagnose(snapshots(bs), 2)
	require.Len(t, ws, 6) // 3 ranks x 2 blocks
	for _, w := range ws {
		require.Equal(t, PhaseEnd, w.Phase)
		require.Equal(t, 2, w.Peer)
		require.Equal(t, []int{2}, w.Missing)
		require.Equal(t, uint32(0), w.Seen)
		require.Equal(t, uint32(1), w.Want)
	}
	require.Equal(t, []int{2}, Culprits(ws))
	require.Equal(t, "ranks 0,1,3 wait at the end barrier for rank 2 (blocks 0-1; its flag 0, want 1)", Summarize(ws))
}

func TestDiagnoseStartBarrierAndIdle(t *testing.T) {
	bs := newBlocks(3)
	// Launch 5 on rank 0 and 1 waits for rank 2, which finished launch 4
	// and never started launch 5.
	for r := 0; r < 3; r++ {
		bs[r].Store(EpochOffset(0), 4)
		for p := 0; p < 3; p++ {
			bs[r].Store(FlagOffset(PhaseStart, 0, p), 4)
			bs[r].Store(FlagOffset(PhaseEnd, 0, p), 4)
		}
	}
	Arrive(bs, PhaseStart, 0, 0, 0, 5)
	Arrive(bs, PhaseStart, 0, 1, 0, 5)
	ws := Diagnose(snapshots(bs), 1)
	require.Equal(t, "ranks 0,1 wait at the start barrier for rank 2 (blocks 0; its flag 4, want 5)", Summarize(ws))
	// Nobody waiting: nothing to say.
	require.Empty(t, Summarize(Diagnose(snapshots(newBlocks(3)), 4)))
	// A snapshot without the header is ignored, not misread.
	require.Empty(t, Diagnose([]Snapshot{make(Snapshot, Size)}, 1))
}

func TestTrace(t *testing.T) {
	b := newBlocks(1)[0]
	b.WriteTrace(0x51)
	b.WriteTrace(0x51)
	v, c := b.Trace()
	require.Equal(t, uint32(0x51), v)
	require.Equal(t, uint32(2), c)
}
