// The cp.async pieces of the oneshot-cpasync variant (oneshot_cpasync.cu):
// the pipeline's stage limits, its shared-memory size, and the PTX wrappers
// for asynchronous global-to-shared copies. Kept beside this variant's
// kernel because only it uses them.
//
// cp.async exists from sm_80 on; the fatbin's targets are sm_80 and sm_90,
// so Variant() marks the variant NeedSM80.
#pragma once

#include <stdint.h>

#include "device/grid.cuh"

// Pipeline stages a launch may ask for (Args.param0). The Go twins are
// MinStages and MaxStages (stages.go), the range of --param stages;
// oneshotcpasync_test.go reads these two lines and fails when they differ. Two is the least that
// overlaps anything (one stage loading while one is reduced); past eight,
// the shared memory of one block at 8 ranks x 256 threads (8 x 32 KiB)
// already exceeds sm_90's 227 KiB, so more stages only buy failed launches.
constexpr uint32_t CPASYNC_MIN_STAGES = 2u;
constexpr uint32_t CPASYNC_MAX_STAGES = 8u;

// Dynamic shared memory of one block: per stage, one 16-byte slot per thread
// per rank. The Go twin is SharedBytes (stages.go).
ARTEST_HD constexpr uint64_t artest_cpasync_shared_bytes(uint32_t stages, uint32_t nranks, uint32_t threads) {
  return static_cast<uint64_t>(stages) * nranks * threads * ARTEST_SLOT_BYTES;
}

#if defined(__CUDACC__)
namespace artest {
namespace cpasync {

// One 16-byte asynchronous copy from global memory (a peer's input, through
// its IPC mapping: generic and global addresses coincide for global memory)
// into this block's shared memory at byte address smem (a .shared address,
// from __cvta_generic_to_shared). ".cg" caches in L2 only, like the plain
// one-shot's ld.global.cg: each slot is read once, and nothing stale can sit
// in L1. Both addresses must be 16-byte aligned; callers only copy slots
// that Plan marks fast, which guarantees it.
__device__ __forceinline__ void copy16(uint32_t smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem) : "memory");
}

// Closes the group of copies this thread issued since the last commit. An
// empty group is legal and completes at once, so committing every iteration
// keeps the group count (and wait_group's meaning) uniform.
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most `pending` of this thread's committed groups are still
// in flight (all older ones have landed in shared memory and are visible to
// this thread). cp.async.wait_group takes an immediate, so the run-time stage
// count picks one of eight instructions; the switch is uniform across the
// grid (stages is a launch parameter), so it costs no divergence.
__device__ __forceinline__ void wait_pending(uint32_t pending) {
  switch (pending) {
    case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
  }
  static_assert(CPASYNC_MAX_STAGES - 1 == 7, "wait_pending covers pending counts 0..7");
}

// One 16-byte slot from shared memory (a .shared address). Inline PTX so it
// stays one ld.shared.v4: a plain uint4 load whose words are used one by
// one was split by the compiler into four 32-bit loads, which at a 16-byte
// stride between threads conflict four ways on the banks. The "memory"
// clobber keeps it after the wait_group and barrier that publish the slot.
__device__ __forceinline__ uint4 ld_shared_v4(uint32_t smem) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(smem)
               : "memory");
  return v;
}

// Waits for every copy this thread issued, committed or not.
__device__ __forceinline__ void wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// Bytes of dynamic shared memory this launch was given.
__device__ __forceinline__ uint32_t dynamic_smem_bytes() {
  uint32_t n;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
  return n;
}

}  // namespace cpasync
}  // namespace artest
#endif  // __CUDACC__
