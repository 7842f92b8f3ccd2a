package oneshot

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// A peer whose buffers are newer than the ones a launch holds (it
// re-registered after the launch was captured): the ranks holding the old
// generation name it; the re-registered rank, whose expectations all hold,
// passes the start barrier and gives up at its next barrier's deadline,
// since its peers left.
func TestTagMismatchDiagnosesAReregisteredPeer(t *testing.T) {
	v := Variant()
	w := hostmodeltest.NewWorld(3, reference.F32, 1024, false)
	w.Fill(0)
	gens := [][]uint32{{1, 1, 1}, {1, 2, 1}, {1, 1, 1}} // rank 1 holds its own new generation
	errs, _ := w.LaunchTagged(t, &v, []int64{1024, 1024, 1024}, gens, hostmodeltest.WaitTimeout)
	for r := 0; r < 3; r++ {
		require.NoError(t, errs[r])
	}
	for _, r := range []int{0, 2} {
		g, ok := w.Snapshot(r).GiveUp()
		require.True(t, ok)
		require.Equal(t, sigblock.DiagKindTagMismatch, g.Kind)
		require.Equal(t, 1, g.Peer)
		require.Contains(t, g.String(), "at the start barrier: rank 1 re-registered its buffers (generation 2) after this launch was captured (generation 1)")
	}
	g, ok := w.Snapshot(1).GiveUp()
	require.True(t, ok)
	require.Equal(t, sigblock.DiagKindBarrier, g.Kind)
	require.Equal(t, sigblock.PhaseEnd, g.Where)
}

// A block whose epoch word is claimed by another launch of the same rank
// (one still in flight on a second stream) does not run: it records the
// claim and leaves; the peers, whose block 0 never meets it, give up at
// their deadline.
func TestClaimedBlockGivesUp(t *testing.T) {
	v := Variant()
	w := hostmodeltest.NewWorld(2, reference.F32, 1024, false)
	w.Fill(0)
	own := sigblock.Block(w.Mem.Bytes(w.Sig[0], sigblock.Size))
	_, held, _ := own.ClaimEpoch(0) // the other launch, in flight
	require.False(t, held)
	errs, _ := w.LaunchTagged(t, &v, []int64{1024, 1024}, hostmodeltest.SameGens(2, 1, 1), hostmodeltest.WaitTimeout)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	g, ok := w.Snapshot(0).GiveUp()
	require.True(t, ok)
	require.Equal(t, sigblock.DiagKindClaimed, g.Kind)
	require.Equal(t, 0, g.Block)
	require.Equal(t, uint32(1), g.Want, "the epoch it would have used")
	require.Contains(t, g.String(), "rank 0 block 0 gave up before the start barrier: another launch of rank 0 was still using block 0's signal state")
	g, ok = w.Snapshot(1).GiveUp()
	require.True(t, ok)
	require.Equal(t, sigblock.DiagKindBarrier, g.Kind)
	require.Equal(t, 0, g.Peer)
}
