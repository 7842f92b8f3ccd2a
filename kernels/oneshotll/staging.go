package oneshotll

import (
	"fmt"

	"github.com/artest/artest/kernels"
)

// oneshot-ll (oneshot_ll.cu): every rank pushes its input into every
// rank's staging as LL words (4 data bytes and the launch's sequence in one
// 8-byte store), so 16 data bytes take SlotBytes of staging.
const SlotBytes = 32

// MaxBytes is the largest message oneshot-ll takes: its staging holds 2
// halves x ranks x 2 x the message (StageBytes), and past a few hundred
// KiB the doubled bytes on NVLink cost more than the saved barriers (a
// first guess, to be replaced by artest tune's measured crossover).
const MaxBytes = 1 << 20

// HalfBytes is one half of a staging buffer of stageBytes, counted from
// its first 16-byte boundary (Align; artest_ll_half_bytes and
// artest_ll_align in oneshot_ll.cuh).
func HalfBytes(stageBytes uint64) uint64 {
	if stageBytes < 16 {
		return 0
	}
	return (stageBytes - 16) / 2 / 16 * 16
}

// Align is the first 16-byte boundary at or after p.
func Align(p uint64) uint64 { return (p + 15) / 16 * 16 }

// StageBytes is the staging a message of msgBytes needs on n ranks.
func StageBytes(msgBytes int64, n int) int64 {
	slots := (msgBytes + kernels.VecBytes - 1) / kernels.VecBytes
	return 2*int64(n)*slots*SlotBytes + 16
}

// TooBig says why a message is not for oneshot-ll, or "".
func TooBig(msgBytes int64) string {
	if msgBytes > MaxBytes {
		return fmt.Sprintf("oneshot-ll takes messages up to %d bytes (its staging holds 4 x ranks x the message)", MaxBytes)
	}
	return ""
}
