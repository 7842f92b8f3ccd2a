// The SignalBlock: one per rank, in memory every peer can write. This header
// repeats signal/layout.go byte for byte; kernels/abi_test.go parses the
// constants below and fails when a value or a name differs from the Go side,
// so change both together.
//
// Plain C++ (no CUDA headers) so that a host compiler can include it too: the
// ABI test compiles it with g++ when one is present and compares the offsets a
// real compiler computes with the Go ones.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define ARTEST_HD __host__ __device__
#else
#define ARTEST_HD
#endif

constexpr uint32_t SIG_MAGIC = 0x41525453u;  // "ARTS" little-endian
constexpr uint32_t SIG_VERSION = 1u;

// World size every variant can address: ArtestArgs carries this many peers.
constexpr uint32_t SIG_MAX_RANKS = 16u;
// Largest grid of any custom kernel: flags and epochs are per block.
constexpr uint32_t SIG_MAX_BLOCKS = 256u;

// Phases of one launch. Each has its own flag array, so a peer that is
// already one phase (or one launch) ahead never overwrites a flag another
// phase is still waiting on.
constexpr uint32_t SIG_PHASE_START = 0u;  // inputs written: peers may read them
constexpr uint32_t SIG_PHASE_MID = 1u;    // this block's first half is done
constexpr uint32_t SIG_PHASE_END = 2u;    // this block no longer reads peers
constexpr uint32_t SIG_NUM_PHASES = 3u;

// Byte offsets inside a SignalBlock.
constexpr uint32_t SIG_OFF_MAGIC = 0u;
constexpr uint32_t SIG_OFF_VERSION = 4u;
constexpr uint32_t SIG_OFF_RANK = 8u;
constexpr uint32_t SIG_OFF_NRANKS = 12u;
constexpr uint32_t SIG_OFF_TRACE_VARIANT = 64u;  // variant id of the last launch
constexpr uint32_t SIG_OFF_TRACE_COUNT = 68u;    // launches, counted by block 0
constexpr uint32_t SIG_OFF_DIAG = 128u;          // SIG_DIAG_WORDS words
constexpr uint32_t SIG_DIAG_WORDS = 16u;
constexpr uint32_t SIG_OFF_EPOCH = 256u;  // uint32_t[SIG_MAX_BLOCKS]
constexpr uint32_t SIG_OFF_FLAGS = SIG_OFF_EPOCH + 4u * SIG_MAX_BLOCKS;
// uint32_t[SIG_NUM_PHASES][SIG_MAX_BLOCKS][SIG_MAX_RANKS] from SIG_OFF_FLAGS.
constexpr uint32_t SIG_SIZE = SIG_OFF_FLAGS + 4u * SIG_NUM_PHASES * SIG_MAX_BLOCKS * SIG_MAX_RANKS;

static_assert(SIG_OFF_DIAG + 4u * SIG_DIAG_WORDS <= SIG_OFF_EPOCH, "diag words overlap the epochs");
static_assert(SIG_OFF_TRACE_COUNT + 4u <= SIG_OFF_DIAG, "trace words overlap the diag words");

// Byte offset of block b's epoch counter.
ARTEST_HD constexpr uint32_t sig_epoch_offset(uint32_t b) { return SIG_OFF_EPOCH + 4u * b; }

// Byte offset of the flag that peer p stores for block b and phase ph.
ARTEST_HD constexpr uint32_t sig_flag_offset(uint32_t ph, uint32_t b, uint32_t p) {
  return SIG_OFF_FLAGS + 4u * ((ph * SIG_MAX_BLOCKS + b) * SIG_MAX_RANKS + p);
}

// Whether a flag that reads seen has reached want. Epochs wrap around uint32,
// so the comparison is a signed distance; a flag ahead of want (a peer that
// skipped a barrier under fault injection, or is already in the next launch)
// counts as arrived.
ARTEST_HD constexpr bool sig_reached(uint32_t seen, uint32_t want) {
  return static_cast<int32_t>(seen - want) >= 0;
}
