// oneshot: every rank reads every peer's whole input over P2P, reduces all of
// it, and writes its own output. One read of (nranks) x (message) per rank,
// two barriers: the fewest steps, so the lowest latency for small messages.
//
// Partition: global thread g of the grid owns slots g, g + G, g + 2G, ...
// (G = gridDim.x * blockDim.x) of the whole message. The partition depends
// only on count and the grid, which every rank shares, so block b of every
// rank owns the same slots: that is what lets one block's barrier speak for
// exactly the data that the same block of every peer touched.
#include "device/common.cuh"
#include "oneshot.cuh"

namespace artest {
namespace oneshot {

template <typename T, uint32_t OP>
__device__ __forceinline__ void run(const ArtestArgs& a) {
  pdl_wait(a);  // --pdl: before any input read or flag store (sync.cuh)
  using S = Slot<T>;
  using R = Reduce<T, OP>;
  const bool in_place = (a.flags & FLAG_IN_PLACE) != 0;
  // The barrier sequence (mid or end) depends on in_place, and it must be
  // the same on every rank; out aliasing the input without the flag would
  // also race (peers read what we overwrite). Both are host bugs: trap.
  if (!in_place && a.out == a.peer_in[a.rank]) __trap();
  check_launch(a, in_place ? a.count : 0, sizeof(T));

  const uint32_t n = a.nranks;
  const uint64_t stage = a.peer_stage[a.rank];
  const Plan<T> plan(a, all_aligned16(a.peer_in, n, a.out | (in_place ? stage : 0)));
  const uint64_t slots = artest_ceil_div(a.count, S::kElems);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  // A call's time between the claim, the barriers and the data, from SM
  // clock stamps printed by block 0's thread 0 (ci/experiment.sh stamps):
  // the claim about 940 cycles, the data step 3300 to 3800 at 1 and 256
  // KiB on 2 H200 (docs/results/2026-11-26-h100-h200-x2-nccl-win-vllm-study.md).
  const uint32_t e = epoch_begin(a);
  // Start: no peer's input is read before that peer's launch began (its
  // host wrote the input before it on its stream).
  if ((a.inject & INJECT_NO_START_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_START, e);
  inject_delay(a);

  if (!in_place) {
    for (uint64_t k = first; k < slots; k += stride) {
      const uint64_t base = k * S::kElems;
      if (plan.fast(base)) {
        S::store_vec(a.out, base, R::vec(a.peer_in, n, base));
      } else {
        const uint32_t valid = plan.valid(base);
        S::store_out_elems(a, base, valid, R::elems(a.peer_in, n, base, valid));
      }
    }
    // End: this rank must not return (and let its caller overwrite its
    // input) while a peer's block may still be reading it. Block b's end
    // barrier waits for block b of every peer, which read exactly our
    // slots of block b; the launch ends only when every block has passed.
    if ((a.inject & INJECT_NO_END_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_END, e);
  } else {
    // In place: out is our input, which peers are still reading. Park the
    // result in our own staging buffer (same element index) until every
    // peer's block b is done with block b's slots, then copy it over.
    for (uint64_t k = first; k < slots; k += stride) {
      const uint64_t base = k * S::kElems;
      if (plan.fast(base)) {
        S::store_vec(stage, base, R::vec(a.peer_in, n, base));
      } else {
        const uint32_t valid = plan.valid(base);
        S::store_elems(stage, base, valid, R::elems(a.peer_in, n, base, valid));
      }
    }
    // Mid: every peer's block b has finished reading our slots of block b.
    // (Each thread reads back only the staging slots it wrote itself.)
    if ((a.inject & INJECT_NO_MID_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_MID, e);
    copy_out(a, plan, stage, first, stride, slots);
    // No end barrier: after the mid barrier of every block, no peer reads
    // anything of ours in this launch (our staging is private to us and our
    // input is no longer read), so returning is safe. Our staging is
    // rewritten only by our next launch, after its start barrier.
  }
  epoch_end(a, e);
}

}  // namespace oneshot
}  // namespace artest

// One parameter, by value; __grid_constant__ lets the barrier index
// peer_signal[threadIdx.x] straight from the parameter bank instead of a
// local-memory copy of the struct (it does not change the launch ABI).
#define ARTEST_ONESHOT_KERNEL(dname, T, oname, OPV)                               \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)                \
      artest_oneshot_##dname##_##oname(const __grid_constant__ ArtestArgs args) { \
    artest::oneshot::run<T, OPV>(args);                                           \
  }

ARTEST_FOR_EACH_DTYPE_OP(ARTEST_ONESHOT_KERNEL)
