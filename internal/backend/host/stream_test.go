package host

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
)

// Sync's timeout bounds the wait for one operation of the stream, not for
// the whole queue: many quick operations that together take far longer
// than the timeout are no hang, and an operation that never ends is one,
// however many finished before it. The timeout is 15 times a step, so a
// step slowed by other processes on a busy machine is still within it.
func TestSyncTimesOutOnlyWithoutProgress(t *testing.T) {
	b := New(t.TempDir())
	defer b.Close()
	const timeout = 300 * time.Millisecond
	for i := 0; i < 25; i++ {
		require.NoError(t, b.Delay(20*time.Millisecond))
	}
	start := time.Now()
	require.NoError(t, b.Sync(timeout), "25 steps of 20ms each: every one within the timeout")
	require.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond)

	release := make(chan struct{})
	for i := 0; i < 5; i++ {
		require.NoError(t, b.Delay(20*time.Millisecond))
	}
	require.NoError(t, b.enqueue(func() error { <-release; return nil }))
	start = time.Now()
	require.ErrorIs(t, b.Sync(timeout), backend.ErrTimeout)
	took := time.Since(start)
	require.GreaterOrEqual(t, took, 100*time.Millisecond+timeout, "the deadline counts from the last step that finished")
	require.Less(t, took, 5*time.Second)
	close(release)
	require.NoError(t, b.Sync(5*time.Second))
}

// A wake-up before the deadline leaves the wait with a timer for the rest
// of it. Held here: sync starts while another goroutine holds the stream's
// lock for half the timeout, the way a busy machine can hold a goroutine
// between its timer's start and its first look at the clock; a timer armed
// once, at the start, then fires before the deadline it started ahead of,
// and a stream whose op never ends was never called hung.
func TestSyncTimesOutWhenItsStartIsDelayed(t *testing.T) {
	s := newStream()
	defer s.close()
	release := make(chan struct{})
	defer close(release)
	require.NoError(t, s.enqueue(func() error { <-release; return nil }))
	for running := false; !running; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		running = s.busy
		s.mu.Unlock()
	}
	const timeout = 100 * time.Millisecond
	s.mu.Lock()
	got := make(chan error, 1)
	go func() { got <- s.sync(timeout) }()
	time.Sleep(timeout / 2)
	s.mu.Unlock()
	select {
	case err := <-got:
		require.ErrorIs(t, err, backend.ErrTimeout)
	case <-time.After(20 * timeout):
		t.Fatal("sync never timed out on an op that does not end")
	}
}

// The queue is bounded as a CUDA stream's launch queue is: behind an
// operation that never ends, an enqueue waits once the queue is full (the
// runner's main thread blocks in its launches, and only its watchdog can
// end the job), and goes on once an operation finished. Each finished
// operation is reported to the progress function.
func TestEnqueueWaitsWhenTheQueueIsFull(t *testing.T) {
	s := newStream()
	defer s.close()
	s.depth = 4
	var progress atomic.Int32
	s.setProgress(func() { progress.Add(1) })
	release := make(chan struct{})
	require.NoError(t, s.enqueue(func() error { <-release; return nil }))
	for running := false; !running; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		running = s.busy
		s.mu.Unlock()
	}
	for i := 0; i < 4; i++ {
		require.NoError(t, s.enqueue(func() error { return nil }))
	}
	fifth := make(chan error, 1)
	go func() { fifth <- s.enqueue(func() error { return nil }) }()
	select {
	case err := <-fifth:
		t.Fatalf("the fifth enqueue behind a full queue returned %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-fifth)
	require.NoError(t, s.sync(time.Minute))
	require.Equal(t, int32(6), progress.Load())
}
