// Device code every kernel shares below the protocol: element traits and
// the operators on float, the inline-PTX loads and stores (of peer data, and
// of the system-scope flags the signal protocol is built on), the global
// timer, and the macro that instantiates a kernel for every dtype and op.
#pragma once

#include <stdint.h>

#include "abi.cuh"

#if defined(__CUDACC__)
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
