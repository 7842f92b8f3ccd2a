// artest_copy: a stream-ordered device-to-device copy run on the
// multiprocessors (backend.SMCopier), 16-byte vectors where both ends
// share their alignment. bench times it into a peer's memory beside a
// copy engine's copy (cuMemcpyDtoDAsync): the links' rate as kernels
// see it. It waits on nothing, so it always ends.
#include "device/common.cuh"

// The kernel's one parameter, by value; its Go twin is kernels.CopyArgs.
struct ArtestCopyArgs {
  uint64_t dst;    // device address written
  uint64_t src;    // device address read; the ranges do not overlap
  uint64_t bytes;  // how many
};

static_assert(sizeof(ArtestCopyArgs) == 24, "ArtestCopyArgs changed: change kernels.CopyArgs with it");

// Threads per block (kernels.CopyThreads).
constexpr int ARTEST_COPY_THREADS = 256;

extern "C" __global__ void __launch_bounds__(ARTEST_COPY_THREADS) artest_copy(const __grid_constant__ ArtestCopyArgs args) {
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  char* dst = reinterpret_cast<char*>(args.dst);
  const char* src = reinterpret_cast<const char*>(args.src);
  uint64_t n = args.bytes;
  // 16-byte vectors where both ends share their alignment (the poison's
  // source is laid out to match its destination), bytes elsewhere.
  if (((args.dst ^ args.src) & 15) == 0) {
    const uint64_t head = ((16 - (args.dst & 15)) & 15) < n ? ((16 - (args.dst & 15)) & 15) : n;
    if (tid < head) dst[tid] = src[tid];
    dst += head;
    src += head;
    n -= head;
    const uint64_t vecs = n / 16;
    uint4* dv = reinterpret_cast<uint4*>(dst);
    const uint4* sv = reinterpret_cast<const uint4*>(src);
    for (uint64_t i = tid; i < vecs; i += stride) dv[i] = sv[i];
    for (uint64_t i = vecs * 16 + tid; i < n; i += stride) dst[i] = src[i];
    return;
  }
  for (uint64_t i = tid; i < n; i += stride) dst[i] = src[i];
}
