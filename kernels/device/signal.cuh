// The SignalBlock: one per rank, in memory every peer can write. This header
// repeats sigblock/layout.go byte for byte; kernels/abi_test.go parses the
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
constexpr uint32_t SIG_VERSION = 3u;  // 2: the ring region; 3: 64-bit flags (launch tags) and epochs (claims)

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

// The ring variant's region (sigblock/layout.go, sigblock/ring.go, ring/ring.cuh): one
// record of SIG_RING_LANE_BYTES per lane at SIG_OFF_RING + lane *
// SIG_RING_LANE_BYTES. It stays in this shared layout, like oneshot-ll's
// words below, because every SignalBlock has one layout and size (sigblock
// checks them) and the host's hang diagnosis (sigblock/ring.go) reads it. The words the lane's own block writes share the first
// 64 bytes; the credit (written by the right neighbour) and the slot
// sequences (written by the left neighbour) have lines of their own.
constexpr uint32_t SIG_RING_MAX_LANES = 32u;
constexpr uint32_t SIG_RING_MAX_SLOTS = 64u;
constexpr uint32_t SIG_RING_LANE_BYTES = 128u + 4u * SIG_RING_MAX_SLOTS;
constexpr uint32_t SIG_RING_OFF_HEAD = 0u;        // own: pieces through the lane in completed launches
constexpr uint32_t SIG_RING_OFF_TARGET = 4u;      // own: head + pieces of the launch in progress
constexpr uint32_t SIG_RING_OFF_SLOTS = 8u;       // own: slots of the launch in progress
constexpr uint32_t SIG_RING_OFF_WAIT_KIND = 12u;  // own: SIG_RING_WAIT_* while waiting
constexpr uint32_t SIG_RING_OFF_WAIT_WANT = 16u;  // own: the sequence awaited
constexpr uint32_t SIG_RING_OFF_WAIT_SLOT = 20u;  // own: the slot awaited (data waits)
constexpr uint32_t SIG_RING_OFF_CREDIT = 64u;     // right neighbour: last sequence it consumed
constexpr uint32_t SIG_RING_OFF_SEQ = 128u;       // left neighbour: [SIG_RING_MAX_SLOTS] slot sequences
constexpr uint32_t SIG_RING_WAIT_NONE = 0u;
constexpr uint32_t SIG_RING_WAIT_DATA = 1u;    // consumer: a slot's sequence from the left neighbour
constexpr uint32_t SIG_RING_WAIT_CREDIT = 2u;  // producer: credit from the right neighbour

// Byte offsets inside a SignalBlock.
constexpr uint32_t SIG_OFF_MAGIC = 0u;
constexpr uint32_t SIG_OFF_VERSION = 4u;
constexpr uint32_t SIG_OFF_RANK = 8u;
constexpr uint32_t SIG_OFF_NRANKS = 12u;
constexpr uint32_t SIG_OFF_TRACE_VARIANT = 64u;  // variant id of the last launch
constexpr uint32_t SIG_OFF_TRACE_COUNT = 68u;    // launches, counted by block 0
constexpr uint32_t SIG_OFF_LL_SEQ = 72u;   // oneshot-ll: sequence of the last launch (oneshot_ll.cu)
constexpr uint32_t SIG_OFF_LL_DONE = 76u;  // oneshot-ll: blocks of the current launch that have read its sequence
constexpr uint32_t SIG_OFF_DIAG = 128u;          // SIG_DIAG_WORDS words
constexpr uint32_t SIG_DIAG_WORDS = 16u;
constexpr uint32_t SIG_OFF_EPOCH = 256u;  // uint64_t[SIG_MAX_BLOCKS]: epoch | claim << 32
constexpr uint32_t SIG_OFF_FLAGS = SIG_OFF_EPOCH + 8u * SIG_MAX_BLOCKS;
// uint64_t[SIG_NUM_PHASES][SIG_MAX_BLOCKS][SIG_MAX_RANKS] from SIG_OFF_FLAGS:
// epoch | launch tag << 32, written in one store (sigblock/layout.go).
constexpr uint32_t SIG_OFF_RING = SIG_OFF_FLAGS + 8u * SIG_NUM_PHASES * SIG_MAX_BLOCKS * SIG_MAX_RANKS;
constexpr uint32_t SIG_SIZE = SIG_OFF_RING + SIG_RING_MAX_LANES * SIG_RING_LANE_BYTES;
// The epoch word's high half while a launch runs the block (epoch_begin
// ORs it in, epoch_end's store of the plain epoch clears it).
constexpr uint32_t SIG_EPOCH_CLAIM = 1u;

// The diagnostic words (sigblock/layout.go documents each): word i
// at SIG_OFF_DIAG + 4 * i of the rank's own SignalBlock, written once by the
// first block of the rank that gives up waiting (claimed with atomicCAS on
// SIG_DIAG_STATE, completed by a release store of SIG_DIAG_GAVE_UP).
constexpr uint32_t SIG_DIAG_STATE = 0u;        // 0, SIG_DIAG_CLAIMED or SIG_DIAG_GAVE_UP
constexpr uint32_t SIG_DIAG_VARIANT = 1u;      // variant id of the launch
constexpr uint32_t SIG_DIAG_BLOCK = 2u;        // blockIdx.x
constexpr uint32_t SIG_DIAG_KIND = 3u;         // SIG_DIAG_KIND_*
constexpr uint32_t SIG_DIAG_WHERE = 4u;        // phase (barrier), slot (ring data), 0 (ring credit)
constexpr uint32_t SIG_DIAG_PEER = 5u;         // the rank whose write never came
constexpr uint32_t SIG_DIAG_WANT = 6u;         // flag or sequence waited for
constexpr uint32_t SIG_DIAG_SEEN = 7u;         // what the word held at the give-up
constexpr uint32_t SIG_DIAG_WAITED_MS = 8u;    // wait from the first failed poll, ms
constexpr uint32_t SIG_DIAG_LANE = 9u;         // ring lane; the block for barriers
constexpr uint32_t SIG_DIAG_RANK = 10u;        // the rank that gave up
constexpr uint32_t SIG_DIAG_TIMEOUT_MS = 11u;  // the launch's deadline, ms
constexpr uint32_t SIG_DIAG_USED_WORDS = 12u;
constexpr uint32_t SIG_DIAG_CLAIMED = 1u;
constexpr uint32_t SIG_DIAG_GAVE_UP = 0x47495645u;  // "GIVE"
constexpr uint32_t SIG_DIAG_KIND_BARRIER = 1u;
constexpr uint32_t SIG_DIAG_KIND_RING_DATA = 2u;
constexpr uint32_t SIG_DIAG_KIND_RING_CREDIT = 3u;
constexpr uint32_t SIG_DIAG_KIND_TAG_MISMATCH = 4u;  // a flag of this epoch with another launch tag
constexpr uint32_t SIG_DIAG_KIND_CLAIMED = 5u;  // the block's epoch word was claimed by another launch
constexpr uint32_t SIG_DIAG_KIND_LL_DATA = 6u;  // oneshot-ll: an LL slot (where) from a rank (peer) lacks the sequence
constexpr uint32_t SIG_DIAG_KIND_PLUGIN_WAIT = 7u;  // a plugin's artest_wait (plugin/artest_device.h writes it)
constexpr uint32_t SIG_DIAG_KIND_SENTINEL_DATA = 8u;  // oneshot-sentinel: a slot (where) from a rank (peer) still empty

static_assert(SIG_DIAG_USED_WORDS <= SIG_DIAG_WORDS, "diag fields exceed the diag words");
static_assert(SIG_OFF_DIAG + 4u * SIG_DIAG_WORDS <= SIG_OFF_EPOCH, "diag words overlap the epochs");
static_assert(SIG_OFF_TRACE_COUNT + 4u <= SIG_OFF_DIAG, "trace words overlap the diag words");
static_assert(SIG_OFF_RING % 128u == 0 && SIG_RING_LANE_BYTES % 128u == 0, "ring records are not line aligned");
static_assert(SIG_OFF_EPOCH % 8u == 0 && SIG_OFF_FLAGS % 8u == 0, "64-bit epochs and flags are not 8-byte aligned");

// Byte offset of block b's 64-bit epoch word.
ARTEST_HD constexpr uint32_t sig_epoch_offset(uint32_t b) { return SIG_OFF_EPOCH + 8u * b; }

// Byte offset of the 64-bit flag that peer p stores for block b and phase ph.
ARTEST_HD constexpr uint32_t sig_flag_offset(uint32_t ph, uint32_t b, uint32_t p) {
  return SIG_OFF_FLAGS + 8u * ((ph * SIG_MAX_BLOCKS + b) * SIG_MAX_RANKS + p);
}

// A flag's 64-bit value: the epoch in the low half, the launch tag high.
ARTEST_HD constexpr uint64_t sig_flag_value(uint32_t tag, uint32_t e) {
  return static_cast<uint64_t>(tag) << 32 | e;
}

// Byte offset of word off (SIG_RING_OFF_*) of lane l's ring record, and of
// slot s's sequence word.
ARTEST_HD constexpr uint32_t sig_ring_offset(uint32_t l, uint32_t off) {
  return SIG_OFF_RING + SIG_RING_LANE_BYTES * l + off;
}
ARTEST_HD constexpr uint32_t sig_ring_seq_offset(uint32_t l, uint32_t s) {
  return sig_ring_offset(l, SIG_RING_OFF_SEQ + 4u * s);
}

// Whether a flag that reads seen has reached want. Epochs wrap around uint32,
// so the comparison is a signed distance; a flag ahead of want (a peer that
// skipped a barrier under fault injection, or is already in the next launch)
// counts as arrived.
ARTEST_HD constexpr bool sig_reached(uint32_t seen, uint32_t want) {
  return static_cast<int32_t>(seen - want) >= 0;
}
