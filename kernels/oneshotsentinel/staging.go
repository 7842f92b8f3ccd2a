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
// At 2 ranks a one-shot moves what a two-shot does, and it was measured
// past 4 MiB (2 H200, 2026-11-27, bf16 sum, graph replays): 60.9 us at 16
// MiB against oneshot's 57.3 and twoshot's 58.8, and (132 x 512) 256 and
// 1019 us at 64 and 256 MiB against twoshot's 213 and 813; so the cap
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
// 132 x 512 slots each thread loops. Measured with artest tune on 2 H100
// (2026-11-26, bf16, graph replays, blocks 4-132 x threads 64-512): the
// fastest launch of every size from 1 KiB to 4 MiB is this rule's or
// within 0.06 us of it (1 KiB 1x64, 16 KiB 16x64, 256 KiB 128x128, 1 MiB
// 128x512, 4 MiB 132x512); 132 x 128 for every size was 1.2x slower at
// 1 MiB and 1.45x at 4 MiB. Again on 4 H200 (2026-11-26, blocks 1-132 x
// threads 32-512, 45 launches a size): at 2 ranks the rule's launch was
// the fastest at every size, at 4 ranks the fastest or within 0.02 us but
// at 256 KiB (6.01 us against 32 x 512's 5.91).
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
