// What every custom allreduce kernel shares: the launch argument ABI (the Go
// twin is kernels.Args in kernels/abi.go), dtype and op numbers (as in
// reference/types.go), the grid formula the host must use, and, for device
// code, element traits, 16-byte slot access, and the signal barrier.
//
// The ABI part at the top is plain C++ so that kernels/abi_test.go can
// compile it with a host compiler; everything CUDA-specific is further down,
// behind __CUDACC__.
#pragma once

#include <stdint.h>

#include "signal.cuh"

// ---------------------------------------------------------------------------
// Launch arguments. One struct, passed by value as the kernel's only
// parameter; the host hands cuLaunchKernel a pointer to these bytes. Natural
// alignment only (no padding is needed anywhere: the ABI test checks every
// offset against unsafe.Offsetof on kernels.Args).
struct ArtestArgs {
  uint64_t peer_in[SIG_MAX_RANKS];      // rank r's input (at the case's offset)
  uint64_t peer_stage[SIG_MAX_RANKS];   // rank r's staging buffer
  uint64_t peer_signal[SIG_MAX_RANKS];  // rank r's SignalBlock
  uint64_t out;                         // this rank's output (== peer_in[rank] in place)
  uint64_t count;                       // elements
  uint32_t rank;
  uint32_t nranks;
  uint32_t inject;      // INJECT_* bits
  uint32_t delay_rank;  // rank that sleeps under INJECT_DELAY
  uint64_t delay_ns;
  uint32_t variant_id;  // written to the trace word at the end of the launch
  uint32_t flags;       // FLAG_* bits
  uint64_t stage_bytes; // capacity of each staging buffer
  uint32_t param0;      // variant-specific: see the variant's registry entry
  uint32_t param1;
  uint32_t param2;
  uint32_t param3;
  // Device-side deadline of every wait in the launch, from the wait's first
  // failed poll (0: wait for ever). A block that waits longer records where
  // in the SIG_DIAG_* words and exits; see barrier().
  uint64_t wait_timeout_ns;
  // Launch tags (kernels.Args says how the host computes them): what this
  // launch expects in the high word of peer p's barrier flags, and what it
  // stores in the high word of its own. See barrier().
  uint32_t peer_tag[SIG_MAX_RANKS];
  uint32_t self_tag;
  uint32_t spare;  // keeps the size a multiple of 8 without implicit padding
};

static_assert(sizeof(ArtestArgs) == 536, "ArtestArgs changed: change kernels.Args with it");

// Flags bits.
constexpr uint32_t FLAG_IN_PLACE = 1u << 0;  // out == peer_in[rank]

// Fault switches, compiled into every kernel and flipped at run time, so the
// suite can show that each protection is needed.
constexpr uint32_t INJECT_NO_END_BARRIER = 1u << 0;
constexpr uint32_t INJECT_NO_START_BARRIER = 1u << 1;
constexpr uint32_t INJECT_DELAY = 1u << 2;      // delay_rank sleeps delay_ns after the start barrier
constexpr uint32_t INJECT_SKIP_LAST = 1u << 3;  // element count-1 of out is not written
constexpr uint32_t INJECT_OVERRUN = 1u << 4;    // element count of out (one past the end) is written
constexpr uint32_t INJECT_NO_MID_BARRIER = 1u << 5;
constexpr uint32_t INJECT_NO_CREDIT_WAIT = 1u << 6;  // ring only; other kernels ignore it
constexpr uint32_t INJECT_LL_NO_FLAG = 1u << 12;  // oneshot-ll: a slot is used without its sequence
constexpr uint32_t INJECT_PDL_NO_WAIT = 1u << 7;     // pdl_wait is skipped: the input is read before the producer wrote it

// Element types and operators, numbered as reference.DType and reference.Op.
constexpr uint32_t DTYPE_F32 = 0u;
constexpr uint32_t DTYPE_F16 = 1u;
constexpr uint32_t DTYPE_BF16 = 2u;
constexpr uint32_t OP_SUM = 0u;
constexpr uint32_t OP_MAX = 1u;
constexpr uint32_t OP_MIN = 2u;

// Data moves in slots of 16 bytes: 4 f32 or 8 f16/bf16 elements. Slot k is
// elements [k*W, min(k*W+W, count)) with W = ARTEST_SLOT_BYTES / element size;
// only the last slot can be partial.
constexpr uint32_t ARTEST_SLOT_BYTES = 16u;

// ---------------------------------------------------------------------------
// Grid size: what the host must launch (the Go side, kernels.GridBlocks,
// must compute the same numbers). Every rank of one launch must use the same gridDim.x and
// blockDim.x, because barrier flags are per block and a block's barrier
// covers exactly the slots that the same-numbered block of every peer owns.
// The formulas depend only on count, the element size, nranks and the
// registry's limits, so every rank computes the same grid.
//
//   W        = 16 / element size
//   oneshot: slots = ceil(count / W)
//   twoshot: C     = roundup(ceil(count / nranks), W)   (chunk, in elements)
//            slots = C / W                              (slots per chunk)
//   blocks   = min(max_blocks, SIG_MAX_BLOCKS, max(1, ceil(slots / threads)))
//
// with max_blocks the registry's Blocks and threads its Threads. Threads must
// be a multiple of 32, at least nranks and at most ARTEST_MAX_THREADS. Any
// grid within those limits gives correct results (the kernels grid-stride
// over slots); the formula only avoids launching blocks that would find no
// slot.
//
// The kernels' __launch_bounds__: up to 128 registers a thread, which the
// 16-byte paths with 8 peer loads in flight need (at 1024 threads the cap
// of 64 made ptxas spill).
constexpr uint32_t ARTEST_MAX_THREADS = 512u;

ARTEST_HD constexpr uint64_t artest_ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

ARTEST_HD constexpr uint32_t artest_clamp_blocks(uint64_t slots, uint32_t threads, uint32_t max_blocks) {
  uint64_t want = artest_ceil_div(slots, threads);
  uint64_t cap = max_blocks < SIG_MAX_BLOCKS ? max_blocks : SIG_MAX_BLOCKS;
  if (want > cap) want = cap;
  if (want < 1) want = 1;
  return static_cast<uint32_t>(want);
}

// Elements of one twoshot chunk: a whole number of slots, so a slot never
// straddles two chunks and chunk starts keep 16-byte alignment.
ARTEST_HD constexpr uint64_t artest_twoshot_chunk(uint64_t count, uint32_t nranks, uint32_t elem_bytes) {
  return artest_ceil_div(artest_ceil_div(count, nranks), ARTEST_SLOT_BYTES / elem_bytes) *
         (ARTEST_SLOT_BYTES / elem_bytes);
}

#if defined(__CUDACC__)
// ---------------------------------------------------------------------------
// Device code.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace artest {

// Element traits: raw bits (what loads and stores move) and the exact
// conversions to and from float. 16-bit types are reduced in float and
// rounded back once, to nearest even.
template <typename T>
struct Elem;

template <>
struct Elem<float> {
  using Bits = uint32_t;
  static constexpr uint32_t kDType = DTYPE_F32;
  static __device__ __forceinline__ float to_float(Bits b) { return __uint_as_float(b); }
  static __device__ __forceinline__ Bits from_float(float f) { return __float_as_uint(f); }
};

template <>
struct Elem<__half> {
  using Bits = uint16_t;
  static constexpr uint32_t kDType = DTYPE_F16;
  static __device__ __forceinline__ float to_float(Bits b) { return __half2float(__ushort_as_half(b)); }
  static __device__ __forceinline__ Bits from_float(float f) { return __half_as_ushort(__float2half_rn(f)); }
};

template <>
struct Elem<__nv_bfloat16> {
  using Bits = uint16_t;
  static constexpr uint32_t kDType = DTYPE_BF16;
  static __device__ __forceinline__ float to_float(Bits b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
  static __device__ __forceinline__ Bits from_float(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
};

// Operators on float. __fadd_rn keeps the sum a single IEEE round-to-nearest
// add that the compiler may not contract or reassociate. fmaxf/fminf return
// the other operand when one is NaN.
template <uint32_t OP>
struct Op;

template <>
struct Op<OP_SUM> {
  static __device__ __forceinline__ float apply(float acc, float x) { return __fadd_rn(acc, x); }
};
template <>
struct Op<OP_MAX> {
  static __device__ __forceinline__ float apply(float acc, float x) { return fmaxf(acc, x); }
};
template <>
struct Op<OP_MIN> {
  static __device__ __forceinline__ float apply(float acc, float x) { return fminf(acc, x); }
};

// ---------------------------------------------------------------------------
// Memory access. All of it is inline PTX with a "memory" clobber, so the
// compiler can neither hoist a peer load above a barrier nor sink a store
// below one.
//
// Peer data needs no ordering of its own: every read of it follows the
// acquire of the barrier that published it, which is what makes it visible
// (see barrier()). The loads carry ".cg" (cache in L2, not in L1): each slot
// is read once, so L1 has nothing to offer, and nothing stale can sit there.
// ptxas makes them LDG.E.128.STRONG.GPU on sm_90; plain weak ld.global
// measured the same on two H200s.

__device__ __forceinline__ uint4 ld_slot_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

__device__ __forceinline__ void st_slot_v4(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

__device__ __forceinline__ uint32_t ld_elem(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint16_t ld_elem(const uint16_t* p) {
  uint16_t v;
  asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void st_elem(uint32_t* p, uint32_t v) {
  asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void st_elem(uint16_t* p, uint16_t v) {
  asm volatile("st.global.u16 [%0], %1;" ::"l"(p), "h"(v) : "memory");
}

// A release store and an acquire load at system scope: the flag protocol
// between GPUs (and the host backend's model of it) is built on these two.
__device__ __forceinline__ void st_release_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Relaxed (strong, not ordering) twins: a flag that only says "arrived"
// and publishes no data written in this launch needs no fence (see Sync).
__device__ __forceinline__ void st_relaxed_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t ld_relaxed_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The 64-bit twins, for the barrier flags and epoch words: the launch tag
// (or the claim) travels in the same single access as the epoch.
__device__ __forceinline__ void st_release_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void st_relaxed_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t ld_relaxed_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Loads a flag (32 or 64 bits) with acquire (kAcquire) or relaxed semantics.
template <bool kAcquire, typename W>
__device__ __forceinline__ W ld_flag_sys(const W* p) {
  return kAcquire ? ld_acquire_sys(p) : ld_relaxed_sys(p);
}

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

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

// ---------------------------------------------------------------------------
// Launch checks: a host that breaks the launch contract gets a trapped
// kernel (a loud launch error) instead of silent corruption or a hang that
// looks like a protocol bug. Every condition is uniform across the grid.
__device__ __forceinline__ void check_launch(const ArtestArgs& a, uint64_t stage_elems_needed, uint32_t elem_bytes) {
  const bool bad = a.nranks == 0 || a.nranks > SIG_MAX_RANKS || a.rank >= a.nranks ||
                   gridDim.x > SIG_MAX_BLOCKS || blockDim.x < a.nranks || gridDim.y != 1 || gridDim.z != 1 ||
                   blockDim.y != 1 || blockDim.z != 1 || stage_elems_needed * elem_bytes > a.stage_bytes;
  if (bad) __trap();
}

// ---------------------------------------------------------------------------
// Giving up (the device-side deadline, --device-timeout).
//
// Records a give-up in the diag words of the rank's own SignalBlock (sig):
// the first give-up of the rank claims them (atomicCAS on SIG_DIAG_STATE),
// writes the fields, and publishes them with a release store of
// SIG_DIAG_GAVE_UP, so a host that sees that value sees every field. Later
// give-ups (other blocks timing out after it) leave the record alone.
__device__ __forceinline__ void record_give_up(uint64_t sig, uint32_t variant, uint32_t rank, uint32_t kind,
                                               uint32_t where, uint32_t peer, uint32_t want, uint32_t seen,
                                               uint32_t lane, uint64_t timeout_ns) {
  uint32_t* const d = reinterpret_cast<uint32_t*>(sig + SIG_OFF_DIAG);
  if (atomicCAS(reinterpret_cast<unsigned int*>(d + SIG_DIAG_STATE), 0u, SIG_DIAG_CLAIMED) != 0u) return;
  // Milliseconds through float (saturating conversion), not a 64-bit
  // division: that inlines a long sequence whose registers made ptxas spill
  // in multimem's f32 kernel. float's 24 bits are ample at ms resolution.
  const uint32_t timeout_ms = __float2uint_rz(__ull2float_rz(timeout_ns) * 1e-6f);
  d[SIG_DIAG_VARIANT] = variant;
  d[SIG_DIAG_BLOCK] = blockIdx.x;
  d[SIG_DIAG_KIND] = kind;
  d[SIG_DIAG_WHERE] = where;
  d[SIG_DIAG_PEER] = peer;
  d[SIG_DIAG_WANT] = want;
  d[SIG_DIAG_SEEN] = seen;
  d[SIG_DIAG_WAITED_MS] = timeout_ms;  // a wait gives up at its first poll past the deadline
  d[SIG_DIAG_LANE] = lane;
  d[SIG_DIAG_RANK] = rank;
  d[SIG_DIAG_TIMEOUT_MS] = timeout_ms;
  st_release_sys(d + SIG_DIAG_STATE, SIG_DIAG_GAVE_UP);
}

// ---------------------------------------------------------------------------
// Epochs. Block b of every launch uses e = Epoch[b] + 1 for all its barriers
// and stores e back at the end: flags are never reset, so a flag left from an
// earlier launch (or graph replay) is always behind the current e. Epoch[b]
// is only touched by this rank's block b, and launches on one stream run one
// after another, so the kernel boundary orders them. Every rank launches the
// same grids in the same order, so block b's counter is equal on every rank
// at every launch.
//
// Claim (against two launches in flight on one SignalBlock, e.g. on two
// streams): the epoch word is 64 bits, the epoch low and a claim high.
// epoch_begin reads the epoch with one atomicOr that also sets the claim (no
// extra access: the atomic is the read), and epoch_end's plain 64-bit store
// of e clears it in the same store that publishes the epoch, so both travel
// in one word and need no fence. A launch that finds the claim
// already set shares block b's state (epoch, flags) with another launch of
// this rank still in flight, typically an allreduce on a second stream: its
// block records SIG_DIAG_KIND_CLAIMED and exits before touching any flag,
// and the launch holding the claim runs on. (A block that gave up and
// exited leaves its claim set, like its epoch: nothing after a give-up is
// trusted; the runner ends the job.) The atomic is device scope: only
// launches on this GPU share this rank's epoch words.
__device__ __forceinline__ uint64_t* epoch_word(const ArtestArgs& a) {
  return reinterpret_cast<uint64_t*>(a.peer_signal[a.rank] + sig_epoch_offset(blockIdx.x));
}

__device__ __forceinline__ uint32_t epoch_begin(const ArtestArgs& a) {
  __shared__ uint32_t s_epoch;
  bool held = false;
  if (threadIdx.x == 0) {
#if defined(ARTEST_EXPERIMENT_NO_CLAIM)
    // Measurement only (gpu.sh's claim-cost step builds a second fatbin
    // with this): a plain load instead of the claiming atomic, to price it.
    const uint64_t old = *reinterpret_cast<volatile uint64_t*>(epoch_word(a));
#else
    const uint64_t old = atomicOr(reinterpret_cast<unsigned long long*>(epoch_word(a)),
                                  static_cast<unsigned long long>(SIG_EPOCH_CLAIM) << 32);
#endif
    s_epoch = static_cast<uint32_t>(old) + 1;
    held = (old >> 32) != 0;
    if (held) {
      record_give_up(a.peer_signal[a.rank], a.variant_id, a.rank, SIG_DIAG_KIND_CLAIMED, 0, a.rank, s_epoch,
                     static_cast<uint32_t>(old >> 32), blockIdx.x, a.wait_timeout_ns);
    }
  }
  // Replaces the plain __syncthreads() one for one (see barrier()).
  if (__syncthreads_or(held)) asm volatile("exit;");
  return s_epoch;
}

// Called once per block after its last barrier and last access to peers.
// Block 0 also writes the trace word, read by the host once the stream is
// done, so it proves which kernel ran and how often.
__device__ __forceinline__ void epoch_end(const ArtestArgs& a, uint32_t e) {
  if (threadIdx.x != 0) return;
  *epoch_word(a) = e;  // the epoch, and a zero claim
  if (blockIdx.x == 0) {
    const uint64_t sig = a.peer_signal[a.rank];
    *reinterpret_cast<uint32_t*>(sig + SIG_OFF_TRACE_VARIANT) = a.variant_id;
    atomicAdd(reinterpret_cast<unsigned int*>(sig + SIG_OFF_TRACE_COUNT), 1u);
  }
}

// ---------------------------------------------------------------------------
// The barrier of phase ph for this block, at epoch e.
//
// Thread t < nranks tells peer t that this block has reached ph (a release
// store of e into peer t's flag [ph][block][my rank]) and then waits until
// peer t has told us the same (our own flag [ph][block][t] reaches e, acquire).
//
// Launch tags: the flag is 64 bits, e in the low half and this
// launch's self_tag in the high half, stored as one access, so the tag
// needs no ordering of its own: a peer that sees e sees the tag that came
// with it. Once peer t's flag holds exactly e, its tag must be peer_tag[t],
// what this rank computed for the same call on the buffers it holds of
// peer t (kernels.Args): otherwise peer t launched another call (size,
// variant, grid, parameters) or its buffers are not the ones this launch
// points at (a graph replayed after it re-registered them), and the block
// records SIG_DIAG_KIND_TAG_MISMATCH and exits like a timed-out one. The
// fast path is unchanged but for the width: one 64-bit compare of the
// first poll against (peer_tag[t], e); anything else (not arrived, ahead,
// another tag) goes to barrier_slow.
//
// Why the other threads' data is covered: the leading __syncthreads()
// (bar.sync) orders every write and read of the block before the release
// store of each thread t, and PTX releases are cumulative: the release covers
// all memory operations that precede it in causality order, which includes
// other threads' operations ordered by bar.sync. The peer's acquire then
// synchronizes with that release, and its own bar.sync passes the ordering
// to every thread of its block. So no __threadfence_system() is needed: it
// would add a second system-scope fence to every barrier for nothing the
// release does not already give.
//
// Backoff: the first poll is immediate (small messages are latency-bound);
// then __nanosleep from 32 ns doubling to a 128 ns cap (the sleep is a hint:
// the hardware may sleep from 0 to about twice the value). On two H200s a
// 1024 ns cap cost 0.5 to 1.5 us per launch from 64 KiB to 1 MiB, while 128 ns
// was as fast as a pure spin; the poll is a local load by one warp per block,
// so the short sleep costs nothing measurable.
//
// Deadline: when a.wait_timeout_ns != 0, a thread whose wait has
// lasted longer than that since its first failed poll gives up: it records
// where in the rank's SIG_DIAG_* words (record_give_up) and the whole block
// exits, so a lost peer cannot hang the GPU for ever. The trailing block
// barrier is __syncthreads_or(gave_up) (bar.red.or): every thread of the
// block reaches it (the non-waiting threads go there directly), and it
// tells each of them whether any waiter gave up, so all exit together and
// no thread is left at a bar.sync that the exited ones never reach. It
// replaces the plain __syncthreads() one for one and needs no shared flag
// (which would need initialising). The fast path (first poll succeeds)
// never reads the clock. wait_slow and record_give_up are inlined: as
// out-of-line calls they cost up to 50 more registers a thread and a stack
// frame (the call ABI keeps everything live across the call in saved
// registers, and the out-parameters went to local memory).
//
// Exiting mid-kernel is safe in every family: no block reaches a barrier
// with cp.async copies in flight (oneshot_cpasync waits for all of them
// before its mid and end barriers, and issues none before its start
// barrier). A block that exits leaves its epoch and the ring's Head behind,
// so the launches queued after it are not trusted: the runner ends the job
// (exit 3) at its next stream sync, or its watchdog does.
//
// Sync: what a barrier's flag carries. kPublish (release store, acquire
// poll) makes data this launch wrote before the barrier visible to the
// peers after it: twoshot's staging at its mid barrier, multimem's stores.
// kArrive (relaxed store and poll) only says "this block got here": the
// start barrier (the inputs were written before the launch, so the stream
// order, not the flag, orders them; peers read them with .cg loads, which
// cannot hit a stale L1 line) and the barriers that say "done reading your
// memory" (end, and oneshot's in-place mid): a block's peer loads have
// returned their values before bar.sync lets its flag store issue, so no
// later write to that memory can reach them. A release store is a
// MEMBAR.SYS, which waits until every earlier write of the thread is
// acknowledged system-wide; kArrive saves that on two of the three
// barriers. (vLLM's custom allreduce makes the same split.)
enum class Sync : uint32_t { kArrive = 0, kPublish = 1 };

constexpr uint32_t kBackoffMinNs = 32;
constexpr uint32_t kBackoffMaxNs = 128;

// The slow path of a wait on *word reaching want, after a failed first
// poll: backoff from min_ns doubling to max_ns, and a deadline timeout_ns
// from here on %globaltimer (read once per poll, only in this path; 0: no
// deadline, kept as a deadline that never comes, so the loop has one test
// and one 64-bit value live). Returns false once the word has reached want,
// true after giving up. The caller records the give-up: the word's value is
// read again then, and the time waited is the deadline (the poll interval,
// under a microsecond, is below the diag word's millisecond resolution).
// Returning nothing else keeps registers free: carrying seen and waited out
// of the loop made ptxas spill in multimem's f32 kernel.
// The word is 32 bits (ring sequences and credits) or 64 (barrier flags,
// whose low half is the epoch). The loop itself is wait_until's, which
// oneshot-ll's LL slots use with their own test.
template <typename Ready>
__device__ __forceinline__ bool wait_until(Ready ready, uint64_t timeout_ns, uint32_t min_ns, uint32_t max_ns) {
  const uint64_t deadline = timeout_ns != 0 ? global_timer_ns() + timeout_ns : ~uint64_t{0};
  uint32_t sleep_ns = min_ns;
  for (;;) {
    __nanosleep(sleep_ns);
    if (sleep_ns < max_ns) sleep_ns *= 2;
    if (ready()) return false;
    if (global_timer_ns() > deadline) return true;
  }
}

template <bool kAcquire = true, typename W = uint32_t>
__device__ __forceinline__ bool wait_slow(const W* word, uint32_t want, uint64_t timeout_ns, uint32_t min_ns,
                                          uint32_t max_ns) {
  return wait_until([&] { return sig_reached(static_cast<uint32_t>(ld_flag_sys<kAcquire>(word)), want); }, timeout_ns,
                    min_ns, max_ns);
}

// The barrier's slow path for thread t, whose first poll of peer t's flag
// (mine) read seen, not exactly (peer_tag[t], e): wait until the epoch
// half reaches e (or give up at the deadline), then check the tag of a
// flag of exactly this epoch. A flag ahead of e belongs to the peer's next
// launch (or a skipped barrier under fault injection): its tag is not
// this launch's and is not checked. Returns true after recording a
// give-up.
template <bool kOrdered>
__device__ __forceinline__ bool barrier_slow(const ArtestArgs& a, const uint64_t* mine, uint32_t ph, uint32_t t,
                                             uint32_t e, uint64_t seen) {
  if (!sig_reached(static_cast<uint32_t>(seen), e)) {
    if (wait_slow<kOrdered>(mine, e, a.wait_timeout_ns, kBackoffMinNs, kBackoffMaxNs)) {
      record_give_up(a.peer_signal[a.rank], a.variant_id, a.rank, SIG_DIAG_KIND_BARRIER, ph, t, e,
                     static_cast<uint32_t>(ld_relaxed_sys(mine)), blockIdx.x, a.wait_timeout_ns);
      return true;
    }
    seen = ld_flag_sys<kOrdered>(mine);
  }
  const uint32_t tag = static_cast<uint32_t>(seen >> 32);
  if (static_cast<uint32_t>(seen) == e && tag != a.peer_tag[t]) {
    record_give_up(a.peer_signal[a.rank], a.variant_id, a.rank, SIG_DIAG_KIND_TAG_MISMATCH, ph, t, a.peer_tag[t], tag,
                   blockIdx.x, a.wait_timeout_ns);
    return true;
  }
  return false;
}

template <Sync kSync = Sync::kPublish>
__device__ __forceinline__ void barrier(const ArtestArgs& a, uint32_t ph, uint32_t e) {
  constexpr bool kOrdered = kSync == Sync::kPublish;
  __syncthreads();
  const uint32_t t = threadIdx.x;
  bool gave_up = false;
  if (t < a.nranks) {
    uint64_t* const theirs = reinterpret_cast<uint64_t*>(a.peer_signal[t] + sig_flag_offset(ph, blockIdx.x, a.rank));
    const uint64_t arrived = sig_flag_value(a.self_tag, e);
    if (kOrdered) {
      st_release_sys(theirs, arrived);
    } else {
      st_relaxed_sys(theirs, arrived);
    }
    const uint64_t* mine =
        reinterpret_cast<const uint64_t*>(a.peer_signal[a.rank] + sig_flag_offset(ph, blockIdx.x, t));
    const uint64_t seen = ld_flag_sys<kOrdered>(mine);
    if (seen != sig_flag_value(a.peer_tag[t], e)) gave_up = barrier_slow<kOrdered>(a, mine, ph, t, e, seen);
  }
  // Every thread of the block is here; if any waiter gave up, all leave.
  if (__syncthreads_or(gave_up)) asm volatile("exit;");
}

// INJECT_DELAY: rank delay_rank holds every block for delay_ns right after
// the start barrier, so peers that do not wait for it read stale data.
__device__ __forceinline__ void inject_delay(const ArtestArgs& a) {
  if ((a.inject & INJECT_DELAY) == 0 || a.rank != a.delay_rank) return;
  if (threadIdx.x == 0) {
    const uint64_t start = global_timer_ns();
    for (;;) {
      const uint64_t waited = global_timer_ns() - start;
      if (waited >= a.delay_ns) break;
      const uint64_t left = a.delay_ns - waited;
      __nanosleep(left < 1000 ? static_cast<uint32_t>(left) : 1000u);
    }
  }
  __syncthreads();
}

// Programmatic dependent launch (--pdl, sm_90; kernels/pdl.cu is the
// producer): the allreduce may start while the kernel before it in the
// stream still writes this rank's input. griddepcontrol.wait blocks until
// that kernel has completed and its writes are visible, so it must come
// before the first read of any input and before the start barrier's flag
// store, which tells peers our input is ready: every family's run() calls
// this first. Without PDL it returns at once. INJECT_PDL_NO_WAIT skips it,
// and the poison the runner wrote into the input before the producer ran
// shows in the output. Below sm_90 (the fatbin's sm_80 code) there is no
// PDL and no instruction.
__device__ __forceinline__ void pdl_wait(const ArtestArgs& a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if ((a.inject & INJECT_PDL_NO_WAIT) == 0) asm volatile("griddepcontrol.wait;" ::: "memory");
#else
  (void)a;
#endif
}

}  // namespace artest

// Instantiates kernel macro K(dtype name, C type, op name, op number) for
// every dtype and op, in the naming scheme artest_<variant>_<dtype>_<op>.
#define ARTEST_FOR_EACH_DTYPE_OP(K)   \
  K(f32, float, sum, OP_SUM)          \
  K(f32, float, max, OP_MAX)          \
  K(f32, float, min, OP_MIN)          \
  K(f16, __half, sum, OP_SUM)         \
  K(f16, __half, max, OP_MAX)         \
  K(f16, __half, min, OP_MIN)         \
  K(bf16, __nv_bfloat16, sum, OP_SUM) \
  K(bf16, __nv_bfloat16, max, OP_MAX) \
  K(bf16, __nv_bfloat16, min, OP_MIN)

#endif  // __CUDACC__
