// artest_load: the straggler schedule's side load on the cuda backend
// (backend.Straggler). Forked onto a side stream beside one rank's
// allreduce, every thread streams 16-byte read-modify-writes over a
// scratch buffer larger than L2 until a deadline of the global timer, so
// the allreduce's blocks share issue slots, load/store units and memory
// bandwidth with it and read slowly: a straggler made from outside the
// kernel under test.
//
// The deadline is the first block's start plus ns (at most
// ARTEST_LOAD_MAX_NS), shared through the scratch's first word, which the
// host zeroes before each launch: blocks that find no room until later
// (ranks sharing a GPU whose other ranks' blocks spin at a barrier) exit at
// once instead of running ns each. Small blocks (ARTEST_LOAD_THREADS) fit
// into the room one allreduce block leaves. It waits on nothing, so it
// always ends.
#include "device/common.cuh"

// The kernel's one parameter, by value; its Go twin is kernels.LoadArgs.
struct ArtestLoadArgs {
  uint64_t buf;    // scratch: the deadline word, then the streamed bytes
  uint64_t bytes;  // of the whole scratch, a multiple of 16
  uint64_t ns;     // how long to load
};

static_assert(sizeof(ArtestLoadArgs) == 24, "ArtestLoadArgs changed: change kernels.LoadArgs with it");

// The longest load (kernels.LoadMax): 10 ms, far above the straggler's
// 200 us, short enough that a bad argument cannot hold a GPU for long.
constexpr uint64_t ARTEST_LOAD_MAX_NS = 10000000ull;

// Threads per block (kernels.LoadThreads).
constexpr int ARTEST_LOAD_THREADS = 64;

// Bytes before the streamed region: the deadline word, padded to 16.
constexpr uint64_t ARTEST_LOAD_HEAD = 16;

extern "C" __global__ void __launch_bounds__(ARTEST_LOAD_THREADS) artest_load(const __grid_constant__ ArtestLoadArgs args) {
  __shared__ uint64_t deadline;
  if (threadIdx.x == 0) {
    const uint64_t ns = args.ns < ARTEST_LOAD_MAX_NS ? args.ns : ARTEST_LOAD_MAX_NS;
    const unsigned long long want = artest::global_timer_ns() + ns;
    const unsigned long long was = atomicCAS(reinterpret_cast<unsigned long long*>(args.buf), 0ull, want);
    deadline = was == 0 ? want : was;
  }
  __syncthreads();
  const uint64_t vecs = args.bytes > ARTEST_LOAD_HEAD ? (args.bytes - ARTEST_LOAD_HEAD) / 16 : 0;
  uint4* v = reinterpret_cast<uint4*>(args.buf + ARTEST_LOAD_HEAD);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= vecs) return;
  while (artest::global_timer_ns() < deadline) {
    // 8 vectors between timer reads: the timer read costs about as much
    // as one load, and the load's length need not be exact.
    for (int k = 0; k < 8; k++) {
      i = i + stride < vecs ? i + stride : i % stride;
      uint4 x = v[i];
      x.x += 1u;
      v[i] = x;
    }
  }
}
