// multimem: allreduce through NVLink SHARP (NVLS). Every rank's input and
// staging buffers live in memory bound to one multicast object; adding the
// launch's multicast delta (param2 | param3 << 32) to an address in this
// rank's buffers gives the multicast address of the same offset in every
// rank's buffers. There
//
//   multimem.ld_reduce  reads a 16-byte slot of every rank's copy and
//                       returns their sum, reduced in the NVSwitch, and
//   multimem.st         writes a 16-byte slot to every rank's copy.
//
// Two forms (param0, "shots"; Resolve in shots.go picks one when 0):
//
//   two-shot  rank r reduces chunk r (twoshot's chunks) with ld_reduce and
//             broadcasts it with multimem.st. In place on the registered
//             buffer (the input is the output) the result goes straight
//             back to the input's multicast address: start barrier,
//             ld_reduce + st, end barrier. Otherwise into the staging
//             buffers' multicast address; after the mid barrier every rank
//             copies all chunks from its own staging to its output.
//   one-shot  every rank reduces the whole message with ld_reduce into its
//             own output (end barrier: peers may still be reading our
//             input), or, in place, into its own staging, then the mid
//             barrier, then the copy (as oneshot).
//
// Slots that cannot take the 16-byte multicast path (misaligned buffers,
// the partial last slot, the slot a planted bug touches) take a unicast
// path: the sum over the peers' inputs in rank order (Reduce::elems), then
// plain stores to every rank's copy. Sizes and offsets of any kind work.
//
// Reduction order: the switch's order and, for f32, precision are not
// specified by the PTX ISA, so the registry declares OrderUnknown; f16 and
// bf16 accumulate in f32 (.acc::f32) and round once.
//
// Memory model: multicast and unicast addresses of the same bytes are
// virtual aliases, which the PTX memory model orders only across a
// fence.proxy.alias. Every barrier of this kernel is bracketed by one on
// each side (mc_barrier), so that multimem stores (and ld_reduce reads)
// before a barrier are ordered with unicast accesses after it, on every
// rank. Kernel boundaries order the rest (host copies before, downloads
// after).
//
// The multimem instructions exist from sm_90 on: on older targets the
// kernels trap (the fatbin also holds sm_80 code for the other families).
#include "device/common.cuh"

namespace artest {
namespace multimem {

// param0 (OneShot, TwoShot in shots.go). An enum: below sm_90
// nothing uses them, and unused constants would warn.
enum Shots : uint32_t { kOneShot = 1, kTwoShot = 2 };

// The multimem PTX exists only in sm_90 code; below that every use traps.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define ARTEST_MC_LD_REDUCE(TYPE, v, mc)                                                         \
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add" TYPE " {%0, %1, %2, %3}, [%4];"       \
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)                                      \
               : "l"(mc)                                                                         \
               : "memory")
#define ARTEST_MC_ST(TYPE, mc, v)                                                                \
  asm volatile("multimem.st.relaxed.sys.global" TYPE " [%0], {%1, %2, %3, %4};" ::"l"(mc), "r"(v.x), \
               "r"(v.y), "r"(v.z), "r"(v.w)                                                      \
               : "memory")
#define ARTEST_FENCE_PROXY_ALIAS() asm volatile("fence.proxy.alias;" ::: "memory")
#else
#define ARTEST_MC_LD_REDUCE(TYPE, v, mc) __trap()
#define ARTEST_MC_ST(TYPE, mc, v) __trap()
#define ARTEST_FENCE_PROXY_ALIAS() __trap()
#endif

// Mc<T>: one 16-byte slot at a multicast address, in T's vector form (4
// registers of 32 bits). 16-bit types accumulate in f32 (.acc::f32).
template <typename T>
struct Mc;

#define ARTEST_MULTIMEM_OPS(T, LDTYPE, STTYPE)                                 \
  template <>                                                                  \
  struct Mc<T> {                                                               \
    static __device__ __forceinline__ uint4 ld_reduce_sum(uint64_t mc) {       \
      uint4 v = make_uint4(0, 0, 0, 0);                                        \
      ARTEST_MC_LD_REDUCE(LDTYPE, v, mc);                                      \
      return v;                                                                \
    }                                                                          \
    static __device__ __forceinline__ void st(uint64_t mc, const uint4& v) {   \
      ARTEST_MC_ST(STTYPE, mc, v);                                             \
    }                                                                          \
  };

ARTEST_MULTIMEM_OPS(float, ".v4.f32", ".v4.f32")
ARTEST_MULTIMEM_OPS(__half, ".acc::f32.v4.f16x2", ".v4.f16x2")
ARTEST_MULTIMEM_OPS(__nv_bfloat16, ".acc::f32.v4.bf16x2", ".v4.bf16x2")
#undef ARTEST_MULTIMEM_OPS

// The signal barrier, fenced on both sides for the multicast aliases (see
// the file comment). Every thread fences: each orders its own accesses.
__device__ __forceinline__ void mc_barrier(const ArtestArgs& a, uint32_t ph, uint32_t e) {
  ARTEST_FENCE_PROXY_ALIAS();
  barrier(a, ph, e);
  ARTEST_FENCE_PROXY_ALIAS();
}

__device__ __forceinline__ bool aligned16(uint64_t bits) { return (bits & (ARTEST_SLOT_BYTES - 1)) == 0; }

// store_out_elems for any rank's output buf (in place, the owner of a chunk
// writes every rank's output), with the planted-bug switches.
template <typename T>
__device__ __forceinline__ void store_out_to(const ArtestArgs& a, uint64_t buf, uint64_t base, uint32_t valid,
                                             const uint4& v) {
  using S = Slot<T>;
  const bool holds_last = base + valid == a.count;
  uint32_t keep = valid;
  if (holds_last && (a.inject & INJECT_SKIP_LAST)) keep = valid - 1;
  S::store_elems(buf, base, keep, v);
  if (holds_last && (a.inject & INJECT_OVERRUN)) {
    st_elem(reinterpret_cast<typename S::Bits*>(buf) + a.count, S::get(v, valid - 1));
  }
}

// The launch's geometry: who moves which slot.
struct Walk {
  uint64_t first, stride;
  __device__ __forceinline__ Walk()
      : first(static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x),
        stride(static_cast<uint64_t>(gridDim.x) * blockDim.x) {}
};

// Copies every slot this thread owns in the two-shot partition (slot k of
// every chunk) from this rank's staging to its output.
template <typename T>
__device__ __forceinline__ void copy_chunks(const ArtestArgs& a, uint64_t chunk, const Walk& w) {
  using S = Slot<T>;
  const uint64_t stage = a.peer_stage[a.rank];
  const Plan<T> plan(a, aligned16(stage | a.out));
  const uint64_t chunk_slots = chunk / S::kElems;
  for (uint64_t k = w.first; k < chunk_slots; k += w.stride) {
    for (uint32_t p = 0; p < a.nranks; ++p) {
      const uint64_t base = p * chunk + k * S::kElems;
      if (base >= a.count) break;
      if (plan.fast(base)) {
        S::store_vec(a.out, base, S::load_vec(stage, base));
      } else {
        const uint32_t valid = plan.valid(base);
        S::store_out_elems(a, base, valid, S::load_elems(stage, base, valid));
      }
    }
  }
}

template <typename T>
__device__ __forceinline__ void two_shot(const ArtestArgs& a, uint64_t delta, bool in_place, uint32_t e,
                                         const Walk& w) {
  using S = Slot<T>;
  using R = Reduce<T, OP_SUM>;
  const uint32_t n = a.nranks;
  const uint64_t chunk = artest_twoshot_chunk(a.count, n, sizeof(T));
  const uint64_t chunk_slots = chunk / S::kElems;
  const uint64_t mine = static_cast<uint64_t>(a.rank) * chunk;
  const uint64_t mc_in = a.peer_in[a.rank] + delta;
  // In place the result goes back to the input's multicast address, which
  // is every rank's output; otherwise to the staging buffers'.
  const uint64_t mc_dst = in_place ? mc_in : a.peer_stage[a.rank] + delta;
  const Plan<T> plan(a, aligned16(mc_in | mc_dst));

  for (uint64_t k = w.first; k < chunk_slots; k += w.stride) {
    const uint64_t base = mine + k * S::kElems;
    if (base >= a.count) break;
    if (plan.fast(base)) {
      const uint64_t off = base * sizeof(T);
      Mc<T>::st(mc_dst + off, Mc<T>::ld_reduce_sum(mc_in + off));
    } else {
      const uint32_t valid = plan.valid(base);
      const uint4 v = R::elems(a.peer_in, n, base, valid);
      for (uint32_t p = 0; p < n; ++p) {
        if (in_place) {
          store_out_to<T>(a, a.peer_in[p], base, valid, v);
        } else {
          S::store_elems(a.peer_stage[p], base, valid, v);
        }
      }
    }
  }

  if (!in_place) {
    // Mid: block b of every rank has put its slots of its chunk into every
    // rank's staging (and has finished reading the inputs).
    if ((a.inject & INJECT_NO_MID_BARRIER) == 0) mc_barrier(a, SIG_PHASE_MID, e);
    copy_chunks<T>(a, chunk, w);
  }
  // End. In place, our output's chunks arrive from their owners: we must
  // not return before block b of every rank has stored its slots of block
  // b (or while it may still read our input). Staged, nobody touches our
  // buffers after the mid barrier; the end barrier keeps our staging safe
  // from whatever writes it after we return, as in twoshot.
  if ((a.inject & INJECT_NO_END_BARRIER) == 0) mc_barrier(a, SIG_PHASE_END, e);
}

template <typename T>
__device__ __forceinline__ void one_shot(const ArtestArgs& a, uint64_t delta, bool in_place, uint32_t e,
                                         const Walk& w) {
  using S = Slot<T>;
  using R = Reduce<T, OP_SUM>;
  const uint32_t n = a.nranks;
  const uint64_t slots = artest_ceil_div(a.count, S::kElems);
  const uint64_t mc_in = a.peer_in[a.rank] + delta;
  // In place our output is our input, which the peers' ld_reduce still
  // reads: park the result in our own staging until the mid barrier.
  const uint64_t dst = in_place ? a.peer_stage[a.rank] : a.out;
  const Plan<T> plan(a, aligned16(mc_in | dst));

  for (uint64_t k = w.first; k < slots; k += w.stride) {
    const uint64_t base = k * S::kElems;
    if (plan.fast(base)) {
      S::store_vec(dst, base, Mc<T>::ld_reduce_sum(mc_in + base * sizeof(T)));
    } else {
      const uint32_t valid = plan.valid(base);
      const uint4 v = R::elems(a.peer_in, n, base, valid);
      if (in_place) {
        S::store_elems(dst, base, valid, v);
      } else {
        S::store_out_elems(a, base, valid, v);
      }
    }
  }

  if (!in_place) {
    // End: peers' block b may still be reading our input for its slots.
    if ((a.inject & INJECT_NO_END_BARRIER) == 0) mc_barrier(a, SIG_PHASE_END, e);
    return;
  }
  // Mid: every peer's block b has finished reading our input for block b's
  // slots. Then the copy; no end barrier, as in oneshot: after the mid
  // barrier no peer reads anything of ours in this launch.
  if ((a.inject & INJECT_NO_MID_BARRIER) == 0) mc_barrier(a, SIG_PHASE_MID, e);
  const Plan<T> copy(a, aligned16(dst | a.out));
  copy_out(a, copy, dst, w.first, w.stride, slots);
}

template <typename T>
__device__ __forceinline__ void run(const ArtestArgs& a) {
  pdl_wait(a);  // --pdl: before any input read or flag store (sync.cuh)
  const uint64_t delta = static_cast<uint64_t>(a.param3) << 32 | a.param2;
  // No multicast mapping: the host did not bind this launch to a multicast
  // object, and a multimem instruction on a plain address is undefined.
  if (delta == 0) __trap();
  const uint32_t shots = a.param0;
  if (shots != kOneShot && shots != kTwoShot) __trap();
  const bool in_place = (a.flags & FLAG_IN_PLACE) != 0;
  // The barrier sequence depends on in_place, which must be the same on
  // every rank; out aliasing the input without the flag would also race.
  if (!in_place && a.out == a.peer_in[a.rank]) __trap();
  const bool staged = (shots == kTwoShot) != in_place;
  check_launch(a, staged ? a.count : 0, sizeof(T));

  const Walk w;
  const uint32_t e = epoch_begin(a);
  // Start: no rank's input is read before that rank's launch began.
  if ((a.inject & INJECT_NO_START_BARRIER) == 0) mc_barrier(a, SIG_PHASE_START, e);
  inject_delay(a);
  if (shots == kTwoShot) {
    two_shot<T>(a, delta, in_place, e, w);
  } else {
    one_shot<T>(a, delta, in_place, e, w);
  }
  epoch_end(a, e);
}

}  // namespace multimem
}  // namespace artest

// Sum only: the switch has no f32 max or min (ptxas rejects them), so the
// registry lists sum alone and the other cases are skipped with that reason.
// Below sm_90 the whole kernel is a trap.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define ARTEST_MULTIMEM_BODY(T) __trap()
#else
#define ARTEST_MULTIMEM_BODY(T) artest::multimem::run<T>(args)
#endif

#define ARTEST_MULTIMEM_KERNEL(dname, T)                                         \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)               \
      artest_multimem_##dname##_sum(const __grid_constant__ ArtestArgs args) {   \
    ARTEST_MULTIMEM_BODY(T);                                                     \
  }

ARTEST_MULTIMEM_KERNEL(f32, float)
ARTEST_MULTIMEM_KERNEL(f16, __half)
ARTEST_MULTIMEM_KERNEL(bf16, __nv_bfloat16)
