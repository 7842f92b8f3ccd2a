package kernels

import "fmt"

// oneshot-ll (kernels/oneshotll/oneshot_ll.cu): every rank pushes its input into every
// rank's staging as LL words (4 data bytes and the launch's sequence in one
// 8-byte store), so 16 data bytes take LLSlotBytes of staging.
const LLSlotBytes = 32

// LLMaxBytes is the largest message oneshot-ll takes: its staging holds 2
// halves x ranks x 2 x the message (LLStageBytes), and past a few hundred
// KiB the doubled bytes on NVLink cost more than the saved barriers (a
// first guess, to be replaced by artest tune's measured crossover).
const LLMaxBytes = 1 << 20

// LLHalfBytes is one half of a staging buffer of stageBytes, counted from
// its first 16-byte boundary (LLAlign; artest_ll_half_bytes and
// artest_ll_align in kernels/common.cuh).
func LLHalfBytes(stageBytes uint64) uint64 {
	if stageBytes < 16 {
		return 0
	}
	return (stageBytes - 16) / 2 / 16 * 16
}

// LLAlign is the first 16-byte boundary at or after p.
func LLAlign(p uint64) uint64 { return (p + 15) / 16 * 16 }

// LLStageBytes is the staging a message of msgBytes needs on n ranks.
func LLStageBytes(msgBytes int64, n int) int64 {
	slots := (msgBytes + VecBytes - 1) / VecBytes
	return 2*int64(n)*slots*LLSlotBytes + 16
}

// LLTooBig says why a message is not for oneshot-ll, or "".
func LLTooBig(msgBytes int64) string {
	if msgBytes > LLMaxBytes {
		return fmt.Sprintf("oneshot-ll takes messages up to %d bytes (its staging holds 4 x ranks x the message)", LLMaxBytes)
	}
	return ""
}
