package sigblock

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRingRegionFitsAndDoesNotOverlap(t *testing.T) {
	require.Equal(t, FlagOffset(NumPhases-1, MaxBlocks-1, MaxRanks-1)+8, OffRing)
	require.Equal(t, Size, RingOffset(RingMaxLanes, 0))
	require.Equal(t, RingOffset(1, 0), RingSeqOffset(0, RingMaxSlots), "the last slot word ends the record")
	require.Zero(t, OffRing%128)
	require.Zero(t, RingLaneBytes%128)
	// Words written by different ranks sit on different 64-byte lines.
	require.LessOrEqual(t, RingOffWaitSlot+4, 64)
	require.GreaterOrEqual(t, RingOffCredit-RingOffHead, 64)
	require.GreaterOrEqual(t, RingOffSeq-RingOffCredit, 64)
}

// ringSnaps is n valid SignalBlock copies.
func ringSnaps(n int) []Snapshot {
	snaps := make([]Snapshot, n)
	for r := range snaps {
		b := make(Block, Size)
		b.Init(r, n)
		snaps[r] = Snapshot(b)
	}
	return snaps
}

func put(s Snapshot, off int, v uint32) { Block(s).Store(off, v) }

func TestDiagnoseRing(t *testing.T) {
	snaps := ringSnaps(3)
	// Lane 0 of every rank is in a launch of 12 pieces after 24 earlier ones.
	for r := range snaps {
		put(snaps[r], RingOffset(0, RingOffHead), 24)
		put(snaps[r], RingOffset(0, RingOffTarget), 36)
		// Lane 1 finished its launch: never listed, whatever its wait words say.
		put(snaps[r], RingOffset(1, RingOffHead), 36)
		put(snaps[r], RingOffset(1, RingOffTarget), 36)
		put(snaps[r], RingOffset(1, RingOffWaitKind), RingWaitData)
	}
	// Rank 1 waits for slot 3 of lane 0 to hold sequence 28 (it holds 20).
	put(snaps[1], RingOffset(0, RingOffWaitKind), RingWaitData)
	put(snaps[1], RingOffset(0, RingOffWaitWant), 28)
	put(snaps[1], RingOffset(0, RingOffWaitSlot), 3)
	put(snaps[1], RingSeqOffset(0, 3), 20)
	// Rank 2 waits for credit 26 from rank 0 (its right neighbour); it has 25.
	put(snaps[2], RingOffset(0, RingOffWaitKind), RingWaitCredit)
	put(snaps[2], RingOffset(0, RingOffWaitWant), 26)
	put(snaps[2], RingOffset(0, RingOffCredit), 25)
	// Rank 0 waits for nobody.

	waits, busy := DiagnoseRing(snaps)
	require.Equal(t, []RingWait{
		{Rank: 1, Lane: 0, Kind: RingWaitData, Peer: 0, Slot: 3, Want: 28, Seen: 20},
		{Rank: 2, Lane: 0, Kind: RingWaitCredit, Peer: 0, Want: 26, Seen: 25},
	}, waits)
	require.Equal(t, []RingBusy{{Rank: 0, Lanes: []int{0}}}, busy)
	require.Equal(t, "rank 1 lane 0 waits for slot 3 seq 28 from rank 0 (seen 20)\n"+
		"rank 2 lane 0 waits for credit 26 from rank 0 (seen 25)\n"+
		"rank 0 lane 0 is in a ring launch and waits for no peer (running, or delayed)",
		SummarizeRing(waits, busy))

	// Lanes that wait alike are one line.
	for l := 2; l < 5; l++ {
		put(snaps[1], RingOffset(l, RingOffTarget), 1)
		put(snaps[1], RingOffset(l, RingOffWaitKind), RingWaitData)
	}
	waits, busy = DiagnoseRing(snaps)
	require.Contains(t, SummarizeRing(waits, busy), "(seen 20; lanes 0,2-4 wait alike)")

	// No ring launch in progress: nothing to say.
	require.Empty(t, SummarizeRing(DiagnoseRing(ringSnaps(4))))
	require.Empty(t, SummarizeRing(DiagnoseRing([]Snapshot{make(Snapshot, Size)})))
}
