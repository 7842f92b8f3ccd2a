package sigblock

import (
	"syscall"
	"time"
	"unsafe"
)

// Futex operations without FUTEX_PRIVATE_FLAG: the bell lives in memory that
// several processes map (the host backend's shared segments), and a shared
// futex is keyed by the page, not by the process.
const (
	futexWaitOp = 0 // FUTEX_WAIT
	futexWakeOp = 1 // FUTEX_WAKE
)

// futexWait sleeps while *addr == val, at most d. It returns early on a
// wake, a signal, or when *addr no longer holds val; the caller re-polls
// whatever it waits for, so every outcome is the same to it.
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	// syscall.Syscall (not RawSyscall): the Go scheduler hands this
	// thread's P to other goroutines while the thread sleeps.
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every sleeper on addr: waiters of one rank wait for
// different words behind the same bell, so each must poll its own.
func futexWake(addr *uint32) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, uintptr(1<<31-1), 0, 0, 0)
}
