package oneshotsentinel

import (
	"fmt"

	"github.com/artest/artest/kernels"
)

// oneshot-sentinel (oneshot_sentinel.cu): every rank pushes its input into
// every peer's staging, 16 data bytes per 16-byte slot, in one of two
// halves used by launches of even and odd sequence; a half is n regions of
// the message's slots.

// MaxBytes is the largest message oneshot-sentinel takes: its staging
// holds 2 halves x ranks x the message (StageBytes), 64 MiB a rank at 8
// ranks. Past it a one-shot's n-1 copies of the message on every link
// lose to a two-shot's, as oneshot's own crossover shows (docs/perf.md).
const MaxBytes = 4 << 20

// Align is the first 16-byte boundary at or after p.
func Align(p uint64) uint64 { return (p + 15) / 16 * 16 }

// StageBytes is the staging a message of msgBytes needs on n ranks: up to
// 15 bytes to its first 16-byte boundary (Align), then both halves of n
// regions of whole slots (artest_sentinel_stage_bytes in
// oneshot_sentinel.cuh). The halves are sized by the message, not by the
// buffer, so that a case uses only what the runner zeroed for it.
func StageBytes(msgBytes int64, n int) int64 {
	slots := (msgBytes + kernels.VecBytes - 1) / kernels.VecBytes
	return 2*int64(n)*slots*kernels.VecBytes + 16
}

// TooBig says why a message is not for oneshot-sentinel, or "".
func TooBig(msgBytes int64) string {
	if msgBytes > MaxBytes {
		return fmt.Sprintf("oneshot-sentinel takes messages up to %d bytes (its staging holds 2 x ranks x the message)", MaxBytes)
	}
	return ""
}
