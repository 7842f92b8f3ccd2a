// twoshot-bulk: twoshot's pull all-reduce (twoshot.cu: the same
// reduce-scatter, the same start, mid and end barriers, the same chunks,
// partition and reduction order, so the same bits), with the all-gather
// moved onto the Hopper bulk-copy engine (cp.async.bulk, sm_90).
//
// Why. twoshot's all-gather is a pure copy: each thread loads a 16-byte
// slot of every peer's staging into registers, then stores it into the
// output. A bulk copy moves a whole run of bytes with one instruction and
// no registers: one thread per block keeps a tile per peer read in flight
// while the previous tile is written out, and the other threads are free.
//
// Tiles. twoshot's partition gives global thread g the chunk-relative slots
// g, g + G, ... (G = gridDim.x * blockDim.x), so in step j block b owns
// the blockDim.x consecutive slots from k0 = (j * gridDim.x + b) *
// blockDim.x of every chunk. That run of chunk p is one tile: contiguous
// in peer p's staging and in our output, blockDim.x x 16 bytes (8 KiB at
// 512 threads). A tile cannot be longer: the next slots belong to block
// b + 1, whose mid and end barriers, not block b's, cover them. So block b
// still gathers exactly the slots that block b of peer p reduced, and its
// mid and end barriers cover exactly the data it reads from peers.
//
// Shared memory: TWOSHOT_BULK_BUFFERS (4) tiles, 4 x blockDim.x x 16
// bytes: 32 KiB per block at 512 threads (SharedBytes in twoshotbulk.go).
// Four, so that three loads are in flight while a tile is stored: with
// two (one load ahead) the kernel was 2.0 to 3.3 times slower than
// twoshot from 1 MiB on one H100 at one rank
// (docs/results/2026-11-25-h100-x1-late-ranks-bulk-overlap-chain.md).
// 32 KiB stays inside the 48 KiB a launch gets without opting in. The
// kernel traps when its launch has less.
//
// The pipeline, in thread 0 of each block, after the mid barrier: a proxy
// fence (the mid barrier's acquire of the peers' staging, our barriers'
// knowledge that the peers finished reading our input, and the mbarrier
// initialisation are generic-proxy facts; the copies run in the async
// proxy), then for every bulk tile t in order (step j, then chunk p):
//
//   wait_group.read 0     tile t-4's store (the newest committed) has read buffer t % 4
//   arrive.expect_tx      mbarrier t % 4 waits for the tile's bytes
//   cp.async.bulk load    peer p's staging -> buffer t % 4 (complete_tx)
//   try_wait.parity       tile t-3 has landed in buffer (t-3) % 4
//   cp.async.bulk store   buffer (t-3) % 4 -> our output; commit_group
//
// and after the last tile the last three tiles' waits and stores, then
// wait_group 0: every
// write has completed before the end barrier, so no copy is in flight when
// the block passes it or gives up there.
//
// Fallback. A tile moves in bulk only when its last slot is one Plan moves
// as a whole vector (Plan::fast): every peer's staging and our output are
// 16-byte aligned, and the fast slots are a prefix of the message that
// ends before a partial last slot and before the last slot under the
// planted skip-last and overrun bugs, so the whole tile is whole, aligned
// slots below count and its size a multiple of 16 bytes. Every other tile
// (misaligned launches, the tail of a chunk, slots past count) moves as in
// twoshot, each thread its own slot, element by element where Plan says.
// The test depends on the tile alone, so thread 0 and the thread that owns
// a slot agree on who moves it.
//
// Below sm_90 (the fatbin's sm_80 code) ARTEST_HAS_BULK_COPY is 0: no tile
// moves in bulk and the kernel is twoshot's pull. The variant declares
// NeedSM90, so the runner never launches it there.
#include "device/common.cuh"
#include "twoshot_bulk.cuh"
#include "device/pull.cuh"

namespace artest {
namespace twoshotbulk {

// The tile buffers. One name for every instantiation: each launch gets its
// own dynamic shared memory, sized by the host (SharedBytes). uint4 for the
// 16-byte alignment bulk copies need.
extern __shared__ uint4 bulk_smem[];

// A tile's store is issued TWOSHOT_BULK_BUFFERS - 1 loads after its own
// load, so that many loads are in flight; the store that last read a
// buffer is then the newest committed group when the buffer is loaded
// again, and wait_group.read 0 before each load is exact.
static_assert(TWOSHOT_BULK_BUFFERS >= 2 && TWOSHOT_BULK_BUFFERS <= 8, "gather_bulk keeps 1 to 7 loads ahead of its stores");

// The bytes of the tile at chunk-relative slot k0 (k0 < chunk_slots) of
// chunk p when it moves in bulk, else 0 (see Fallback above).
template <typename T>
__device__ __forceinline__ uint32_t bulk_bytes(const Plan<T>& plan, uint64_t chunk, uint64_t chunk_slots, uint32_t p,
                                               uint64_t k0) {
#if ARTEST_HAS_BULK_COPY
  const uint64_t end = k0 + blockDim.x < chunk_slots ? k0 + blockDim.x : chunk_slots;
  if (!plan.fast(p * chunk + (end - 1) * Slot<T>::kElems)) return 0;
  return static_cast<uint32_t>(end - k0) * ARTEST_SLOT_BYTES;
#else
  (void)plan;
  (void)chunk;
  (void)chunk_slots;
  (void)p;
  (void)k0;
  return 0;
#endif
}

// The bulk all-gather of this block (thread 0 alone; see The pipeline
// above). Returns once every bulk tile has been written to out.
template <typename T>
__device__ __forceinline__ void gather_bulk(const ArtestArgs& a, const Plan<T>& plan, uint64_t chunk,
                                            uint64_t chunk_slots) {
#if ARTEST_HAS_BULK_COPY
  __shared__ uint64_t bars[TWOSHOT_BULK_BUFFERS];
  if (threadIdx.x != 0) return;
  using Bits = typename Slot<T>::Bits;
  constexpr uint32_t kElems = Slot<T>::kElems;
  const uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(bulk_smem));
  const uint32_t bar0 = static_cast<uint32_t>(__cvta_generic_to_shared(bars));
  const uint32_t tile_bytes = blockDim.x * ARTEST_SLOT_BYTES;
  for (uint32_t i = 0; i < TWOSHOT_BULK_BUFFERS; ++i) mbar_init(bar0 + i * sizeof(uint64_t), 1);
  fence_proxy_async();

  // Waits for tile u (element base, bytes) in its buffer and stores it.
  const auto store = [&](uint32_t u, uint64_t base, uint32_t bytes) {
    const uint32_t buf = u % TWOSHOT_BULK_BUFFERS;
    mbar_wait_parity(bar0 + buf * sizeof(uint64_t), (u / TWOSHOT_BULK_BUFFERS) & 1u);
    bulk_store(reinterpret_cast<Bits*>(a.out) + base, smem + buf * tile_bytes, bytes);
    bulk_commit();
  };

  constexpr uint32_t kAhead = TWOSHOT_BULK_BUFFERS - 1;  // loads issued before a tile's store
  uint64_t pend_base[TWOSHOT_BULK_BUFFERS];
  uint32_t pend_bytes[TWOSHOT_BULK_BUFFERS];
  uint32_t t = 0;  // bulk tiles loaded so far
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t k0 = static_cast<uint64_t>(blockIdx.x) * blockDim.x; k0 < chunk_slots; k0 += step) {
    for (uint32_t p = 0; p < a.nranks; ++p) {
      const uint32_t bytes = bulk_bytes(plan, chunk, chunk_slots, p, k0);
      if (bytes == 0) continue;
      const uint64_t base = p * chunk + k0 * kElems;
      const uint32_t buf = t % TWOSHOT_BULK_BUFFERS;
      const uint32_t bar = bar0 + buf * sizeof(uint64_t);
      bulk_wait_read();  // the newest committed store, tile t - TWOSHOT_BULK_BUFFERS's, has read this buffer
      mbar_arrive_expect_tx(bar, bytes);
      bulk_load(smem + buf * tile_bytes, reinterpret_cast<const Bits*>(a.peer_stage[p]) + base, bytes, bar);
      pend_base[buf] = base;
      pend_bytes[buf] = bytes;
      if (t >= kAhead) {
        const uint32_t u = t - kAhead;
        store(u, pend_base[u % TWOSHOT_BULK_BUFFERS], pend_bytes[u % TWOSHOT_BULK_BUFFERS]);
      }
      ++t;
    }
  }
  for (uint32_t u = t > kAhead ? t - kAhead : 0; u < t; ++u) {
    store(u, pend_base[u % TWOSHOT_BULK_BUFFERS], pend_bytes[u % TWOSHOT_BULK_BUFFERS]);
  }
  bulk_wait_all();
#else
  (void)a;
  (void)plan;
  (void)chunk;
  (void)chunk_slots;
#endif
}

template <typename T, uint32_t OP>
__device__ __forceinline__ void run(const ArtestArgs& a) {
  pdl_wait(a);  // --pdl: before any input read or flag store (sync.cuh)
  using S = Slot<T>;
  using R = Reduce<T, OP>;
  check_launch(a, a.count, sizeof(T));
  // Too little shared memory for the tile buffers is a host bug: trap
  // before any barrier, on every rank alike.
  if (ARTEST_HAS_BULK_COPY && dynamic_smem_size() < artest_twoshot_bulk_shared_bytes(blockDim.x)) __trap();

  const uint64_t count = a.count;
  const uint32_t n = a.nranks;
  const uint64_t chunk = artest_twoshot_chunk(count, n, sizeof(T));
  const uint64_t chunk_slots = chunk / S::kElems;
  const Plan<T> plan(a, all_aligned16(a.peer_in, n, a.out) && all_aligned16(a.peer_stage, n, 0));
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  const uint32_t e = epoch_begin(a);
  if ((a.inject & INJECT_NO_START_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_START, e);
  inject_delay(a);

  // Reduce-scatter: our chunk, over every peer's input, into our staging
  // (twoshot's pull).
  const uint64_t mine = static_cast<uint64_t>(a.rank) * chunk;
  const uint64_t stage = a.peer_stage[a.rank];
  twoshot::reduce_scatter_pull<T, OP>(a, plan, count, n, mine, stage, chunk_slots, first, stride);

  // Mid: block b of every peer has put its slots of its chunk into its
  // staging, and has finished reading our input for its chunk, so block b
  // may overwrite those slots of our output in place (twoshot.cu).
  if ((a.inject & INJECT_NO_MID_BARRIER) == 0) barrier<Sync::kPublish>(a, SIG_PHASE_MID, e);

  // All-gather: thread 0 moves the bulk tiles; every thread moves its slots
  // of the other tiles as twoshot does, up to kInflight peers' loads in
  // flight before the first store.
  gather_bulk(a, plan, chunk, chunk_slots);
  constexpr uint32_t kInflight = R::kInflight;
  for (uint64_t k = first; k < chunk_slots; k += stride) {
    const uint64_t offset = k * S::kElems;
    const uint64_t k0 = k - threadIdx.x;  // the tile this slot belongs to
    for (uint32_t p0 = 0; p0 < n; p0 += kInflight) {
      uint4 v[kInflight];
      bool move[kInflight];
#pragma unroll
      for (uint32_t i = 0; i < kInflight; ++i) {
        const uint64_t base = (p0 + i) * chunk + offset;
        move[i] = p0 + i < n && base < count && bulk_bytes(plan, chunk, chunk_slots, p0 + i, k0) == 0;
        if (!move[i]) continue;
        v[i] = plan.fast(base) ? S::load_vec(a.peer_stage[p0 + i], base)
                               : S::load_elems(a.peer_stage[p0 + i], base, plan.valid(base));
      }
#pragma unroll
      for (uint32_t i = 0; i < kInflight; ++i) {
        if (!move[i]) continue;
        const uint64_t base = (p0 + i) * chunk + offset;
        if (plan.fast(base)) {
          S::store_vec(a.out, base, v[i]);
        } else {
          S::store_out_elems(a, base, plan.valid(base), v[i]);
        }
      }
    }
  }

  // End: peers may still be reading our staging (twoshot.cu says what this
  // protects). gather_bulk has waited for all of its copies: none is in
  // flight here.
  if ((a.inject & INJECT_NO_END_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_END, e);
  epoch_end(a, e);
}

}  // namespace twoshotbulk
}  // namespace artest

#define ARTEST_TWOSHOT_BULK_KERNEL(dname, T, oname, OPV)                               \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)                     \
      artest_twoshot_bulk_##dname##_##oname(const __grid_constant__ ArtestArgs args) { \
    artest::twoshotbulk::run<T, OPV>(args);                                            \
  }

ARTEST_FOR_EACH_DTYPE_OP(ARTEST_TWOSHOT_BULK_KERNEL)
