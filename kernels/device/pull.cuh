// The pull reduce-scatter step twoshot (twoshot/twoshot.cu) and
// twoshot-bulk (twoshotbulk/twoshot_bulk.cu) share: the reduce-scatter of
// our chunk into our staging. Shared device code lives here, not in one
// variant's folder that another includes. The barriers around it stay in
// each kernel's run(), where the protocol reads whole.
#pragma once

#include "device/common.cuh"

namespace artest {
namespace twoshot {

// Reduce-scatter (pull): our chunk, over every peer's input, into our
// staging. Global thread first owns the chunk-relative slots first,
// first + stride, ... (twoshot.cu's partition); our chunk starts at
// element mine, stage is our staging. count, n, mine and stage are the
// caller's values, not read from a again here: read here, they compile
// twoshot's kernels to other (equivalent) machine code.
template <typename T, uint32_t OP>
__device__ __forceinline__ void reduce_scatter_pull(const ArtestArgs& a, const Plan<T>& plan, uint64_t count,
                                                    uint32_t n, uint64_t mine, uint64_t stage, uint64_t chunk_slots,
                                                    uint64_t first, uint64_t stride) {
  using S = Slot<T>;
  using R = Reduce<T, OP>;
  for (uint64_t k = first; k < chunk_slots; k += stride) {
    const uint64_t base = mine + k * S::kElems;
    if (base >= count) break;
    if (plan.fast(base)) {
      S::store_vec(stage, base, R::vec(a.peer_in, n, base));
    } else {
      const uint32_t valid = plan.valid(base);
      S::store_elems(stage, base, valid, R::elems(a.peer_in, n, base, valid));
    }
  }
}

}  // namespace twoshot
}  // namespace artest
