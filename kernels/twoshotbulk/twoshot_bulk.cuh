// twoshot-bulk's own constants, for twoshot_bulk.cu. Plain C++, so a host
// compiler can include it.
#pragma once

#include <stdint.h>

#include "device/grid.cuh"

// Shared-memory buffers of one block: the all-gather keeps three tiles
// loading while a fourth is stored (twoshot_bulk.cu says why four). The Go twin is Buffers (twoshotbulk.go;
// twoshotbulk_test.go reads this line and fails when they differ).
constexpr uint32_t TWOSHOT_BULK_BUFFERS = 4u;

// Dynamic shared memory of one block: TWOSHOT_BULK_BUFFERS tiles of one
// 16-byte slot per thread (32 KiB at 512 threads). The Go twin is
// SharedBytes (twoshotbulk.go).
ARTEST_HD constexpr uint64_t artest_twoshot_bulk_shared_bytes(uint32_t threads) {
  return static_cast<uint64_t>(TWOSHOT_BULK_BUFFERS) * threads * ARTEST_SLOT_BYTES;
}
