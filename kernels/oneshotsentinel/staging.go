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
// At 2 ranks a one-shot moves what a two-shot does, but measured past 4
// MiB on 2 H200 it lost to twoshot (1019 against 813 us at 256 MiB,
// docs/results/2026-11-27-h200-x2-x4-field-links-read.md), so the cap
// holds at every rank count.
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

// The registry's launch: one 16-byte slot a thread, spread over up to
// spreadBlocks blocks first (a block per SM), the blocks then widened by
// powers of two from 64 threads to 512 (kernels.MaxThreads), and past
// 132 x 512 slots each thread loops. On 2 H100 artest tune found this
// rule's launch the fastest, or within 0.06 us of it, at every size from 1
// KiB to 4 MiB (docs/results/2026-11-26-h100-h200-x2-oneshot-sentinel.md).
// On 4 H200 it was again the fastest, or within 0.02 us, at every size but
// 256 KiB at 4 ranks (6.01 against 5.91 us,
// docs/results/2026-11-26-h200-x4-field-4-ranks.md).
const (
	spreadBlocks = 128
	maxBlocks    = 132
	minThreads   = 64
)

// Threads is the block size of the registry's launch for a message.
func Threads(a *kernels.Args, elemBytes int64) int {
	slots := (int64(a.Count)*elemBytes + kernels.VecBytes - 1) / kernels.VecBytes
	t := minThreads
	for t < kernels.MaxThreads && int64(t)*spreadBlocks < slots {
		t *= 2
	}
	return t
}
