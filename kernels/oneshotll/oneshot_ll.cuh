// oneshot-ll's staging layout, for oneshot_ll.cu. Plain C++, so a host
// compiler can include it.
#pragma once

#include <stdint.h>

#include "device/signal.cuh"

// The staging halves (HalfBytes and Align in staging.go are the Go twins):
// the staging buffer from its first 16-byte boundary (a case's element
// offset may misalign it; 64-bit LL words need alignment), halved and
// rounded down to 16 bytes.
ARTEST_HD constexpr uint64_t artest_ll_half_bytes(uint64_t stage_bytes) {
  return stage_bytes < 16 ? 0 : (stage_bytes - 16) / 2 / 16 * 16;
}
ARTEST_HD constexpr uint64_t artest_ll_align(uint64_t p) { return (p + 15) / 16 * 16; }

// oneshot-ll's own fault switch (an Args.inject bit; InjectLlNoFlag in
// oneshotll.go): a slot is used without checking its sequence.
constexpr uint32_t INJECT_LL_NO_FLAG = 1u << 12;
