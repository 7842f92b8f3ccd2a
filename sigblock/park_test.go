package sigblock

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A waiter that found nothing sleeps on the bell until a ring: with a sleep
// bound of a minute, only the ring can end the wait within the test's
// limit, whatever the machine's load.
func TestParkedWaiterWakesOnRing(t *testing.T) {
	own := Block(make([]byte, Size))
	var word uint32
	ready := func() bool { return atomic.LoadUint32(&word) != 0 }
	woke := make(chan time.Duration, 1)
	asleep := make(chan struct{})
	go func() {
		pk := NewParker(own)
		pk.max = time.Minute
		start := time.Now()
		for {
			bell := pk.Bell()
			if ready() {
				woke <- time.Since(start)
				return
			}
			if pk.n == parkSpins {
				close(asleep) // the next Pause sleeps
			}
			pk.Pause(bell, ready)
		}
	}()
	<-asleep
	// Wait until the waiter is counted asleep (or about to be), then store
	// and ring, as a peer does.
	for atomic.LoadUint32(own.word(OffHostSleepers)) == 0 {
		time.Sleep(time.Millisecond)
	}
	atomic.StoreUint32(&word, 1)
	own.Ring()
	select {
	case d := <-woke:
		require.Less(t, d, time.Minute)
	case <-time.After(30 * time.Second):
		t.Fatal("the ring did not wake the parked waiter")
	}
	require.Zero(t, atomic.LoadUint32(own.word(OffHostSleepers)), "the waiter left the sleepers' count")
}

// A ring between the waiter's read of the bell and its sleep is not lost:
// the bell moved, so the sleep returns at once.
func TestRingBeforeSleepIsNotLost(t *testing.T) {
	own := Block(make([]byte, Size))
	pk := NewParker(own)
	pk.max = time.Minute
	pk.n = parkSpins // past the spins: the next Pause sleeps
	bell := pk.Bell()
	own.Ring()
	done := make(chan struct{})
	go func() {
		pk.Pause(bell, nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a ring before the sleep was lost")
	}
}

// A waiter with nothing to wait for wakes about once per parkMax, not
// hundreds of times (the spin-yield-sleep backoff it replaced woke every
// 64 us, keeping a core busy for every waiting rank). Load only makes it
// wake less often.
func TestParkedWaiterWakesRarely(t *testing.T) {
	own := Block(make([]byte, Size))
	pk := NewParker(own)
	const span = 200 * time.Millisecond
	slept := 0
	for start := time.Now(); time.Since(start) < span; {
		if pk.Pause(pk.Bell(), nil) {
			slept++
		}
	}
	// Twice the bound and some: a signal (Go preempts with SIGURG) may end
	// a sleep early.
	require.LessOrEqual(t, slept, 2*int(span/parkMax)+10, "wake-ups in %s", span)
}
