// pull: a reduce-scatter and an all-gather, each rank reading what it needs
// straight from its peers' inputs over P2P: twoshot's two halves
// (twoshot.cu) made collectives of their own. The reduce-scatter is
// twoshot's first half writing the rank's output instead of its staging;
// the all-gather is twoshot's pull gather reading the peers' inputs instead
// of their staging.
//
// Buffers (NCCL's): count is the full buffer, C = count / nranks elements
// the chunk of one rank. Reduce-scatter: every input has count elements,
// rank r's output is C elements, op over every rank's elements
// [r*C, (r+1)*C). All-gather: every input has C elements, every output
// count, chunk p of it peer p's input. In place (NCCL's offsets) a
// reduce-scatter's output is chunk r of its own input, an all-gather's
// input chunk r of its own output; the kernels need no flag for it: a
// reduce-scatter thread reads its output's slot before it writes it, and
// no peer reads our chunk r; an all-gather skips its own chunk when it
// already is its input, and peers read only that chunk of ours.
//
// Partition: global thread g owns chunk-relative slots g, g + G, ...
// (G = gridDim.x * blockDim.x), the same on every rank, in every chunk it
// handles. Block b's end barrier therefore waits for exactly the blocks
// that read our slots of block b, and the launch ends when every block
// passed it.
//
// Barriers: start (no peer's input is read before that peer's launch
// began: its host wrote the input before it on its stream) and end (we
// must not return, and let our caller overwrite our input, while a peer's
// block may still read it). No mid barrier: nothing is staged.
#include "device/common.cuh"

namespace artest {
namespace pull {

// store_out writes the first valid elements of a slot at element base of
// an output of n elements, with the planted-bug switches on its last
// element (Slot::store_out_elems for an output whose length is not
// a.count: a reduce-scatter's chunk).
template <typename T>
__device__ __forceinline__ void store_out(const ArtestArgs& a, uint64_t n, uint64_t base, uint32_t valid,
                                          const uint4& v) {
  using S = Slot<T>;
  const bool holds_last = base + valid == n;
  uint32_t keep = valid;
  if (holds_last && (a.inject & INJECT_SKIP_LAST)) keep = valid - 1;
  S::store_elems(a.out, base, keep, v);
  if (holds_last && (a.inject & INJECT_OVERRUN)) {
    st_elem(reinterpret_cast<typename S::Bits*>(a.out) + n, S::get(v, valid - 1));
  }
}

// fast_end is where whole 16-byte slots stop in a chunk of c elements:
// every slot below it moves as one vector when vec (every address of the
// launch 16-byte aligned), none otherwise; the last full slot moves
// element by element under a planted bug, as Plan does.
template <typename T>
__device__ __forceinline__ uint64_t fast_end(const ArtestArgs& a, uint64_t c, bool vec) {
  constexpr uint32_t W = Slot<T>::kElems;
  if (!vec) return 0;
  uint64_t end = c / W * W;
  if (end == c && c > 0 && (a.inject & (INJECT_SKIP_LAST | INJECT_OVERRUN)) != 0) end -= W;
  return end;
}

template <typename T, uint32_t OP>
__device__ __forceinline__ void run_reduce_scatter(const ArtestArgs& a) {
  pdl_wait(a);  // --pdl: before any input read or flag store (sync.cuh)
  using S = Slot<T>;
  using R = Reduce<T, OP>;
  if ((a.flags & FLAG_REDUCE_SCATTER) == 0) __trap();  // the host launched another collective's kernel
  check_launch(a, 0, sizeof(T));

  const uint32_t n = a.nranks;
  const uint64_t chunk = a.count / n;
  const uint64_t mine = static_cast<uint64_t>(a.rank) * chunk;
  const bool vec = all_aligned16(a.peer_in, n, a.out) && (mine * sizeof(T)) % ARTEST_SLOT_BYTES == 0;
  const uint64_t fast = fast_end<T>(a, chunk, vec);
  const uint64_t slots = artest_ceil_div(chunk, S::kElems);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  const uint32_t e = epoch_begin(a);
  if ((a.inject & INJECT_NO_START_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_START, e);
  inject_delay(a);

  // Our chunk of every rank's input, reduced in rank order, into out.
  for (uint64_t k = first; k < slots; k += stride) {
    const uint64_t off = k * S::kElems;
    if (off < fast) {
      S::store_vec(a.out, off, R::vec(a.peer_in, n, mine + off));
    } else {
      const uint32_t valid = chunk - off < S::kElems ? static_cast<uint32_t>(chunk - off) : S::kElems;
      store_out<T>(a, chunk, off, valid, R::elems(a.peer_in, n, mine + off, valid));
    }
  }

  // End: block b of every peer has finished reading our slots of block b
  // of its chunk.
  if ((a.inject & INJECT_NO_END_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_END, e);
  epoch_end(a, e);
}

template <typename T>
__device__ __forceinline__ void run_all_gather(const ArtestArgs& a) {
  pdl_wait(a);  // --pdl: before any input read or flag store (sync.cuh)
  using S = Slot<T>;
  if ((a.flags & FLAG_ALL_GATHER) == 0) __trap();  // the host launched another collective's kernel
  check_launch(a, 0, sizeof(T));

  const uint32_t n = a.nranks;
  const uint64_t chunk = a.count / n;
  const bool vec = all_aligned16(a.peer_in, n, a.out) && (chunk * sizeof(T)) % ARTEST_SLOT_BYTES == 0;
  const uint64_t fast = fast_end<T>(a, chunk, vec);
  const uint64_t slots = artest_ceil_div(chunk, S::kElems);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // In place our input is our own chunk of out: nothing to copy there.
  const uint32_t self = a.peer_in[a.rank] == a.out + static_cast<uint64_t>(a.rank) * chunk * sizeof(T) ? a.rank : n;

  const uint32_t e = epoch_begin(a);
  if ((a.inject & INJECT_NO_START_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_START, e);
  inject_delay(a);

  // Slot k of every peer's input into slot k of its chunk of out, with up
  // to kInflight peers' loads in flight before the first store.
  constexpr uint32_t kInflight = Reduce<T, OP_SUM>::kInflight;
  for (uint64_t k = first; k < slots; k += stride) {
    const uint64_t off = k * S::kElems;
    const bool whole = off < fast;
    const uint32_t valid = chunk - off < S::kElems ? static_cast<uint32_t>(chunk - off) : S::kElems;
    for (uint32_t p0 = 0; p0 < n; p0 += kInflight) {
      uint4 v[kInflight];
#pragma unroll
      for (uint32_t i = 0; i < kInflight; ++i) {
        const uint32_t p = p0 + i;
        if (p >= n || p == self) continue;
        v[i] = whole ? S::load_vec(a.peer_in[p], off) : S::load_elems(a.peer_in[p], off, valid);
      }
#pragma unroll
      for (uint32_t i = 0; i < kInflight; ++i) {
        const uint32_t p = p0 + i;
        if (p >= n || p == self) continue;
        const uint64_t base = p * chunk + off;
        if (whole) {
          S::store_vec(a.out, base, v[i]);
        } else {
          store_out<T>(a, a.count, base, valid, v[i]);
        }
      }
    }
  }

  // End: block b of every peer has finished reading our input's slots of
  // block b.
  if ((a.inject & INJECT_NO_END_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_END, e);
  epoch_end(a, e);
}

}  // namespace pull
}  // namespace artest

// Reduce-scatter: artest_pull_rs_<dtype>_<op>; all-gather, which reduces
// nothing: artest_pull_ag_<dtype> (kernels.Variant.CollKernelName).
#define ARTEST_PULL_RS_KERNEL(dname, T, oname, OPV)                               \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)                \
      artest_pull_rs_##dname##_##oname(const __grid_constant__ ArtestArgs args) { \
    artest::pull::run_reduce_scatter<T, OPV>(args);                               \
  }

ARTEST_FOR_EACH_DTYPE_OP(ARTEST_PULL_RS_KERNEL)

#define ARTEST_PULL_AG_KERNEL(dname, T)                                           \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)                \
      artest_pull_ag_##dname(const __grid_constant__ ArtestArgs args) {           \
    artest::pull::run_all_gather<T>(args);                                        \
  }

ARTEST_PULL_AG_KERNEL(f32, float)
ARTEST_PULL_AG_KERNEL(f16, __half)
ARTEST_PULL_AG_KERNEL(bf16, __nv_bfloat16)
