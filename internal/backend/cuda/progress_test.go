package cuda

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
)

// Progress marks are events on the stream; Sync forgets the ones it saw
// passed, and a stream that makes no progress after them still times out.
// (The fake's events are passed at once and its non-blocking stream never
// finishes.)
func TestSyncForgetsPassedMarks(t *testing.T) {
	d := fakeDriver(t)
	b := fakeBackend(t, d, 0)
	busy, err := d.StreamCreate(1)
	require.NoError(t, err)
	b.stream = busy
	var _ backend.ProgressMarker = b
	for i := 0; i < 3; i++ {
		require.NoError(t, b.MarkProgress())
	}
	require.Len(t, b.marks, 3)
	start := time.Now()
	require.ErrorIs(t, b.Sync(50*time.Millisecond), backend.ErrTimeout)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	require.Empty(t, b.marks)
}
