package sigblock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func freshBlock(rank, n int) Block {
	b := Block(make([]byte, Size))
	b.Init(rank, n)
	return b
}

func TestGiveUpRoundTripAndLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    GiveUp
		want string
	}{
		{"barrier", GiveUp{Rank: 0, Variant: 0x51, Block: 3, Kind: DiagKindBarrier, Where: PhaseEnd, Peer: 2, Want: 5, Seen: 4,
			Waited: 10 * time.Second, Lane: 3, Timeout: 10 * time.Second},
			"rank 0 block 3 gave up after 10.0s at the end barrier waiting for rank 2 (flag 4, want 5)"},
		{"ring data", GiveUp{Rank: 1, Variant: 0x54, Block: 0, Kind: DiagKindRingData, Where: 2, Peer: 0, Want: 7, Seen: 3,
			Waited: 10 * time.Second, Lane: 0, Timeout: 10 * time.Second},
			"rank 1 lane 0 gave up after 10.0s waiting for slot 2 seq 7 from rank 0 (seen 3)"},
		{"ring credit", GiveUp{Rank: 2, Variant: 0x54, Block: 1, Kind: DiagKindRingCredit, Peer: 0, Want: 9, Seen: 1,
			Waited: 1500 * time.Millisecond, Lane: 1, Timeout: time.Second},
			"rank 2 lane 1 gave up after 1.5s waiting for credit 9 from rank 0 (seen 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := freshBlock(tc.g.Rank, 3)
			_, ok := Snapshot(b).GiveUp()
			require.False(t, ok, "a fresh block has no give-up")
			require.False(t, b.GaveUp())
			require.True(t, b.RecordGiveUp(tc.g))
			require.True(t, b.GaveUp())
			require.Equal(t, DiagGaveUp, b.Load(DiagOffset(DiagState)))
			got, ok := Snapshot(b).GiveUp()
			require.True(t, ok)
			require.Equal(t, tc.g, got)
			require.Equal(t, tc.want, got.String())
		})
	}
}

// The first give-up of a rank wins; a later one (another block timing out
// after it) leaves the record alone.
func TestFirstGiveUpWins(t *testing.T) {
	b := freshBlock(0, 2)
	first := GiveUp{Block: 1, Kind: DiagKindBarrier, Where: PhaseStart, Peer: 1, Want: 1}
	require.True(t, b.RecordGiveUp(first))
	require.False(t, b.RecordGiveUp(GiveUp{Block: 2, Kind: DiagKindBarrier, Where: PhaseEnd, Peer: 1, Want: 1}))
	got, ok := Snapshot(b).GiveUp()
	require.True(t, ok)
	require.Equal(t, 1, got.Block)
}

// A record still being written (claimed, not yet published) is not read.
func TestClaimedRecordIsNotRead(t *testing.T) {
	b := freshBlock(0, 2)
	require.True(t, b.CompareAndSwap(DiagOffset(DiagState), 0, DiagClaimed))
	_, ok := Snapshot(b).GiveUp()
	require.False(t, ok)
}

func TestSummarizeGiveUpsByRank(t *testing.T) {
	snaps := make([]Snapshot, 3)
	for r := range snaps {
		b := freshBlock(r, 3)
		if r != 2 {
			b.RecordGiveUp(GiveUp{Rank: r, Block: r, Kind: DiagKindBarrier, Where: PhaseEnd, Peer: 2, Want: 1,
				Waited: 500 * time.Millisecond})
		}
		snaps[r] = Snapshot(b)
	}
	require.Equal(t, "rank 0 block 0 gave up after 0.5s at the end barrier waiting for rank 2 (flag 0, want 1)\n"+
		"rank 1 block 1 gave up after 0.5s at the end barrier waiting for rank 2 (flag 0, want 1)",
		SummarizeGiveUps(GiveUps(snaps)))
	require.Empty(t, SummarizeGiveUps(GiveUps(snaps[2:])))
}

// WaitBounded gives up once the deadline has passed since its first failed
// poll, names the first missing peer, and never gives up without one.
func TestWaitBoundedDeadline(t *testing.T) {
	own := freshBlock(0, 3)
	own.Store(FlagOffset(PhaseMid, 4, 0), 7)
	own.Store(FlagOffset(PhaseMid, 4, 1), 6) // one behind
	start := time.Now()
	res := WaitBounded(own, PhaseMid, 4, 3, 7, nil, nil, 20*time.Millisecond)
	require.Equal(t, WaitTimedOut, res.Outcome)
	require.Equal(t, 1, res.Peer)
	require.Equal(t, uint32(6), res.Seen)
	require.GreaterOrEqual(t, res.Waited, 20*time.Millisecond)
	require.Less(t, time.Since(start), 10*time.Second, "ended by the deadline (far above it: room for a loaded machine)")

	own.Store(FlagOffset(PhaseMid, 4, 1), 7)
	own.Store(FlagOffset(PhaseMid, 4, 2), 8) // ahead counts as arrived
	require.Equal(t, WaitArrived, WaitBounded(own, PhaseMid, 4, 3, 7, nil, nil, time.Millisecond).Outcome)
}

// A plugin's give-up (plugin/artest_device.h) holds numbers; the line
// names the variant and the wait point when the reader knows them.
func TestPluginWaitLine(t *testing.T) {
	g := GiveUp{Rank: 0, Variant: 0x8badf00d, Block: 2, Kind: DiagKindPluginWait, Where: 1, Peer: 3, Want: 7, Seen: 6,
		Waited: time.Second, Lane: 2, Timeout: time.Second}
	b := freshBlock(0, 4)
	require.True(t, b.RecordGiveUp(g))
	got, ok := Snapshot(b).GiveUp()
	require.True(t, ok)
	require.Equal(t, g, got, "the words round-trip")
	for _, tc := range []struct {
		name, variant, point, want string
	}{
		{"named", "example:oneshot", "end barrier",
			`rank 0 block 2 gave up after 1.0s in example:oneshot at "end barrier" waiting for rank 3 (word 6, want 7)`},
		{"variant unknown", "", "end barrier",
			`rank 0 block 2 gave up after 1.0s in the plugin variant with trace id 0x8badf00d at "end barrier" waiting for rank 3 (word 6, want 7)`},
		{"point undeclared", "example:oneshot", "",
			`rank 0 block 2 gave up after 1.0s in example:oneshot at wait point 1 waiting for rank 3 (word 6, want 7)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := got
			g.Name, g.Point = tc.variant, tc.point
			require.Equal(t, tc.want, g.String())
		})
	}
}
