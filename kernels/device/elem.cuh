// Device code every kernel shares below the protocol: element traits and
// the operators on float, the inline-PTX loads and stores (of peer data, and
// of the system-scope flags the signal protocol is built on), the global
// timer, the sm_90 bulk copies and mbarriers, and the macro that
// instantiates a kernel for every dtype and op.
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

// ---------------------------------------------------------------------------
// Bulk copies (the Hopper bulk-copy engine, sm_90 and newer): one
// instruction moves a whole 16-byte-aligned run of bytes between global and
// shared memory, without passing it through registers. They run in the
// async proxy, so memory this thread or its peers reached through ordinary
// loads and stores (the generic proxy) needs fence_proxy_async() between
// the two. Every address must be 16-byte aligned and every size a
// multiple of 16 bytes.
//
// ARTEST_HAS_BULK_COPY is 1 in the compilation passes that have them (the
// fatbin's sm_90 code and compute_90 PTX) and 0 elsewhere (sm_80, the host
// pass). Below sm_90 the wrappers hold no instruction and trap: a kernel
// must test ARTEST_HAS_BULK_COPY and not reach them there.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define ARTEST_HAS_BULK_COPY 1
#else
#define ARTEST_HAS_BULK_COPY 0
#endif

// Initialises the mbarrier (an 8-byte word in shared memory at .shared
// address bar) to expect `count` arrivals per phase, in phase 0.
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
#if ARTEST_HAS_BULK_COPY
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
#else
  (void)bar;
  (void)count;
  __trap();
#endif
}

// A bidirectional proxy fence over all state spaces: this thread's
// earlier generic-proxy accesses (and what it acquired from other threads
// and peers through them) are ordered before its later async-proxy ones
// (bulk copies, an mbarrier's transaction count), and the reverse.
__device__ __forceinline__ void fence_proxy_async() {
#if ARTEST_HAS_BULK_COPY
  asm volatile("fence.proxy.async;" ::: "memory");
#else
  __trap();
#endif
}

// Arrives once on the mbarrier at bar and raises the bytes its current
// phase waits for by `bytes` (expect-tx): the phase completes when every
// arrival has come and bulk copies have delivered that many bytes to it
// (complete-tx).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#if ARTEST_HAS_BULK_COPY
  // The arrival's state token (for mbarrier.test_wait) is not needed: the
  // waits here go by phase parity.
  asm volatile(
      "{\n\t.reg .b64 state;\n\t"
      "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}" ::"r"(bar),
      "r"(bytes)
      : "memory");
#else
  (void)bar;
  (void)bytes;
  __trap();
#endif
}

// Whether the phase of the mbarrier at bar with parity `parity` (0 for
// phases 0, 2, 4, ...; 1 for 1, 3, ...) has completed. The try form may
// suspend the thread for a while (a hardware time limit) before it answers
// false, so a loop on it does not spin hot. Completion makes the bulk
// copies' writes to shared memory visible to this thread.
__device__ __forceinline__ bool mbar_try_wait_parity(uint32_t bar, uint32_t parity) {
#if ARTEST_HAS_BULK_COPY
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
#else
  (void)bar;
  (void)parity;
  __trap();
  return false;
#endif
}

// Waits until the phase of the mbarrier at bar with parity `parity` has
// completed (mbar_try_wait_parity in a loop).
__device__ __forceinline__ void mbar_wait_parity(uint32_t bar, uint32_t parity) {
  while (!mbar_try_wait_parity(bar, parity)) {
  }
}

// Starts a bulk copy of `bytes` from global memory at src (a peer's buffer
// through its IPC mapping: generic and global addresses coincide for
// global memory) into this block's shared memory at .shared address dst;
// on arrival the copy completes `bytes` of the transaction count of the
// mbarrier at bar. This block's own shared memory is a valid
// shared::cluster address (a launch without clusters is a cluster of one).
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
#if ARTEST_HAS_BULK_COPY
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#else
  (void)dst;
  (void)src;
  (void)bytes;
  (void)bar;
  __trap();
#endif
}

// Starts a bulk copy of `bytes` from this block's shared memory at .shared
// address src into global memory at dst. It joins this thread's current
// bulk group (bulk_commit closes the group; bulk_wait_read and
// bulk_wait_all wait for groups).
__device__ __forceinline__ void bulk_store(void* dst, uint32_t src, uint32_t bytes) {
#if ARTEST_HAS_BULK_COPY
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(bytes)
               : "memory");
#else
  (void)dst;
  (void)src;
  (void)bytes;
  __trap();
#endif
}

// Closes the bulk group of the bulk stores this thread issued since the
// last commit.
__device__ __forceinline__ void bulk_commit() {
#if ARTEST_HAS_BULK_COPY
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#else
  __trap();
#endif
}

// Waits until every committed bulk group of this thread has finished
// reading its shared-memory source (the writes to global memory may still
// be in flight): after it, that shared memory may be overwritten.
__device__ __forceinline__ void bulk_wait_read() {
#if ARTEST_HAS_BULK_COPY
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
#else
  __trap();
#endif
}

// Waits until every committed bulk group of this thread has completed,
// its writes to global memory included.
__device__ __forceinline__ void bulk_wait_all() {
#if ARTEST_HAS_BULK_COPY
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
  __trap();
#endif
}

// Bytes of dynamic shared memory this launch was given.
__device__ __forceinline__ uint32_t dynamic_smem_size() {
  uint32_t n;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
  return n;
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
