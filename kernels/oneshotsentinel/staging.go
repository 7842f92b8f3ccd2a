package oneshotsentinel

import (
	"fmt"

	"github.com/artest/artest/kernels"
)

// oneshot-sentinel (oneshot_sentinel.cu): every rank pushes its input into
// every peer's staging, 16 data bytes per 16-byte slot, in one of two
// halves used by launches of even and odd sequence; a half is n regions of
// the message's slots.

// MaxBytes is the largest message oneshot-sentinel takes at more than two
// ranks: its staging holds 2 halves x ranks x the message (StageBytes),
// 64 MiB a rank at 8 ranks, and past it a one-shot's n-1 copies of the
// message on every link lose to a two-shot's, as oneshot's own crossover
// shows (docs/perf.md). At two ranks a one-shot puts one copy of the
// message on each link, as a two-shot does, and it leads twoshot up to 16
// MiB (MaxBytesTwoRanks; a 64 MiB staging). Measured on 2 H200
// (2026-11-27, bf16 sum, graph replays, lag 4): 15.6 us at 4 MiB against
// twoshot's 19.8, 54.5 at 16 MiB against 59.1; at 64 and 256 MiB its best
// launch of 40 took 219.5 and 834.9 us against 213.1 and 812.9 (its pushes
// and its local reduce share HBM and links less well than twoshot's loads).
const (
	MaxBytes         = 4 << 20
	MaxBytesTwoRanks = 16 << 20
)

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

// TooBig says why a message is not for oneshot-sentinel on n ranks, or "".
func TooBig(msgBytes int64, n int) string {
	if n <= 2 && msgBytes > MaxBytesTwoRanks {
		return fmt.Sprintf("oneshot-sentinel takes messages up to %d bytes at 2 ranks (past it twoshot is faster)", MaxBytesTwoRanks)
	}
	if n > 2 && msgBytes > MaxBytes {
		return fmt.Sprintf("oneshot-sentinel takes messages up to %d bytes at more than 2 ranks (its staging holds 2 x ranks x the message)", MaxBytes)
	}
	return ""
}

// LagAll as lag: every push of a thread before its first reduce.
const LagAll = 1 << 16

var params = []kernels.Param{{Name: "lag", Slot: 0, Default: 0, Min: 1, Max: LagAll,
	Help: "how many of its slots a thread pushes ahead of the one it reduces (65536: all first); 0: auto"}}

// LagTwoRanks is auto's lag at 2 ranks. Measured with artest tune on 2
// H200 (2026-11-27, bf16, graph replays, lag 1, 2, 4, 8 and all at 128
// and 132 x 256 and 512): at 16 MiB lag 4 took 55.0 us against all's
// 61.4 and 1's 69.3 (132 x 512); at 4 MiB 2, 4, 8 and all were within
// 0.2 us (15.5 to 15.7), 1 was 16.8; to 1 MiB a thread has one slot and
// lag does nothing.
const LagTwoRanks = 4

// Resolve picks lag for auto, the same on every rank: LagTwoRanks at two
// ranks, all pushes first at more (the order measured there before lag
// existed; lag was not measured at more than two ranks).
func Resolve(a *kernels.Args, elemBytes int64) {
	if a.Param0 != 0 {
		return
	}
	a.Param0 = LagAll
	if a.NRanks <= 2 {
		a.Param0 = LagTwoRanks
	}
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
