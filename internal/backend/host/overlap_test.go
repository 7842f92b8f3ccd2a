package host

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The host's compute load runs beside what follows it; its events span the
// load, a load of more units takes longer, and a join makes the stream wait
// for its end.
func TestHostOverlap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		blocks int
		units  int
	}{
		{"one goroutine, one unit", 1, 1},
		{"four goroutines, many units", 4, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(t.TempDir())
			defer h.Close()
			require.Equal(t, "", h.OverlapReason())
			require.NoError(t, h.PrepareOverlap(tc.blocks))
			a, err := h.Record()
			require.NoError(t, err)
			start, end, err := h.StartOverlap(tc.units)
			require.NoError(t, err)
			require.NoError(t, h.JoinOverlap())
			b, err := h.Record()
			require.NoError(t, err)
			require.NoError(t, h.Sync(10*time.Second))
			load, err := end.Since(start)
			require.NoError(t, err)
			require.Positive(t, load)
			whole, err := b.Since(a)
			require.NoError(t, err)
			require.GreaterOrEqual(t, whole, load, "the join waits for the load")
			require.NoError(t, start.Destroy())
			require.NoError(t, end.Destroy())
		})
	}
}

// Before PrepareOverlap there is no load to start, and a grid below one
// block is refused.
func TestHostOverlapNeedsPrepare(t *testing.T) {
	h := New(t.TempDir())
	defer h.Close()
	_, _, err := h.StartOverlap(1)
	require.ErrorContains(t, err, "PrepareOverlap was not called")
	require.ErrorContains(t, h.PrepareOverlap(0), "want at least 1")
}

// A load of more units takes longer: the work is fixed, not a deadline.
func TestHostOverlapWorkIsFixed(t *testing.T) {
	h := New(t.TempDir())
	defer h.Close()
	require.NoError(t, h.PrepareOverlap(1))
	time1 := func(units int) time.Duration {
		best := time.Duration(1 << 62)
		for i := 0; i < 3; i++ {
			s, e, err := h.StartOverlap(units)
			require.NoError(t, err)
			require.NoError(t, h.JoinOverlap())
			require.NoError(t, h.Sync(10*time.Second))
			d, err := e.Since(s)
			require.NoError(t, err)
			best = min(best, d)
		}
		return best
	}
	require.Greater(t, time1(200), time1(1))
}
