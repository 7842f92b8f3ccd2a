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
		"straggler off: the fatbin has no artest_load (/x/artest.fatbin): rebuild with make kernels", note)
}
