package cuda

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/runner"
)

// Without artest_delay in the fatbin, skew's delay says why and the
// runner drops skew with that reason instead of failing every iteration.
func TestDelayWithoutKernel(t *testing.T) {
	d := fakeDriver(t)
	b := fakeBackend(t, d, 0)
	b.fatbin = "/x/artest.fatbin"
	var _ backend.Delayer = b
	require.Equal(t, "the fatbin has no artest_delay (/x/artest.fatbin): rebuild with make kernels", b.DelayReason())
	require.ErrorContains(t, b.Delay(time.Millisecond), "kernel artest_delay")
	s, note := runner.AllSchedules().Supported(b)
	require.Equal(t, runner.Schedules{Poison: true}, s)
	require.Equal(t, "skew off: the fatbin has no artest_delay (/x/artest.fatbin): rebuild with make kernels; "+
		"straggler off: the fatbin has no artest_load (/x/artest.fatbin): rebuild with make kernels; "+
		"link off: it needs the straggler's load; memory off: it needs the straggler's load", note)
}

// The link load needs a peer on another GPU with peer access: ranks that
// share a GPU have no link between them, and it says which.
func TestLinkReason(t *testing.T) {
	d := fakeDriver(t)
	b := fakeBackend(t, d, 0)
	b.world = nil
	require.Equal(t, "no world set up", b.LinkReason())
	b.world = &backend.World{Size: 1}
	require.Equal(t, "one rank: no peer to read", b.LinkReason())
	b.world = &backend.World{Size: 3}
	require.Empty(t, b.LinkReason())
	b.sharedReason = sharedGPUReason([]int{0, 1, 0})
	require.Equal(t, "ranks 0 and 2 share GPU 0: no link between them", b.LinkReason())
	require.ErrorContains(t, b.StraggleOverLink(time.Microsecond), "link load: ranks 0 and 2 share GPU 0: no link between them")
	b.sharedReason = sharedGPUReason([]int{0, 1, 2})
	b.p2pReason = "no P2P access between GPU 0 (rank 0) and GPU 1 (rank 1)"
	require.Equal(t, b.p2pReason, b.LinkReason())
}
