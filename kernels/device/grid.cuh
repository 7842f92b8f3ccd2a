// What every kernel's partition of a message shares with the host: the
// 16-byte slot, the block size limit and the grid rule (the Go twins are in
// kernels/grid.go). Plain C++ so that a host compiler can include it.
#pragma once

#include <stdint.h>

#include "signal.cuh"

// Data moves in slots of 16 bytes: 4 f32 or 8 f16/bf16 elements. Slot k is
// elements [k*W, min(k*W+W, count)) with W = ARTEST_SLOT_BYTES / element size;
// only the last slot can be partial.
constexpr uint32_t ARTEST_SLOT_BYTES = 16u;

// ---------------------------------------------------------------------------
// Grid size: what the host must launch. Every rank of one launch must use
// the same gridDim.x and blockDim.x, because barrier flags are per block and
// a block's barrier covers exactly the slots that the same-numbered block of
// every peer owns. A variant's grid (kernels.Grid: its GridFunc, else one
// 16-byte slot per thread over the whole message) depends only on count,
// the element size, nranks and the variant's limits, so every rank computes
// the same one:
//
//   blocks = min(max_blocks, SIG_MAX_BLOCKS, max(1, ceil(slots / threads)))
//
// (artest_clamp_blocks) with slots the 16-byte slots the blocks share out
// (a variant's own formula, beside its kernel: oneshot/oneshot.cuh,
// twoshot/twoshot.cuh), max_blocks the variant's Blocks and threads its
// Threads. Threads must be a multiple of 32, at least nranks and at most
// ARTEST_MAX_THREADS. Any grid within those limits gives correct results
// (the kernels grid-stride over slots); the formula only avoids launching
// blocks that would find no slot.
//
// The kernels' __launch_bounds__: up to 128 registers a thread, which the
// 16-byte paths with 8 peer loads in flight need (at 1024 threads the cap
// of 64 made ptxas spill).
constexpr uint32_t ARTEST_MAX_THREADS = 512u;

ARTEST_HD constexpr uint64_t artest_ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

ARTEST_HD constexpr uint32_t artest_clamp_blocks(uint64_t slots, uint32_t threads, uint32_t max_blocks) {
  uint64_t want = artest_ceil_div(slots, threads);
  uint64_t cap = max_blocks < SIG_MAX_BLOCKS ? max_blocks : SIG_MAX_BLOCKS;
  if (want > cap) want = cap;
  if (want < 1) want = 1;
  return static_cast<uint32_t>(want);
}

// Elements of one two-shot chunk (kernels.ChunkElems; twoshot's and
// multimem's two-shot form): a whole number of slots, so a slot never
// straddles two chunks and chunk starts keep 16-byte alignment.
ARTEST_HD constexpr uint64_t artest_twoshot_chunk(uint64_t count, uint32_t nranks, uint32_t elem_bytes) {
  return artest_ceil_div(artest_ceil_div(count, nranks), ARTEST_SLOT_BYTES / elem_bytes) *
         (ARTEST_SLOT_BYTES / elem_bytes);
}
