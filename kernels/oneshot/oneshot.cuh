// oneshot's grid, for the host selftest (kernels/selftest_test.cu); the Go
// side is kernels.Grid's default (kernels.VecGrid over the whole message).
// Plain C++, so a host compiler can include it.
#pragma once

#include <stdint.h>

#include "device/grid.cuh"

// One 16-byte slot per thread over the whole message, within the block cap.
ARTEST_HD constexpr uint32_t artest_oneshot_blocks(uint64_t count, uint32_t elem_bytes, uint32_t threads,
                                                   uint32_t max_blocks) {
  return artest_clamp_blocks(artest_ceil_div(count, ARTEST_SLOT_BYTES / elem_bytes), threads, max_blocks);
}
