// twoshot: reduce-scatter, then all-gather. Rank r reduces chunk r of the
// message over every peer's input into its own staging buffer; after the mid
// barrier every rank copies chunk p out of peer p's staging buffer, for every
// p. Each rank reads 2 x (message) in total instead of nranks x (message), so
// it wins over oneshot once bandwidth, not latency, is what counts.
//
// Chunks: C = roundup(ceil(count / nranks), W) elements (W elements per
// 16-byte slot), chunk p = [p*C, min((p+1)*C, count)); trailing chunks may be
// short or empty. Staging holds each element at its own index, so a staging
// buffer must have room for count elements.
//
// Partition: global thread g owns chunk-relative slots g, g + G, ... (G =
// gridDim.x * blockDim.x) of every chunk, in both halves. So the slots that
// block b of peer p wrote into its staging (chunk p, reduce-scatter) are
// exactly the ones our block b reads from it (all-gather), and block b's mid
// and end barriers cover exactly that data.
//
// Gather (param0, twoshot.cuh, gather.go): pull (above) or push. Push: the
// reduce-scatter stores each reduced slot of chunk r into our output and
// into every peer's staging at the same index (peer p's staging region of
// chunk r is written by rank r alone); after the mid barrier (release:
// it publishes those stores) each rank copies chunks p != r from its own
// staging into its output, a local copy. NVLink then carries reads (the
// reduce) and writes (the push) at the same time, in both directions,
// instead of two rounds of reads. Nothing of ours is read by a peer after
// the mid barrier, so push needs no end barrier: the next launch's pushes
// into our staging come after its start barrier, which our block reaches
// only once this whole launch is done (stream order).
#include "device/common.cuh"
#include "twoshot.cuh"
#include "device/pull.cuh"

namespace artest {
namespace twoshot {

template <typename T, uint32_t OP>
__device__ __forceinline__ void run(const ArtestArgs& a) {
  pdl_wait(a);  // --pdl: before any input read or flag store (sync.cuh)
  using S = Slot<T>;
  using R = Reduce<T, OP>;
  check_launch(a, a.count, sizeof(T));

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

  // Reduce-scatter: our chunk, over every peer's input, into our staging.
  const uint64_t mine = static_cast<uint64_t>(a.rank) * chunk;
  const uint64_t stage = a.peer_stage[a.rank];
  const bool push = a.param0 == TWOSHOT_GATHER_PUSH;
  if (push) {
    // Our chunk of our input is read by this thread alone (peers read
    // their own chunks), so in place it can be overwritten right here.
    for (uint64_t k = first; k < chunk_slots; k += stride) {
      const uint64_t base = mine + k * S::kElems;
      if (base >= count) break;
      if (plan.fast(base)) {
        const uint4 v = R::vec(a.peer_in, n, base);
        for (uint32_t p = 0; p < n; ++p) {
          S::store_vec(p == a.rank ? a.out : a.peer_stage[p], base, v);
        }
      } else {
        const uint32_t valid = plan.valid(base);
        const uint4 v = R::elems(a.peer_in, n, base, valid);
        for (uint32_t p = 0; p < n; ++p) {
          if (p == a.rank) {
            S::store_out_elems(a, base, valid, v);
          } else {
            S::store_elems(a.peer_stage[p], base, valid, v);
          }
        }
      }
    }
    if ((a.inject & INJECT_NO_MID_BARRIER) == 0) barrier<Sync::kPublish>(a, SIG_PHASE_MID, e);
    for (uint32_t p = 0; p < n; ++p) {
      if (p == a.rank) continue;
      const uint64_t theirs = static_cast<uint64_t>(p) * chunk;
      for (uint64_t k = first; k < chunk_slots; k += stride) {
        const uint64_t base = theirs + k * S::kElems;
        if (base >= count) break;
        if (plan.fast(base)) {
          S::store_vec(a.out, base, S::load_vec(stage, base));
        } else {
          const uint32_t valid = plan.valid(base);
          S::store_out_elems(a, base, valid, S::load_elems(stage, base, valid));
        }
      }
    }
    epoch_end(a, e);
    return;
  }
  reduce_scatter_pull<T, OP>(a, plan, count, n, mine, stage, chunk_slots, first, stride);

  // Mid: block b of every peer has put its slots of its chunk into its
  // staging, and has finished reading our input for its chunk.
  //
  // In place (out == our input) is therefore safe without staging our own
  // output: peers read our input only in their reduce-scatter, and block b
  // writes out only after every peer's block b has passed this barrier, i.e.
  // finished reading the slots block b is about to overwrite.
  if ((a.inject & INJECT_NO_MID_BARRIER) == 0) barrier<Sync::kPublish>(a, SIG_PHASE_MID, e);

  // All-gather: slot k of every chunk p from peer p's staging into out,
  // with up to kInflight peers' loads in flight before the first store.
  constexpr uint32_t kInflight = R::kInflight;
  for (uint64_t k = first; k < chunk_slots; k += stride) {
    const uint64_t offset = k * S::kElems;
    for (uint32_t p0 = 0; p0 < n; p0 += kInflight) {
      uint4 v[kInflight];
#pragma unroll
      for (uint32_t i = 0; i < kInflight; ++i) {
        const uint64_t base = (p0 + i) * chunk + offset;
        if (p0 + i >= n || base >= count) continue;
        v[i] = plan.fast(base) ? S::load_vec(a.peer_stage[p0 + i], base)
                               : S::load_elems(a.peer_stage[p0 + i], base, plan.valid(base));
      }
#pragma unroll
      for (uint32_t i = 0; i < kInflight; ++i) {
        const uint64_t base = (p0 + i) * chunk + offset;
        if (p0 + i >= n || base >= count) continue;
        if (plan.fast(base)) {
          S::store_vec(a.out, base, v[i]);
        } else {
          S::store_out_elems(a, base, plan.valid(base), v[i]);
        }
      }
    }
  }

  // End: peers may still be reading our staging; we must not return (and
  // let anything reuse it) before block b of every peer is done with our
  // slots of block b. Our next custom launch would be safe without it (its
  // start barrier waits for every peer to finish this launch first); what
  // this protects is anything else that writes staging after we return: the
  // host, or another library sharing the buffer. Our input needs no end
  // barrier: peers stop reading it before the mid barrier.
  if ((a.inject & INJECT_NO_END_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_END, e);
  epoch_end(a, e);
}

}  // namespace twoshot
}  // namespace artest

#define ARTEST_TWOSHOT_KERNEL(dname, T, oname, OPV)                               \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)                \
      artest_twoshot_##dname##_##oname(const __grid_constant__ ArtestArgs args) { \
    artest::twoshot::run<T, OPV>(args);                                           \
  }

ARTEST_FOR_EACH_DTYPE_OP(ARTEST_TWOSHOT_KERNEL)
