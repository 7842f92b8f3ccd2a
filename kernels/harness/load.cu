// artest_load: the straggler schedule's side load on the cuda backend
// (backend.Straggler). Forked onto a side stream beside one rank's
// allreduce, it runs until a deadline of the global timer, so that the
// allreduce's blocks read slowly: a straggler made from outside the kernel
// under test. Three kinds:
//   memory  every thread streams 16-byte read-modify-writes over a scratch
//           buffer larger than L2: the blocks share issue slots, load/store
//           units and memory bandwidth with it;
//   sm      every thread adds to one shared-memory word, over and over:
//           the atomics serialise in the multiprocessor's shared-memory
//           pipe, which the allreduce's loads and stores share, and touch
//           no memory a peer reads (ranks that share a GPU, each on SMs of
//           its own, slow only the loaded rank's blocks);
//   link    (npeers > 0) every thread reads the peers' buffers over the
//           links, whatever the kind.
//
// The deadline is the first block's start plus ns (at most
// ARTEST_LOAD_MAX_NS), shared through the scratch's first word, which the
// host zeroes before each launch: blocks that find no room until later
// (ranks sharing a GPU whose other ranks' blocks spin at a barrier) exit at
// once instead of running ns each. Small blocks (ARTEST_LOAD_THREADS) fit
// into the room one allreduce block leaves. It waits on nothing, so it
// always ends.
#include "device/common.cuh"

// The most peers a link load reads (kernels.LoadMaxPeers): the ranks of
// one node, less this one.
constexpr int ARTEST_LOAD_MAX_PEERS = 8;

// The kernel's one parameter, by value; its Go twin is kernels.LoadArgs.
struct ArtestLoadArgs {
  uint64_t buf;    // scratch: the deadline word, then the streamed bytes
  uint64_t bytes;  // of the whole scratch, a multiple of 16
  uint64_t ns;     // how long to load
  uint64_t peers[ARTEST_LOAD_MAX_PEERS];  // the link load: peers' buffers, as this process maps them
  uint64_t peer_bytes;  // readable bytes of each, a multiple of 16
  uint32_t npeers;      // 0: no link load
  uint32_t kind;        // ARTEST_LOAD_MEMORY or ARTEST_LOAD_SM, when npeers is 0
};

static_assert(sizeof(ArtestLoadArgs) == 104, "ArtestLoadArgs changed: change kernels.LoadArgs with it");

// The longest load (kernels.LoadMax): 10 ms, far above the straggler's
// 200 us, short enough that a bad argument cannot hold a GPU for long.
constexpr uint64_t ARTEST_LOAD_MAX_NS = 10000000ull;

// The load's kinds (kernels.LoadKindMemory, kernels.LoadKindSM).
constexpr uint32_t ARTEST_LOAD_MEMORY = 0;
constexpr uint32_t ARTEST_LOAD_SM = 1;

// Threads per block (kernels.LoadThreads).
constexpr int ARTEST_LOAD_THREADS = 64;

// Bytes before the streamed region: the deadline word, padded to 16.
constexpr uint64_t ARTEST_LOAD_HEAD = 16;

// One 16-byte read of peer memory that is fetched again every time
// (.volatile: no cached copy answers it), so every read crosses the link.
__device__ __forceinline__ uint32_t ld_peer_volatile(const void* p) {
  uint32_t a, b, c, d;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p) : "memory");
  return a ^ b ^ c ^ d;
}

extern "C" __global__ void __launch_bounds__(ARTEST_LOAD_THREADS) artest_load(const __grid_constant__ ArtestLoadArgs args) {
  __shared__ uint64_t deadline;
  if (threadIdx.x == 0) {
    const uint64_t ns = args.ns < ARTEST_LOAD_MAX_NS ? args.ns : ARTEST_LOAD_MAX_NS;
    const unsigned long long want = artest::global_timer_ns() + ns;
    const unsigned long long was = atomicCAS(reinterpret_cast<unsigned long long*>(args.buf), 0ull, want);
    deadline = was == 0 ? want : was;
  }
  __syncthreads();
  // The link load (npeers > 0): every block reads the peers' buffers
  // instead, so that this rank's own reads of its peers queue behind them
  // on the links while the peers' reads of this rank do not: a rank that
  // returns without waiting for its peers (a missing end barrier) leaves
  // this one reading. Reads only: the peers' memory is never written.
  // Every block, not half with the other half loading this GPU's memory:
  // that half slowed the peers' reads of this rank too, and on 2 H200 it
  // caught vLLM's missing end barrier less often (at most 1059 wrong
  // iterations of 8000 against 1339 or more with every block,
  // docs/results/2026-11-26-h200-x4-colls-link.md).
  if (args.npeers > 0) {
    const uint64_t pvecs = args.peer_bytes / 16;
    if (pvecs == 0) return;
    const uint32_t npeers = args.npeers < ARTEST_LOAD_MAX_PEERS ? args.npeers : ARTEST_LOAD_MAX_PEERS;
    const char* peer = reinterpret_cast<const char*>(args.peers[blockIdx.x % npeers]);
    const uint64_t pstride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    // Every thread walks the whole buffer from its own start, so the
    // reads spread over it whatever its size against the grid (a 64 KiB
    // input has fewer vectors than the load has threads).
    // The step is the grid's stride modulo the buffer, and never 0 (a
    // buffer whose vectors divide the stride), so j keeps moving.
    uint64_t j = (static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) % pvecs;
    uint64_t step = pstride % pvecs;
    if (step == 0) step = 1;
    uint32_t sink = 0;
    while (artest::global_timer_ns() < deadline) {
      for (int k = 0; k < 8; k++) {
        sink ^= ld_peer_volatile(peer + j * 16);
        j += step;
        if (j >= pvecs) j -= pvecs;
      }
    }
    // Never true for the scratch's own words past the deadline word; keeps
    // the reads' results used.
    if (sink == 0xffffffffu && args.bytes > ARTEST_LOAD_HEAD + 16)
      reinterpret_cast<uint32_t*>(args.buf + ARTEST_LOAD_HEAD)[0] ^= sink;
    return;
  }
  if (args.kind == ARTEST_LOAD_SM) {
    // Every thread of the block on one word: each warp's atomic is 32
    // conflicting updates, and the pipe is never idle. Of four loads that
    // stay on the SMs this slowed the loaded rank's blocks the most (on one
    // H200 under MPS, 339 to 902 wrong iterations of 8000 for vLLM without
    // its end barrier, docs/results/2026-11-26-h200-sm-load-shared-catch.md).
    __shared__ uint32_t word;
    if (threadIdx.x == 0) word = 0;
    __syncthreads();
    uint32_t sink = 0;
    while (artest::global_timer_ns() < deadline) {
#pragma unroll
      for (int k = 0; k < 16; k++) sink += atomicAdd(&word, 1u);
    }
    // Keeps the atomics' results used; when it happens to be true it
    // flips a word of the scratch, which nothing reads.
    if (sink == 0xffffffffu && args.bytes > ARTEST_LOAD_HEAD + 16)
      reinterpret_cast<uint32_t*>(args.buf + ARTEST_LOAD_HEAD)[0] ^= sink;
    return;
  }
  // A kind this build does not know: no load (the host sends none).
  if (args.kind != ARTEST_LOAD_MEMORY) return;
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
