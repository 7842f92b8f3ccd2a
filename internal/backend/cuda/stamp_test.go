package cuda

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/kernels"
)

// The fake driver numbers events in creation order and times two of them
// as 1.5 ms per number between them.
const fakeEventStep = 1500 * time.Microsecond

func TestEventStampsRunOnTheAnchorsClock(t *testing.T) {
	d := fakeDriver(t)
	b := fakeBackend(t, d, 0)
	defer func() { require.NoError(t, errors.Join(b.closeStamps()...)) }()

	require.Empty(t, b.StampReason())
	require.False(t, b.StampsWaitForSMs(), "events need no SM")
	require.NoError(t, b.PrepareStamps(3))

	first, err := b.ClockSync()
	require.NoError(t, err)
	require.Zero(t, first.Offset, "the first anchor is the wall clock's midpoint")
	require.Contains(t, first.Domain, "events of pid", "each rank's events are a clock of their own")

	require.NoError(t, b.Stamp(0, false))
	require.NoError(t, b.Stamp(1, true), "inside a capture: an event record node")
	require.NoError(t, b.Stamp(2, false))
	got, err := b.Stamps(3)
	require.NoError(t, err)
	require.Equal(t, fakeEventStep.Nanoseconds(), got[1]-got[0])
	require.Equal(t, fakeEventStep.Nanoseconds(), got[2]-got[1])

	// The next anchor's time is the last one's plus the device time
	// between them: the stamps before it keep their values.
	anchorBefore := b.stamp.anchorNs
	second, err := b.ClockSync()
	require.NoError(t, err)
	require.Greater(t, b.stamp.anchorNs, anchorBefore)
	require.NotEqual(t, first.Offset, second.Offset, "the fake's event clock runs far faster than the wall clock")

	require.Error(t, b.Stamp(3, false), "only prepared slots")
}

func TestKernelStampsOnRequest(t *testing.T) {
	d := fakeDriver(t)
	b := fakeBackend(t, d, 0)
	b.knobs.WitnessStamp = "kernel"
	require.Contains(t, b.StampReason(), "no "+kernels.StampKernel, "no fatbin: no kernel stamp")

	b = fakeBackend(t, d, 0)
	b.knobs.WitnessStamp = "kernel"
	b.fns[kernels.StampKernel] = 0x3000
	require.Empty(t, b.StampReason())
	require.True(t, b.StampsWaitForSMs())
}

// A stamped load records its start and end on the side stream in the
// slot asked for, timed on the anchor's clock like the calls' stamps;
// kernel stamps cannot stamp loads.
func TestLoadStampsAroundTheLoad(t *testing.T) {
	d := fakeDriver(t)
	b := fakeBackend(t, d, 0)
	b.fns[kernels.LoadKernel] = 0x3000
	defer func() {
		require.NoError(t, errors.Join(b.closeLoad()...))
		require.NoError(t, errors.Join(b.closeStamps()...))
	}()
	require.Empty(t, b.LoadStampReason())
	require.NoError(t, b.PrepareStamps(2))
	require.NoError(t, b.PrepareStraggle())
	_, err := b.ClockSync()
	require.NoError(t, err)

	require.NoError(t, b.StraggleStamped(200*time.Microsecond, backend.LoadOwn, 1, false))
	start, end, err := b.LoadStamps(1)
	require.NoError(t, err)
	// The fake's events are 1.5 ms apart per creation number: the end
	// event was made right after the start's slot pair.
	require.Positive(t, end-start)
	require.Error(t, b.StraggleStamped(200*time.Microsecond, backend.LoadOwn, 2, false), "only prepared slots")
	_, _, err = b.LoadStamps(5)
	require.Error(t, err)

	k := fakeBackend(t, d, 0)
	k.knobs.WitnessStamp = "kernel"
	k.fns[kernels.StampKernel] = 0x3000
	require.Contains(t, k.LoadStampReason(), "events only")
}

// ARTEST_WITNESS_LOAD_STAMPS=off leaves the loads unstamped, to compare.
func TestLoadStampsOff(t *testing.T) {
	b := fakeBackend(t, fakeDriver(t), 0)
	b.knobs.WitnessLoadStampsOff = true
	require.Contains(t, b.LoadStampReason(), "ARTEST_WITNESS_LOAD_STAMPS=off")
}
