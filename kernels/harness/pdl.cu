// pdl: the producer kernel of --pdl (programmatic dependent launch,
// sm_90). Under --pdl every call is, on this rank's stream:
//
//   1. the runner poisons the input (a copy of a poison image), so that a
//      read of the input before the producer wrote it is visible;
//   2. artest_pdl_fill (this file) writes the call's input: it copies the
//      private source into the registered input buffer;
//   3. the allreduce, launched with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
//      SERIALIZATION = 1: it may start as soon as every block of the
//      producer has executed griddepcontrol.launch_dependents, which they do
//      first thing, so its launch and prologue overlap the producer.
//
// The allreduce must execute griddepcontrol.wait (pdl_wait, sync.cuh)
// before it reads any input or tells its peers that its input is ready;
// INJECT_PDL_NO_WAIT skips that and the case must fail. For that failure to
// show at every size, the producer is slow on purpose, like the GEMM that
// precedes an allreduce in a model: every block first holds for delay_ns,
// then few blocks (kernels.PdlFillBlocks) copy. A consumer that does not
// wait passes its start barrier and reads while the input still holds
// poison.
//
// The producer does not touch the SignalBlock: the trace word still counts
// allreduce launches only.
#include "device/common.cuh"

// The producer's one parameter, by value; its Go twin is kernels.PdlFillArgs
// (pdl_test.go checks size and offsets).
struct ArtestPdlFillArgs {
  uint64_t dst;       // the registered input (at the case's offset)
  uint64_t src;       // the call's input, private memory
  uint64_t bytes;     // message bytes
  uint64_t delay_ns;  // how long every block holds before it copies
};

static_assert(sizeof(ArtestPdlFillArgs) == 32, "ArtestPdlFillArgs changed: change kernels.PdlFillArgs with it");

// The producer's block size (kernels.PdlFillThreads).
constexpr uint32_t ARTEST_PDL_FILL_THREADS = 256u;

namespace artest {
namespace pdl {

// Lets the kernel after this one in the stream, when launched with
// programmatic stream serialization, start before this one ends. Without
// PDL (and below sm_90) it does nothing.
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void hold(uint64_t delay_ns) {
  if (threadIdx.x == 0) {
    const uint64_t start = global_timer_ns();
    for (;;) {
      const uint64_t waited = global_timer_ns() - start;
      if (waited >= delay_ns) break;
      const uint64_t left = delay_ns - waited;
      __nanosleep(left < 1000 ? static_cast<uint32_t>(left) : 1000u);
    }
  }
  __syncthreads();
}

__device__ __forceinline__ void copy_bytes(uint64_t dst, uint64_t src, uint64_t lo, uint64_t hi, uint64_t first,
                                           uint64_t stride) {
  for (uint64_t i = lo + first; i < hi; i += stride) {
    reinterpret_cast<uint8_t*>(dst)[i] = reinterpret_cast<const uint8_t*>(src)[i];
  }
}

__device__ __forceinline__ void fill(const ArtestPdlFillArgs& a) {
  launch_dependents();
  hold(a.delay_ns);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // dst and src sit at the same offset from a 256-byte boundary (both are
  // regions laid out alike), so both reach 16-byte alignment after the
  // same head; otherwise, byte by byte.
  if (((a.dst ^ a.src) & (ARTEST_SLOT_BYTES - 1)) != 0) {
    copy_bytes(a.dst, a.src, 0, a.bytes, first, stride);
    return;
  }
  const uint64_t head_end = (ARTEST_SLOT_BYTES - (a.dst & (ARTEST_SLOT_BYTES - 1))) & (ARTEST_SLOT_BYTES - 1);
  const uint64_t head = head_end < a.bytes ? head_end : a.bytes;
  const uint64_t vecs = (a.bytes - head) / ARTEST_SLOT_BYTES;
  const uint64_t tail = head + vecs * ARTEST_SLOT_BYTES;
  copy_bytes(a.dst, a.src, 0, head, first, stride);
  for (uint64_t k = first; k < vecs; k += stride) {
    st_slot_v4(reinterpret_cast<void*>(a.dst + head + k * ARTEST_SLOT_BYTES),
               ld_slot_v4(reinterpret_cast<const void*>(a.src + head + k * ARTEST_SLOT_BYTES)));
  }
  copy_bytes(a.dst, a.src, tail, a.bytes, first, stride);
}

}  // namespace pdl
}  // namespace artest

extern "C" __global__ void __launch_bounds__(ARTEST_PDL_FILL_THREADS)
    artest_pdl_fill(const __grid_constant__ ArtestPdlFillArgs args) {
  artest::pdl::fill(args);
}
