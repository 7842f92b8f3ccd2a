// artest_compute: bench --overlap's compute load on the cuda backend
// (backend.Overlapper). Forked onto a side stream beside a rank's
// allreduces, a grid of exactly as many blocks as --overlap asks for runs a
// GEMM-like inner loop, as the matrix multiplies of a tensor-parallel layer
// do beside its allreduce: each block stages an A and a B tile of a small
// input buffer into shared memory and accumulates their product into a
// 64 x 64 tile of C held in registers, 4 x 4 per thread. It mostly takes
// issue slots and FMA pipes, plus some L2 bandwidth for the tiles (the
// input is small enough to stay in L2).
//
// The work is fixed, not a deadline: every block runs args.iters
// iterations of one K step (ARTEST_COMPUTE_K) each, so the same launch
// takes longer when allreduce blocks share its multiprocessors, and that
// difference is what bench reports as the load's slowdown. It waits on
// nothing, so it always ends.
#include "device/common.cuh"

// The kernel's one parameter, by value; its Go twin is kernels.ComputeArgs.
struct ArtestComputeArgs {
  uint64_t in;        // input: in_tiles pairs of A and B tiles (ARTEST_COMPUTE_PAIR floats each pair)
  uint64_t out;       // output: one float per thread of the grid
  uint32_t in_tiles;  // pairs of tiles in the input, at least 1
  uint32_t iters;     // K steps per block: the fixed amount of work
};

static_assert(sizeof(ArtestComputeArgs) == 24, "ArtestComputeArgs changed: change kernels.ComputeArgs with it");

// Threads per block (kernels.ComputeThreads): 8 warps, a common block size
// of SGEMM kernels; 16 x 16 threads cover the 64 x 64 C tile, 4 x 4 each.
constexpr int ARTEST_COMPUTE_THREADS = 256;

// The C tile's side (ARTEST_COMPUTE_TILE) and the K depth of one step
// (ARTEST_COMPUTE_K): an A tile of 64 x 16 and a B tile of 16 x 64 floats
// are 1024 floats each, one float4 per thread to stage.
constexpr int ARTEST_COMPUTE_TILE = 64;
constexpr int ARTEST_COMPUTE_K = 16;

// Floats of one A and B tile pair in the input (kernels.ComputePairFloats).
constexpr int ARTEST_COMPUTE_PAIR = 2 * ARTEST_COMPUTE_TILE * ARTEST_COMPUTE_K;

static_assert(ARTEST_COMPUTE_TILE * ARTEST_COMPUTE_K == 4 * ARTEST_COMPUTE_THREADS, "one float4 per thread per tile");

extern "C" __global__ void __launch_bounds__(ARTEST_COMPUTE_THREADS) artest_compute(const __grid_constant__ ArtestComputeArgs args) {
  // K-major tiles: as[k][row] and bs[k][col], so a thread reads its 4 rows
  // and 4 columns at one k as two float4. The input's tiles are stored
  // K-major already (the values mean nothing), so staging is a copy.
  __shared__ __align__(16) float as[ARTEST_COMPUTE_K][ARTEST_COMPUTE_TILE];
  __shared__ __align__(16) float bs[ARTEST_COMPUTE_K][ARTEST_COMPUTE_TILE];
  const int tid = threadIdx.x;
  const int tx = tid % 16;  // column group of 4
  const int ty = tid / 16;  // row group of 4
  const float4* in = reinterpret_cast<const float4*>(args.in);
  const uint32_t tiles = args.in_tiles > 0 ? args.in_tiles : 1;
  float acc[4][4] = {};
  for (uint32_t it = 0; it < args.iters; it++) {
    // Each block walks the pairs from its own start, so neighbouring
    // blocks read different tiles, as blocks of a GEMM do.
    const uint32_t pair = (blockIdx.x + it) % tiles;
    const float4* p = in + static_cast<uint64_t>(pair) * (ARTEST_COMPUTE_PAIR / 4);
    reinterpret_cast<float4*>(&as[0][0])[tid] = p[tid];
    reinterpret_cast<float4*>(&bs[0][0])[tid] = p[ARTEST_COMPUTE_THREADS + tid];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ARTEST_COMPUTE_K; k++) {
      const float4 a = *reinterpret_cast<const float4*>(&as[k][ty * 4]);
      const float4 b = *reinterpret_cast<const float4*>(&bs[k][tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w};
      const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
          acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
      }
    }
    __syncthreads();  // the next step overwrites the tiles
  }
  // One float per thread, the sum of its accumulators: every FMA feeds it,
  // so the compiler cannot drop any.
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; i++) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      sum += acc[i][j];
    }
  }
  reinterpret_cast<float*>(args.out)[static_cast<uint64_t>(blockIdx.x) * ARTEST_COMPUTE_THREADS + tid] = sum;
}
