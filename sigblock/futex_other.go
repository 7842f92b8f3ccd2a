//go:build !linux

package sigblock

import "time"

// Without futexes a parked waiter sleeps a short while and polls again; a
// wake is a no-op. artest's host backend runs on Linux; this keeps the
// package building elsewhere.
func futexWait(_ *uint32, _ uint32, d time.Duration) { time.Sleep(min(d, 50*time.Microsecond)) }

func futexWake(*uint32) {}
