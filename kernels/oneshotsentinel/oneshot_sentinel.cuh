// oneshot-sentinel's staging words and fault switches, for
// oneshot_sentinel.cu. Plain C++, so a host compiler can include it.
#pragma once

#include <stdint.h>

#include "device/signal.cuh"

// Staging holds every element as the complement of its bits, so all-zero
// staging reads as empty. The one pattern whose complement is zero, all
// ones, is a NaN in f32, f16 and bf16; it is sent as another NaN (all ones
// but the sign bit), which no sum, max or min tells apart from it (a NaN
// input makes any of them a NaN or drops it, whatever its payload).
// encode.go is the Go twin.
ARTEST_HD constexpr uint32_t artest_sentinel_encode32(uint32_t bits) {
  return ~bits != 0u ? ~bits : 0x80000000u;
}
ARTEST_HD constexpr uint16_t artest_sentinel_encode16(uint16_t bits) {
  return static_cast<uint16_t>(~bits) != 0u ? static_cast<uint16_t>(~bits) : static_cast<uint16_t>(0x8000u);
}

// The staging a message of `slots` 16-byte slots needs on n ranks, from
// the buffer's start: 15 bytes at most to its first 16-byte boundary (a
// case's element offset may misalign it), then two halves of n regions.
// StageBytes in staging.go is the Go twin.
ARTEST_HD constexpr uint64_t artest_sentinel_stage_bytes(uint64_t slots, uint32_t n) {
  return 2u * n * slots * 16u + 16u;
}
ARTEST_HD constexpr uint64_t artest_sentinel_align(uint64_t p) { return (p + 15) / 16 * 16; }

// oneshot-sentinel's own fault switches (Args.inject bits; the Inject*
// constants in oneshotsentinel.go): a slot used without waiting for it to
// be full, and a slot left full after it was read.
constexpr uint32_t INJECT_SENTINEL_NO_WAIT = 1u << 13;
constexpr uint32_t INJECT_SENTINEL_NO_CLEAR = 1u << 14;
