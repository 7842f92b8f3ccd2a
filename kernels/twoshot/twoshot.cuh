// twoshot's own constants and grid, for twoshot.cu and the host selftest
// (kernels/selftest_test.cu). Plain C++, so a host compiler can include it.
#pragma once

#include <stdint.h>

#include "device/grid.cuh"

// The gather (param0; GatherPull and GatherPush in gather.go are the Go
// twins, gather_test.go checks them): how chunks reach the other ranks
// after the reduce-scatter.
constexpr uint32_t TWOSHOT_GATHER_PULL = 1u;  // each rank reads every peer's staging
constexpr uint32_t TWOSHOT_GATHER_PUSH = 2u;  // each rank writes its chunk into every peer's staging

// The grid (Grid in twoshot.go): one 16-byte slot per thread over one
// chunk (artest_twoshot_chunk), within the block cap.
ARTEST_HD constexpr uint32_t artest_twoshot_blocks(uint64_t count, uint32_t elem_bytes, uint32_t nranks,
                                                   uint32_t threads, uint32_t max_blocks) {
  return artest_clamp_blocks(artest_twoshot_chunk(count, nranks, elem_bytes) / (ARTEST_SLOT_BYTES / elem_bytes),
                             threads, max_blocks);
}
