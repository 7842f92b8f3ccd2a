// oneshot-cpasync: the one-shot allreduce (oneshot.cu: same barriers, same
// epochs, same partition, same reduction order, so bit-identical results),
// with the peer reads moved into a cp.async pipeline through shared memory.
//
// Why a pipeline. A one-shot rank reads nranks x (message) over NVLink, and
// a remote read takes several times as long to come back as a local one.
// What a block can move per unit of time is the bytes it keeps in flight
// divided by that latency. The plain kernel keeps in flight what fits in
// registers: one slot from each peer per thread, then it stalls until they
// arrive, reduces, and only then issues the next slot's loads. cp.async
// copies global memory into shared memory without holding registers, so
// each thread here keeps the next (stages - 1) tiles of copies outstanding
// while it reduces the current one: more bytes in flight per SM for the same
// register budget, and the reduction overlaps the loads instead of waiting
// for them.
//
// What the stage count trades. More stages put more bytes in flight (hide
// more latency) but cost shared memory, stages x nranks x threads x 16 bytes
// per block, which lowers the blocks an SM can hold and, past sm_80's
// 163 KiB or sm_90's 227 KiB, fails the launch; and a deeper pipeline has
// more to fill before the first reduction and more to drain after the last,
// which small messages (one tile per block) pay in full. Two stages is the
// least that overlaps anything. The default is 3; `artest tune` on H200
// decides the rest.
//
// The pipeline. A tile is blockDim.x consecutive 16-byte slots. Block b
// takes tiles b, b + G, b + 2G, ... (G = gridDim.x), and thread t takes slot
// t of each: global thread g owns slots g, g + G*blockDim.x, ..., exactly
// oneshot's partition, so one block's barriers speak for the same data on
// every rank as in oneshot. Stage buffer s in dynamic shared memory holds,
// per rank r and thread t, one slot: [s][r][t] x 16 bytes. Per block:
//
//   prologue: issue tiles 0 .. stages-2 (one commit_group each)
//   tile j:   issue tile j + stages - 1, commit (possibly an empty group),
//             wait_group(stages - 1): tile j's group has landed,
//             __syncthreads,
//             reduce tile j from shared memory in rank order, store it.
//
// Slots that are not whole aligned 16-byte vectors (misaligned launches,
// the partial last slot, and the last slot under the planted skip-last and
// overrun bugs: see Plan in plan.cuh) are never copied; the reduce step
// reads them element by element straight from the peers, as oneshot does.
#include "device/common.cuh"
#include "cpasync.cuh"

namespace artest {
namespace cpasync {

// The stage buffers. One name for every instantiation: each launch gets
// its own dynamic shared memory, sized by the host (SharedBytes). uint4 for
// its 16-byte alignment, which cp.async's destination needs.
extern __shared__ uint4 stage_smem[];

template <typename T, uint32_t OP>
struct Pipeline {
  using S = Slot<T>;
  using R = Reduce<T, OP>;
  static constexpr uint32_t kElems = S::kElems;

  const ArtestArgs& a;
  const Plan<T>& plan;
  uint32_t n;            // ranks
  uint32_t threads;      // blockDim.x
  uint32_t smem;         // .shared address of stage_smem
  uint64_t slots;        // 16-byte slots of the message (the last may be partial)
  uint64_t tile_stride;  // slots between a block's consecutive tiles: G x blockDim.x
  uint64_t first;        // this thread's slot in the block's tile 0

  __device__ __forceinline__ uint64_t slot_of(uint64_t j) const { return first + j * tile_stride; }

  // Byte offset of [stage][rank][thread] in the stage buffers.
  __device__ __forceinline__ uint32_t offset(uint32_t stage, uint32_t r) const {
    return ((stage * n + r) * threads + threadIdx.x) * ARTEST_SLOT_BYTES;
  }

  // Starts the copies of this thread's slot of tile j from every peer into
  // stage buffer `stage`.
  __device__ __forceinline__ void issue(uint64_t j, uint32_t stage) const {
    const uint64_t base = slot_of(j) * kElems;
    if (!plan.fast(base)) return;  // also false past the end: fast_end <= count
    for (uint32_t r = 0; r < n; ++r) {
      copy16(smem + offset(stage, r), reinterpret_cast<const typename S::Bits*>(a.peer_in[r]) + base);
    }
  }

  // Reduces this thread's slot of tile j (from stage buffer `stage` when it
  // was copied, else from the peers) into dst: a.out, or this rank's staging
  // buffer in place. Rank order and float accumulation as Reduce, so the
  // bits equal oneshot's.
  __device__ __forceinline__ void reduce(uint64_t j, uint32_t stage, uint64_t dst, bool in_place) const {
    const uint64_t k = slot_of(j);
    if (k >= slots) return;
    const uint64_t base = k * kElems;
    if (plan.fast(base)) {
      const uint32_t mine = smem + offset(stage, 0);
      const uint32_t rank_stride = threads * ARTEST_SLOT_BYTES;  // bytes from one rank's slot to the next's
      float acc[kElems];
      for (uint32_t r = 0; r < n; ++r) R::accumulate(acc, ld_shared_v4(mine + r * rank_stride), r == 0);
      S::store_vec(dst, base, R::round(acc));
      return;
    }
    const uint32_t valid = plan.valid(base);
    const uint4 v = R::elems(a.peer_in, n, base, valid);
    if (in_place) {
      S::store_elems(dst, base, valid, v);
    } else {
      S::store_out_elems(a, base, valid, v);
    }
  }
};

template <typename T, uint32_t OP>
__device__ __forceinline__ void run(const ArtestArgs& a) {
  pdl_wait(a);  // --pdl: before any input read or flag store (sync.cuh)
  using S = Slot<T>;
  const bool in_place = (a.flags & FLAG_IN_PLACE) != 0;
  // As in oneshot: the barrier sequence depends on in_place, and out
  // aliasing the input without the flag would race. Host bugs: trap.
  if (!in_place && a.out == a.peer_in[a.rank]) __trap();
  check_launch(a, in_place ? a.count : 0, sizeof(T));
  // The stage count comes from the launch (param0); 0 (the host forgot to
  // set it) or out of range, or less shared memory than the stages need,
  // is a host bug: trap before any barrier, on every rank alike (all ranks
  // launch with the same parameters).
  const uint32_t stages = a.param0;
  if (stages < CPASYNC_MIN_STAGES || stages > CPASYNC_MAX_STAGES ||
      dynamic_smem_bytes() < artest_cpasync_shared_bytes(stages, a.nranks, blockDim.x)) {
    __trap();
  }

  const uint32_t n = a.nranks;
  const uint64_t stage = a.peer_stage[a.rank];
  const Plan<T> plan(a, all_aligned16(a.peer_in, n, a.out | (in_place ? stage : 0)));
  const uint64_t slots = artest_ceil_div(a.count, S::kElems);
  const uint64_t tiles = artest_ceil_div(slots, blockDim.x);
  // Tiles of this block: b, b + G, ... below tiles. The same for every
  // thread of the block, so the loop's __syncthreads are uniform.
  const uint64_t my_tiles = blockIdx.x < tiles ? artest_ceil_div(tiles - blockIdx.x, gridDim.x) : 0;
  const Pipeline<T, OP> p{a,
                          plan,
                          n,
                          blockDim.x,
                          static_cast<uint32_t>(__cvta_generic_to_shared(stage_smem)),
                          slots,
                          static_cast<uint64_t>(gridDim.x) * blockDim.x,
                          static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x};

  const uint32_t e = epoch_begin(a);
  // Start: no peer's input is copied before that peer's launch began. The
  // copies are issued after the barrier's acquire and bar.sync in program
  // order, and the "memory" clobbers keep the compiler from hoisting them.
  if ((a.inject & INJECT_NO_START_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_START, e);
  inject_delay(a);

  const uint64_t dst = in_place ? stage : a.out;
  uint32_t load_stage = 0;
  for (uint32_t j = 0; j + 1 < stages; ++j) {
    if (j < my_tiles) p.issue(j, load_stage);
    commit();
    load_stage = load_stage + 1 == stages ? 0 : load_stage + 1;
  }
  uint32_t read_stage = 0;
  for (uint64_t j = 0; j < my_tiles; ++j) {
    // load_stage is the buffer that tile j - 1 was reduced from: this
    // thread's slots of it are free, since only this thread reads or writes
    // them, and it finished reading them in the previous iteration.
    if (j + stages - 1 < my_tiles) p.issue(j + stages - 1, load_stage);
    commit();
    wait_pending(stages - 1);
    // Each thread reduces only the slots it copied itself, which
    // cp.async.wait_group alone makes visible to it; this block barrier is
    // not what makes the data correct. It is the pipeline's contract as the
    // issue states it (wait_group, barrier, compute), which keeps the whole
    // block on one tile at a time (no warp runs stages ahead of the others
    // and widens the block's window beyond `stages` tiles) and keeps the
    // kernel correct if a later layout lets threads reduce slots that other
    // threads copied. It costs one bar.sync per tile; whether
    // dropping it pays is for measurements on H200 to say.
    __syncthreads();
    p.reduce(j, read_stage, dst, in_place);
    load_stage = load_stage + 1 == stages ? 0 : load_stage + 1;
    read_stage = read_stage + 1 == stages ? 0 : read_stage + 1;
  }
  // Every copy from a peer must have landed before the barrier that tells
  // the peers we no longer read their inputs. The loop already waited for
  // every non-empty group; this makes it hold whatever the loop did (a
  // block with no tile, a future edit of the loop) for the price of one
  // instruction.
  wait_all();

  if (!in_place) {
    // End: this rank must not return (and let its caller overwrite its
    // input) while a peer's block may still be copying it.
    if ((a.inject & INJECT_NO_END_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_END, e);
  } else {
    // In place, as oneshot: the result is parked in our staging buffer
    // until every peer's block b is done with our slots of block b (mid
    // barrier), then copied over our input. Each thread reads back only the
    // staging slots it wrote itself (the same slots as in the pipeline).
    if ((a.inject & INJECT_NO_MID_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_MID, e);
    copy_out(a, plan, stage, p.first, p.tile_stride, slots);
    // No end barrier, as in oneshot: after the mid barrier no peer reads
    // anything of ours in this launch.
  }
  epoch_end(a, e);
}

}  // namespace cpasync
}  // namespace artest

// Same launch bounds and __grid_constant__ parameter as oneshot; the stage
// buffers are dynamic shared memory, set per launch by the host.
#define ARTEST_ONESHOT_CPASYNC_KERNEL(dname, T, oname, OPV)                               \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)                        \
      artest_oneshot_cpasync_##dname##_##oname(const __grid_constant__ ArtestArgs args) { \
    artest::cpasync::run<T, OPV>(args);                                                   \
  }

ARTEST_FOR_EACH_DTYPE_OP(ARTEST_ONESHOT_CPASYNC_KERNEL)
