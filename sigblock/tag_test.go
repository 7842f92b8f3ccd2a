package sigblock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTagSplitsIntoGenerationAndCall(t *testing.T) {
	for _, tc := range []struct {
		call, gen uint32
		want      uint32
	}{
		{0x123456, 0, 0x00123456},
		{0x123456, 1, 0x01123456},
		{0xff123456, 2, 0x02123456},   // only 24 bits of the call hash count
		{0x000001, 0x1ff, 0xff000001}, // only 8 bits of the generation count
	} {
		tag := MakeTag(tc.call, tc.gen)
		require.Equal(t, tc.want, tag)
		require.Equal(t, tc.gen&0xff, TagGen(tag))
		require.Equal(t, tc.call&TagCallMask, TagCall(tag))
	}
}

// The flag's tag travels in the same 64-bit word as its epoch; the epoch
// half reads as before.
func TestArriveStoresTagWithEpoch(t *testing.T) {
	bs := newBlocks(2)
	Arrive(bs, PhaseStart, 7, 1, 0xabcdef01, 42)
	for _, b := range bs {
		require.Equal(t, uint32(42), b.Flag(PhaseStart, 7, 1))
		require.Equal(t, uint32(0xabcdef01), b.FlagTag(PhaseStart, 7, 1))
		require.Equal(t, uint32(0xabcdef01), Snapshot(b).FlagTag(PhaseStart, 7, 1))
		require.Equal(t, uint32(42), Snapshot(b).Flag(PhaseStart, 7, 1))
	}
}

func TestWaitBoundedChecksTags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tags    [3]uint32 // what each peer stores
		epochs  [3]uint32
		outcome WaitOutcome
		peer    int
	}{
		{"all match", [3]uint32{10, 11, 12}, [3]uint32{5, 5, 5}, WaitArrived, 0},
		{"peer 2 differs", [3]uint32{10, 11, 99}, [3]uint32{5, 5, 5}, WaitTagMismatch, 2},
		{"peer 0 differs", [3]uint32{98, 11, 12}, [3]uint32{5, 5, 5}, WaitTagMismatch, 0},
		// A flag ahead of the epoch belongs to a later launch: not checked.
		{"ahead is not checked", [3]uint32{10, 99, 12}, [3]uint32{5, 6, 5}, WaitArrived, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own := freshBlock(0, 3)
			for p := 0; p < 3; p++ {
				own.Store64(FlagOffset(PhaseStart, 0, p), FlagValue(tc.tags[p], tc.epochs[p]))
			}
			want := []uint32{10, 11, 12}
			res := WaitBounded(own, PhaseStart, 0, 3, 5, want, nil, time.Second)
			require.Equal(t, tc.outcome, res.Outcome)
			if tc.outcome == WaitTagMismatch {
				require.Equal(t, tc.peer, res.Peer)
				require.Equal(t, tc.tags[tc.peer], res.Seen)
				require.Equal(t, want[tc.peer], res.Want)
			}
			// Without expected tags nothing is checked.
			require.Equal(t, WaitArrived, WaitBounded(own, PhaseStart, 0, 3, 5, nil, nil, time.Second).Outcome)
		})
	}
}

// A block's claim is taken by one launch at a time; the end store clears
// it and publishes the epoch in one word.
func TestClaimEpoch(t *testing.T) {
	b := freshBlock(0, 2)
	e, held, _ := b.ClaimEpoch(3)
	require.Equal(t, uint32(1), e)
	require.False(t, held)
	require.Equal(t, uint32(EpochClaim), Snapshot(b).Claim(3))
	e2, held, claim := b.ClaimEpoch(3)
	require.True(t, held, "a second launch while the first runs")
	require.Equal(t, uint32(1), e2)
	require.Equal(t, uint32(EpochClaim), claim)
	b.EndEpoch(3, e)
	require.Equal(t, uint32(0), Snapshot(b).Claim(3))
	require.Equal(t, uint32(1), b.Epoch(3))
	e, held, _ = b.ClaimEpoch(3)
	require.Equal(t, uint32(2), e)
	require.False(t, held)
}

// Of launches that start together, exactly one gets the claim.
func TestClaimEpochHasOneWinner(t *testing.T) {
	for round := 0; round < 50; round++ {
		b := freshBlock(0, 2)
		var winners atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, held, _ := b.ClaimEpoch(0); !held {
					winners.Add(1)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, int32(1), winners.Load())
	}
}

func TestTagAndClaimGiveUpLines(t *testing.T) {
	call := uint32(0x00abcdef)
	for _, tc := range []struct {
		name string
		g    GiveUp
		want string
	}{
		{"different call", GiveUp{Rank: 0, Block: 0, Kind: DiagKindTagMismatch, Where: PhaseStart, Peer: 1,
			Want: MakeTag(call, 1), Seen: MakeTag(0x123456, 1), Lane: 0},
			"rank 0 block 0 gave up at the start barrier: rank 1 launched a different call (tag 0x01123456, want 0x01abcdef: size, variant, dtype, op, grid or parameters differ)"},
		{"peer re-registered", GiveUp{Rank: 2, Block: 1, Kind: DiagKindTagMismatch, Where: PhaseStart, Peer: 1,
			Want: MakeTag(call, 1), Seen: MakeTag(call, 2), Lane: 1},
			"rank 2 block 1 gave up at the start barrier: rank 1 re-registered its buffers (generation 2) after this launch was captured (generation 1): a graph replayed with a peer's old pointers (tag 0x02abcdef, want 0x01abcdef)"},
		{"peer replayed an old graph", GiveUp{Rank: 2, Block: 1, Kind: DiagKindTagMismatch, Where: PhaseMid, Peer: 1,
			Want: MakeTag(call, 2), Seen: MakeTag(call, 1), Lane: 1},
			"rank 2 block 1 gave up at the mid barrier: rank 1 launched with its buffers of generation 1, this launch holds generation 2: a graph captured before it re-registered was replayed there (tag 0x01abcdef, want 0x02abcdef)"},
		{"claimed", GiveUp{Rank: 1, Block: 0, Kind: DiagKindClaimed, Peer: 1, Want: 3, Seen: EpochClaim},
			"rank 1 block 0 gave up before the start barrier: another launch of rank 1 was still using block 0's signal state (two allreduces in flight on one SignalBlock, e.g. on two streams)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := freshBlock(tc.g.Rank, 3)
			require.True(t, b.RecordGiveUp(tc.g))
			got, ok := Snapshot(b).GiveUp()
			require.True(t, ok)
			require.Equal(t, tc.want, got.String())
		})
	}
}
