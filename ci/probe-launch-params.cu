// probe-launch-params: what the size of a kernel's parameters costs a
// launch replayed in a CUDA graph, on one GPU. artest's kernels take one
// ArtestArgs (536 bytes, __grid_constant__); the field's small-message
// kernels take a few pointers. Each case is a graph of kNodes launches of
// one 64-thread block, replayed kReplays times; the time per launch is the
// median of kRuns such replays over kNodes x kReplays.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ikernels -o bin/probe-launch-params ci/probe-launch-params.cu
//   bin/probe-launch-params [DEVICE]
//
// Cases: an empty kernel with an 8-byte and with a 536-byte parameter;
// the same two reading one word of global memory (volatile, from the
// parameter's pointer) and writing it back, as a launch that reads its
// sequence word does; and the 536-byte one with an atomicAdd whose result
// is used at the end, as oneshot-ll's and oneshot-sentinel's block count is.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <algorithm>
#include <vector>

#include "device/abi.cuh"

namespace {

constexpr int kNodes = 200;
constexpr int kReplays = 20;
constexpr int kRuns = 7;

__global__ void empty8(uint64_t) {}
__global__ void empty536(const __grid_constant__ ArtestArgs) {}

__global__ void word8(uint64_t p) {
  if (threadIdx.x == 0) {
    volatile uint32_t* w = reinterpret_cast<volatile uint32_t*>(p);
    *w = *w + 1;
  }
}
__global__ void word536(const __grid_constant__ ArtestArgs a) {
  if (threadIdx.x == 0) {
    volatile uint32_t* w = reinterpret_cast<volatile uint32_t*>(a.out);
    *w = *w + 1;
  }
}
__global__ void atomic536(const __grid_constant__ ArtestArgs a) {
  uint32_t counted = 0;
  if (threadIdx.x == 0) counted = atomicAdd(reinterpret_cast<unsigned int*>(a.out + 4), 1u) + 1;
  if (threadIdx.x == 0) {
    volatile uint32_t* w = reinterpret_cast<volatile uint32_t*>(a.out);
    *w = *w + counted;
  }
}

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

// Microseconds per launch of what enqueue puts on a stream once.
template <typename F>
double per_launch_us(cudaStream_t s, F enqueue) {
  cudaGraph_t g;
  cudaGraphExec_t x;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kNodes; ++i) enqueue();
  CHECK(cudaStreamEndCapture(s, &g));
  CHECK(cudaGraphInstantiate(&x, g, 0));
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  CHECK(cudaGraphLaunch(x, s));  // warm-up
  CHECK(cudaStreamSynchronize(s));
  std::vector<double> us;
  for (int r = 0; r < kRuns; ++r) {
    CHECK(cudaEventRecord(t0, s));
    for (int i = 0; i < kReplays; ++i) CHECK(cudaGraphLaunch(x, s));
    CHECK(cudaEventRecord(t1, s));
    CHECK(cudaEventSynchronize(t1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    us.push_back(1000.0 * ms / (kNodes * kReplays));
  }
  std::sort(us.begin(), us.end());
  CHECK(cudaGraphExecDestroy(x));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaEventDestroy(t0));
  CHECK(cudaEventDestroy(t1));
  return us[kRuns / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int dev = argc > 1 ? atoi(argv[1]) : 0;
  CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t* word = nullptr;
  CHECK(cudaMalloc(&word, 64));
  CHECK(cudaMemset(word, 0, 64));
  ArtestArgs a{};
  a.out = reinterpret_cast<uint64_t>(word);
  const uint64_t p = a.out;
  printf("# probe-launch-params: GPU %d %s, %d-node graphs of one 64-thread block, median of %d x %d replays\n", dev,
         prop.name, kNodes, kRuns, kReplays);
  printf("%-34s %8s\n", "kernel", "us/launch");
  printf("%-34s %8.3f\n", "empty, 8-byte parameter", per_launch_us(s, [&] { empty8<<<1, 64, 0, s>>>(p); }));
  printf("%-34s %8.3f\n", "empty, 536-byte ArtestArgs", per_launch_us(s, [&] { empty536<<<1, 64, 0, s>>>(a); }));
  printf("%-34s %8.3f\n", "one word read+written, 8-byte", per_launch_us(s, [&] { word8<<<1, 64, 0, s>>>(p); }));
  printf("%-34s %8.3f\n", "one word read+written, 536-byte", per_launch_us(s, [&] { word536<<<1, 64, 0, s>>>(a); }));
  printf("%-34s %8.3f\n", "the same with an atomicAdd, 536", per_launch_us(s, [&] { atomic536<<<1, 64, 0, s>>>(a); }));
  CHECK(cudaFree(word));
  return 0;
}
