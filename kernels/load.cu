// artest_load: the straggler schedule's side load on the cuda backend
// (backend.Straggler). Launched on a side stream beside one rank's
// allreduce, every thread streams 16-byte read-modify-writes over a
// scratch buffer larger than L2 until ns nanoseconds of the global timer
// have passed, so the allreduce's blocks share issue slots, load/store
// units and memory bandwidth with it and read slowly: a straggler made
// from outside the kernel under test. Bounded by ARTEST_LOAD_MAX_NS
// whatever the host asks, and it waits on nothing, so it always ends.
#include "common.cuh"

// The kernel's one parameter, by value; its Go twin is kernels.LoadArgs.
struct ArtestLoadArgs {
  uint64_t buf;    // scratch, bytes long, 16-byte aligned
  uint64_t bytes;  // a multiple of 16
  uint64_t ns;     // how long to load
};

static_assert(sizeof(ArtestLoadArgs) == 24, "ArtestLoadArgs changed: change kernels.LoadArgs with it");

// The longest load (kernels.LoadMax): 10 ms, far above the straggler's
// 200 us, short enough that a bad argument cannot hold a GPU for long.
constexpr uint64_t ARTEST_LOAD_MAX_NS = 10000000ull;

// Threads per block (kernels.LoadThreads).
constexpr int ARTEST_LOAD_THREADS = 512;

extern "C" __global__ void __launch_bounds__(ARTEST_LOAD_THREADS) artest_load(const __grid_constant__ ArtestLoadArgs args) {
  const uint64_t ns = args.ns < ARTEST_LOAD_MAX_NS ? args.ns : ARTEST_LOAD_MAX_NS;
  const uint64_t vecs = args.bytes / 16;
  if (vecs == 0) return;
  uint4* v = reinterpret_cast<uint4*>(args.buf);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= vecs) return;
  const uint64_t start = artest::global_timer_ns();
  for (;;) {
    // 8 vectors between timer reads: the timer read costs about as much
    // as one load, and the load's length need not be exact.
    for (int k = 0; k < 8; k++) {
      i = i + stride < vecs ? i + stride : i % stride;
      uint4 x = v[i];
      x.x += 1u;
      v[i] = x;
    }
    if (artest::global_timer_ns() - start >= ns) return;
  }
}
