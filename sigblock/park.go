package sigblock

import (
	"runtime"
	"sync/atomic"
	"time"
)

// The host backend's doorbell: two words of the SignalBlock header that the
// kernels never touch (bytes 16 to 63 are free in signal.cuh's layout), so
// they live here and not in layout.go's list that signal.cuh mirrors.
//
// Every host-model wait is for a word of the waiting rank's own memory that
// a peer stores into (a barrier flag, a ring sequence or credit, a pushed LL
// or sentinel slot). A writer rings the owner's bell after such stores
// (Ring); a waiter that found nothing after a short spin sleeps on the bell
// in the kernel (futex) until a ring, instead of spinning and yielding. On
// a machine with more ranks than cores the waiting ranks then cost nothing,
// so a wait takes as long as the peer's work, not as long as the scheduler
// takes to get round every spinning rank.
const (
	OffHostBell     = 16 // uint32: rings so far (an event count)
	OffHostSleepers = 20 // uint32: waiters asleep on the bell now
)

// Ring tells the owner of b that something it may wait for has changed:
// the caller stored into b's rank's memory just before. It costs one atomic
// add, and a system call only while someone sleeps on the bell.
func (b Block) Ring() {
	atomic.AddUint32(b.word(OffHostBell), 1)
	if atomic.LoadUint32(b.word(OffHostSleepers)) != 0 {
		futexWake(b.word(OffHostBell))
	}
}

// RingAll rings every block of peers (each rank's, self included).
func RingAll(peers []Block) {
	for _, p := range peers {
		p.Ring()
	}
}

// Parker waits for a condition on words of one rank's memory: it polls,
// spins a little, yields a little, then sleeps on the rank's bell until a
// peer rings it. The zero value is not usable; use NewParker.
type Parker struct {
	own Block
	n   int
	// max bounds one sleep (parkMax; tests lengthen it to show that a
	// ring, not the bound, ended a sleep).
	max time.Duration
}

// NewParker returns a Parker for waits on own's rank's memory.
func NewParker(own Block) Parker { return Parker{own: own, max: parkMax} }

// Parking steps. A short spin catches a peer that is about to store and
// costs little; runtime.Gosched in it lets a peer that is a goroutine of
// this process (another block or lane of this rank, or another rank of an
// in-process test world) run first. Then the waiter sleeps. There is no
// phase of sched_yield calls: beside other busy processes a yield gives the
// core away for a whole time slice, and a ring of 16-byte slots waits
// thousands of times a call (3 ranks beside 4 CPU hogs on 2 cores: 120 to
// 160 s with 16 to 4096 yields per wait, 4 s without). parkMax bounds one
// sleep so that a waiter still polls its stop function and deadline, and
// still makes progress (at that slow pace) if a writer forgot to ring.
const (
	parkSpins = 64
	parkMax   = 2 * time.Millisecond
)

// Pause waits until the caller should poll again. The caller reads the
// bell (Bell), polls, and hands the bell value it read to Pause: a ring
// after that read makes the sleep return at once, so no ring is lost.
// ready, when not nil, is checked once more after the Parker has announced
// itself asleep. Pause reports true when it slept, the moment to check for
// cancellation and deadlines.
func (p *Parker) Pause(bell uint32, ready func() bool) bool {
	p.n++
	if p.n <= parkSpins {
		runtime.Gosched()
		return false
	}
	sleepers := p.own.word(OffHostSleepers)
	atomic.AddUint32(sleepers, 1)
	if ready == nil || !ready() {
		futexWait(p.own.word(OffHostBell), bell, p.max)
	}
	atomic.AddUint32(sleepers, ^uint32(0))
	return true
}

// Bell reads the bell's count, before the poll whose failure leads to
// Pause.
func (p *Parker) Bell() uint32 { return atomic.LoadUint32(p.own.word(OffHostBell)) }
