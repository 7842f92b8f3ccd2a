// Moving and reducing 16-byte slots, for every kernel: Slot (a slot's
// elements as raw bits, whole or one by one, with the planted-bug switches
// on the output), Plan (which slots move whole), Reduce (one slot over
// every rank's buffer in rank order, in float, rounded once), the in-place
// copy-out and the alignment test.
#pragma once

#include <stdint.h>

#include "abi.cuh"
#include "elem.cuh"
#include "grid.cuh"

#if defined(__CUDACC__)
namespace artest {

// A slot of 16 bytes as raw bits. Element j of a 16-bit type is half-word
// (j % 2) of word j / 2 (little-endian, as in memory).
template <typename T>
struct Slot {
  using E = Elem<T>;
  using Bits = typename E::Bits;
  static constexpr uint32_t kElems = ARTEST_SLOT_BYTES / sizeof(T);

  // Word k of v; selects rather than an indexed array, so a run-time k
  // stays in registers.
  static __device__ __forceinline__ uint32_t word(const uint4& v, uint32_t k) {
    return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
  }

  static __device__ __forceinline__ Bits get(const uint4& v, uint32_t j) {
    if (sizeof(Bits) == 4) return static_cast<Bits>(word(v, j));
    return static_cast<Bits>(word(v, j / 2) >> (16 * (j % 2)));
  }

  // Sets element j; j is a compile-time constant wherever this is called
  // (unrolled loops), so the selects fold away.
  static __device__ __forceinline__ void set(uint4& v, uint32_t j, Bits b) {
    const uint32_t k = sizeof(Bits) == 4 ? j : j / 2;
    const uint32_t shift = sizeof(Bits) == 4 ? 0 : 16 * (j % 2);
    const uint32_t mask = sizeof(Bits) == 4 ? 0xffffffffu : 0xffffu << shift;
    const uint32_t w = (word(v, k) & ~mask) | (static_cast<uint32_t>(b) << shift);
    if (k == 0) v.x = w;
    if (k == 1) v.y = w;
    if (k == 2) v.z = w;
    if (k == 3) v.w = w;
  }

  // A whole slot as one 16-byte access (only where the launch is aligned).
  static __device__ __forceinline__ uint4 load_vec(uint64_t buf, uint64_t base) {
    return ld_slot_v4(reinterpret_cast<const Bits*>(buf) + base);
  }
  static __device__ __forceinline__ void store_vec(uint64_t buf, uint64_t base, const uint4& v) {
    st_slot_v4(reinterpret_cast<Bits*>(buf) + base, v);
  }

  // The first `valid` elements (1..kElems) of a slot, element by element:
  // the misaligned path and the partial last slot. Elements from valid on
  // read as zero bits and are never stored.
  static __device__ __forceinline__ uint4 load_elems(uint64_t buf, uint64_t base, uint32_t valid) {
    const Bits* p = reinterpret_cast<const Bits*>(buf) + base;
    uint4 v = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (uint32_t j = 0; j < kElems; ++j) {
      if (j < valid) set(v, j, ld_elem(p + j));
    }
    return v;
  }
  static __device__ __forceinline__ void store_elems(uint64_t buf, uint64_t base, uint32_t valid, const uint4& v) {
    Bits* p = reinterpret_cast<Bits*>(buf) + base;
#pragma unroll
    for (uint32_t j = 0; j < kElems; ++j) {
      if (j < valid) st_elem(p + j, get(v, j));
    }
  }

  // store_elems into this rank's output, with the planted-bug switches,
  // which only the slot holding element count-1 can trigger (and that slot
  // always takes this path: see Plan).
  static __device__ __forceinline__ void store_out_elems(const ArtestArgs& a, uint64_t base, uint32_t valid,
                                                         const uint4& v) {
    const bool holds_last = base + valid == a.count;
    uint32_t keep = valid;
    if (holds_last && (a.inject & INJECT_SKIP_LAST)) keep = valid - 1;
    store_elems(a.out, base, keep, v);
    if (holds_last && (a.inject & INJECT_OVERRUN)) st_elem(reinterpret_cast<Bits*>(a.out) + a.count, get(v, valid - 1));
  }
};

// Which slots of a launch move as whole 16-byte vectors. Slot bases are
// multiples of W, and the slot at base moves as one vector exactly when
// base < fast_end; every other slot moves element by element. When every
// pointer is 16-byte aligned (vec), that is all but the last slot, and the
// last one too when it is full and no planted bug touches it; otherwise
// (misaligned) no slot. So the per-slot hot path carries no tail and no
// fault-injection logic.
//
// vec may differ between ranks (their pointers differ): it changes how a
// slot is moved, never which thread moves it, so barriers are unaffected.
template <typename T>
struct Plan {
  static constexpr uint32_t kElems = Slot<T>::kElems;
  uint64_t count;
  uint64_t fast_end;

  __device__ __forceinline__ Plan(const ArtestArgs& a, bool vec) : count(a.count), fast_end(0) {
    if (!vec) return;
    fast_end = count / kElems * kElems;
    if (fast_end == count && count > 0 && (a.inject & (INJECT_SKIP_LAST | INJECT_OVERRUN)) != 0) fast_end -= kElems;
  }

  __device__ __forceinline__ bool fast(uint64_t base) const { return base < fast_end; }
  // Elements of the slot at base that exist (base < count).
  __device__ __forceinline__ uint32_t valid(uint64_t base) const {
    const uint64_t left = count - base;
    return left < kElems ? static_cast<uint32_t>(left) : kElems;
  }
};

// Reduces one slot over the buffers of ranks 0..nranks-1 (addresses in
// bufs[]), in that order, in float: acc = x[0]; acc = op(acc, x[r]) for
// r = 1..nranks-1; then one rounding to T. The order is fixed whatever the
// load order, so every rank computes the same bits.
template <typename T, uint32_t OP>
struct Reduce {
  using S = Slot<T>;
  static constexpr uint32_t kElems = S::kElems;
  // Peer loads issued before the first is used. The registry caps worlds at
  // 8 ranks, so one batch covers them.
  static constexpr uint32_t kInflight = 8;

  static __device__ __forceinline__ void accumulate(float (&acc)[kElems], const uint4& x, bool first) {
#pragma unroll
    for (uint32_t j = 0; j < kElems; ++j) {
      const float f = S::E::to_float(S::get(x, j));
      acc[j] = first ? f : Op<OP>::apply(acc[j], f);
    }
  }

  static __device__ __forceinline__ uint4 round(const float (&acc)[kElems]) {
    uint4 out = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (uint32_t j = 0; j < kElems; ++j) S::set(out, j, S::E::from_float(acc[j]));
    return out;
  }

  // Whole 16-byte slots, kInflight ranks' loads in flight at a time.
  static __device__ __forceinline__ uint4 vec(const uint64_t* bufs, uint32_t nranks, uint64_t base) {
    float acc[kElems];
    for (uint32_t r0 = 0; r0 < nranks; r0 += kInflight) {
      uint4 x[kInflight];
#pragma unroll
      for (uint32_t i = 0; i < kInflight; ++i) {
        if (r0 + i < nranks) x[i] = S::load_vec(bufs[r0 + i], base);
      }
#pragma unroll
      for (uint32_t i = 0; i < kInflight; ++i) {
        if (r0 + i < nranks) accumulate(acc, x[i], r0 + i == 0);
      }
    }
    return round(acc);
  }

  // Element by element, one rank at a time: the slow path, kept small.
  static __device__ __forceinline__ uint4 elems(const uint64_t* bufs, uint32_t nranks, uint64_t base,
                                                uint32_t valid) {
    float acc[kElems];
    for (uint32_t r = 0; r < nranks; ++r) accumulate(acc, S::load_elems(bufs[r], base, valid), r == 0);
    return round(acc);
  }
};

// The in-place copy-out after a mid barrier: this thread's slots first,
// first + stride, ... below slots move from src (a buffer indexed like the
// message) to a.out, whole vectors where plan allows, else element by
// element with the planted-bug switches of store_out_elems. Each thread
// copies only slots it wrote into src itself, so no block barrier is needed.
template <typename T>
__device__ __forceinline__ void copy_out(const ArtestArgs& a, const Plan<T>& plan, uint64_t src, uint64_t first,
                                         uint64_t stride, uint64_t slots) {
  using S = Slot<T>;
  for (uint64_t k = first; k < slots; k += stride) {
    const uint64_t base = k * S::kElems;
    if (plan.fast(base)) {
      S::store_vec(a.out, base, S::load_vec(src, base));
    } else {
      const uint32_t valid = plan.valid(base);
      S::store_out_elems(a, base, valid, S::load_elems(src, base, valid));
    }
  }
}

// Whether every address in p[0..n) and extra is 16-byte aligned.
__device__ __forceinline__ bool all_aligned16(const uint64_t* p, uint32_t n, uint64_t extra) {
  uint64_t bits = extra;
  for (uint32_t r = 0; r < n; ++r) bits |= p[r];
  return (bits & (ARTEST_SLOT_BYTES - 1)) == 0;
}

}  // namespace artest
#endif  // __CUDACC__
