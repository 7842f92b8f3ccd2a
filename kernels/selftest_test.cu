// artest-selftest: a pre-flight of the kernel fatbin on real GPUs, without
// the Go runner or MPI. Not part of the fatbin (kernels.mk leaves *_test.cu
// out); `make kernels-selftest` builds and runs it.
//
// All ranks live in this one process: rank r runs on GPU r % ngpus, ranks
// that share a GPU run concurrently on their own streams, and every rank
// addresses its peers' buffers directly (peer access between GPUs, plain
// device pointers within one). The kernels come from bin/artest.fatbin by
// name, launched with the ArtestArgs bytes as the one parameter, the way the
// Go runner launches them.
//
// It checks, for every kernel: results bit for bit against a host reduction
// in the kernels' order (acc = x0; acc = op(acc, xr); one rounding), guard
// bytes around every output and staging buffer, the trace word and the
// epochs; then back-to-back launches with inputs rewritten between them; and
// it reports which planted faults (INJECT_*) the checks catch.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/common.cuh"
#include "oneshot/oneshot.cuh"
#include "twoshot/twoshot.cuh"

namespace {

// The case being run, named in the message of a hang or a CUDA error.
std::string g_current = "setup";

#define CHECK_CUDA(call)                                                                            \
  do {                                                                                              \
    cudaError_t err_ = (call);                                                                      \
    if (err_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s (case %s)\n", __FILE__, __LINE__, #call,                   \
                   cudaGetErrorString(err_), g_current.c_str());                                    \
      std::exit(4);                                                                                 \
    }                                                                                               \
  } while (0)

constexpr uint32_t kGuardBytes = 256;
constexpr uint8_t kGuard = 0xA5;
constexpr uint8_t kPoison = 0xFF;

struct DType {
  const char* name;
  uint32_t id;
  uint32_t size;
};
const DType kDTypes[] = {{"f32", DTYPE_F32, 4}, {"f16", DTYPE_F16, 2}, {"bf16", DTYPE_BF16, 2}};
const char* kOps[] = {"sum", "max", "min"};

struct Variant {
  const char* name;
  uint32_t id;  // as in kernels/<variant>/ (its ID)
};
const Variant kVariants[] = {{"oneshot", 0x51}, {"twoshot", 0x52}};

// Host conversions, bit-exact with the device ones (cuda_fp16/bf16 are host
// callable).
float to_float(uint32_t dtype, uint32_t bits) {
  switch (dtype) {
    case DTYPE_F32: {
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DTYPE_F16:
      return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
    default:
      return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(bits)));
  }
}

uint32_t from_float(uint32_t dtype, float f) {
  switch (dtype) {
    case DTYPE_F32: {
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    case DTYPE_F16:
      return __half_as_ushort(__float2half_rn(f));
    default:
      return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
}

float apply(uint32_t op, float acc, float x) {
  switch (op) {
    case OP_SUM:
      return acc + x;
    case OP_MAX:
      return std::fmax(acc, x);
    default:
      return std::fmin(acc, x);
  }
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Input element i of rank r at iteration it: full-mantissa values in
// [-2, 2), so sums round and the order matters.
uint32_t input_bits(uint32_t dtype, uint32_t r, uint64_t i, uint32_t it) {
  const uint64_t h = mix((uint64_t(r) << 48) ^ (uint64_t(it) << 40) ^ i ^ 0x9e3779b97f4a7c15ull);
  const float f = static_cast<float>(static_cast<int32_t>(h)) * 0x1p-30f;
  return from_float(dtype, f);
}

void put(std::vector<uint8_t>& buf, uint64_t byte_off, uint32_t size, uint32_t bits) {
  std::memcpy(buf.data() + byte_off, &bits, size);
}
uint32_t get(const std::vector<uint8_t>& buf, uint64_t byte_off, uint32_t size) {
  uint32_t bits = 0;
  std::memcpy(&bits, buf.data() + byte_off, size);
  return bits;
}

struct Rank {
  int dev;
  cudaStream_t stream;
  uint8_t* sig;    // SignalBlock
  uint8_t* in;     // input region: guard | data (+offset) | guard
  uint8_t* out;    // output region: guard | data (+offset) | guard
  uint8_t* stage;  // staging: data | guard
  uint64_t region; // bytes of the data part of in/out
};

struct World {
  int ngpus = 0;
  int nranks = 0;
  uint64_t max_bytes = 0;  // data bytes per buffer
  std::vector<Rank> ranks;
  cudaLibrary_t lib{};
  int sms = 0;
  uint8_t* pinned = nullptr;  // host images of inputs and outputs
  uint64_t pinned_bytes = 0;
};

struct Case {
  const Variant* v;
  const DType* d;
  uint32_t op;
  uint64_t count;
  uint32_t offset;  // elements, applied to in and out
  bool in_place;
  uint32_t threads;
  uint32_t inject = 0;
  uint32_t delay_rank = 0;
  uint64_t delay_ns = 0;
  // The host poisons its staging right after each launch, on its stream: a
  // kernel that returns while peers still read its staging is caught.
  bool poison_stage = false;
};

std::string describe(const Case& c, int nranks) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s/%s/%s count=%llu off=%u %s np=%d threads=%u inject=0x%x", c.v->name, c.d->name,
                kOps[c.op], static_cast<unsigned long long>(c.count), c.offset, c.in_place ? "inplace" : "oop", nranks,
                c.threads, c.inject);
  return buf;
}

cudaKernel_t kernel_for(World& w, const Case& c) {
  std::string name = std::string("artest_") + c.v->name + "_" + c.d->name + "_" + kOps[c.op];
  cudaKernel_t k;
  if (cudaLibraryGetKernel(&k, w.lib, name.c_str()) != cudaSuccess) {
    std::fprintf(stderr, "kernel %s not in the fatbin\n", name.c_str());
    std::exit(1);
  }
  return k;
}

uint32_t grid_for(World& w, const Case& c) {
  // Every rank's blocks must be resident at once (they wait on each
  // other): cap the grid by the SMs a GPU's ranks share, one block per SM
  // at 512 threads (the kernels use ~104 registers a thread).
  const int per_gpu = (w.nranks + w.ngpus - 1) / w.ngpus;
  const uint32_t per_sm = c.threads <= 256 ? 2 : 1;
  uint32_t cap = static_cast<uint32_t>(w.sms) * per_sm / per_gpu;
  if (cap > 36) cap = 36;
  if (std::strcmp(c.v->name, "oneshot") == 0) return artest_oneshot_blocks(c.count, c.d->size, c.threads, cap);
  return artest_twoshot_blocks(c.count, c.d->size, w.nranks, c.threads, cap);
}

ArtestArgs args_for(World& w, const Case& c, int r) {
  ArtestArgs a;
  std::memset(&a, 0, sizeof a);
  for (int p = 0; p < w.nranks; ++p) {
    a.peer_in[p] = reinterpret_cast<uint64_t>(w.ranks[p].in + kGuardBytes) + uint64_t(c.offset) * c.d->size;
    a.peer_stage[p] = reinterpret_cast<uint64_t>(w.ranks[p].stage);
    a.peer_signal[p] = reinterpret_cast<uint64_t>(w.ranks[p].sig);
  }
  a.out = c.in_place ? a.peer_in[r]
                     : reinterpret_cast<uint64_t>(w.ranks[r].out + kGuardBytes) + uint64_t(c.offset) * c.d->size;
  a.count = c.count;
  a.rank = r;
  a.nranks = w.nranks;
  a.inject = c.inject;
  a.delay_rank = c.delay_rank;
  a.delay_ns = c.delay_ns;
  a.variant_id = c.v->id;
  a.flags = c.in_place ? FLAG_IN_PLACE : 0;
  a.stage_bytes = c.count * c.d->size;  // exactly enough: the kernels must not need more
  return a;
}

// Bytes of the part of an in/out region a case uses: guard, offset padding
// and data, guard.
uint64_t image_bytes(const Case& c) { return 2 * kGuardBytes + (uint64_t(c.offset) + c.count) * c.d->size; }

// The host image of one rank's input: data at the offset, guard bytes
// everywhere else.
void input_image(const Case& c, uint32_t r, uint32_t it, uint8_t* dst) {
  std::vector<uint8_t> img(image_bytes(c), kGuard);
  for (uint64_t i = 0; i < c.count; ++i)
    put(img, kGuardBytes + (c.offset + i) * c.d->size, c.d->size, input_bits(c.d->id, r, i, it));
  std::memcpy(dst, img.data(), img.size());
}

std::vector<uint32_t> expected(const Case& c, int nranks, uint32_t it) {
  std::vector<uint32_t> want(c.count);
  for (uint64_t i = 0; i < c.count; ++i) {
    float acc = to_float(c.d->id, input_bits(c.d->id, 0, i, it));
    for (int r = 1; r < nranks; ++r) acc = apply(c.op, acc, to_float(c.d->id, input_bits(c.d->id, r, i, it)));
    want[i] = from_float(c.d->id, acc);
  }
  return want;
}

// Counts mismatches in one rank's output image: data, poison where the data
// was not written, and the guards (in place, the region is the input's).
uint64_t check_output(const Case& c, const std::vector<uint8_t>& img, const std::vector<uint32_t>& want,
                      std::string* first) {
  uint64_t bad = 0;
  auto note = [&](const char* what, uint64_t at, uint32_t got, uint32_t exp) {
    if (bad++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s at %llu: got 0x%x want 0x%x", what, static_cast<unsigned long long>(at), got,
                    exp);
      *first = buf;
    }
  };
  const uint64_t data0 = kGuardBytes + uint64_t(c.offset) * c.d->size;
  const uint64_t data1 = data0 + c.count * c.d->size;
  const uint8_t fill = c.in_place ? kGuard : kPoison;  // bytes around the data
  for (uint64_t b = 0; b < data0; ++b)
    if (img[b] != (b < kGuardBytes ? kGuard : fill)) note("byte before the output", b, img[b], fill);
  for (uint64_t i = 0; i < c.count; ++i) {
    const uint32_t got = get(img, data0 + i * c.d->size, c.d->size);
    if (got != want[i]) note("element", i, got, want[i]);
  }
  for (uint64_t b = data1; b < img.size(); ++b) {
    const uint8_t exp = b >= img.size() - kGuardBytes ? kGuard : fill;
    if (img[b] != exp) note("byte after the output", b - data1, img[b], exp);
  }
  return bad;
}

void wait_all(World& w, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  for (auto& rk : w.ranks) {
    CHECK_CUDA(cudaSetDevice(rk.dev));
    for (;;) {
      cudaError_t e = cudaStreamQuery(rk.stream);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) {
        std::fprintf(stderr, "stream error: %s (case %s)\n", cudaGetErrorString(e), g_current.c_str());
        std::exit(4);
      }
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s) {
        std::fprintf(stderr, "HANG: launches did not finish in %.0f s (case %s)\n", timeout_s, g_current.c_str());
        std::exit(3);
      }
    }
  }
}

void launch(World& w, const Case& c, int r) {
  Rank& rk = w.ranks[r];
  CHECK_CUDA(cudaSetDevice(rk.dev));
  ArtestArgs a = args_for(w, c, r);
  void* params[] = {&a};
  CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_for(w, c)), dim3(grid_for(w, c)), dim3(c.threads),
                              params, 0, rk.stream));
}

struct SigState {
  uint32_t variant, count;
  std::vector<uint32_t> epochs;
};

SigState read_sig(Rank& rk) {
  std::vector<uint32_t> words(SIG_OFF_FLAGS / 4);
  CHECK_CUDA(cudaSetDevice(rk.dev));
  CHECK_CUDA(cudaMemcpy(words.data(), rk.sig, SIG_OFF_FLAGS, cudaMemcpyDeviceToHost));
  SigState s;
  s.variant = words[SIG_OFF_TRACE_VARIANT / 4];
  s.count = words[SIG_OFF_TRACE_COUNT / 4];
  // Each epoch word is 64 bits: the epoch in its low half, the claim (0
  // between launches) in its high half.
  for (uint32_t b = 0; b < SIG_MAX_BLOCKS; ++b) s.epochs.push_back(words[sig_epoch_offset(b) / 4]);
  return s;
}

// Runs case c `iters` times back to back (each rank: write inputs, launch,
// read output, all on its stream, no host sync in between) and returns the
// number of bad elements/bytes over all ranks and iterations.
uint64_t run_case(World& w, const Case& c, uint32_t iters, std::string* first) {
  const int n = w.nranks;
  g_current = describe(c, n) + " iters=" + std::to_string(iters);
  std::vector<SigState> before;
  for (auto& rk : w.ranks) before.push_back(read_sig(rk));
  const uint64_t img_bytes = image_bytes(c);
  if (2 * n * iters * img_bytes > w.pinned_bytes) {
    std::fprintf(stderr, "case too large for the pinned pool: %s\n", describe(c, n).c_str());
    std::exit(2);
  }
  // Pinned images, so the copies are truly asynchronous.
  std::vector<uint8_t*> in_img(n * iters), out_img(n * iters);
  for (int r = 0; r < n; ++r) {
    Rank& rk = w.ranks[r];
    CHECK_CUDA(cudaSetDevice(rk.dev));
    std::vector<uint8_t> poison(img_bytes, kPoison);
    std::memset(poison.data(), kGuard, kGuardBytes);
    std::memset(poison.data() + img_bytes - kGuardBytes, kGuard, kGuardBytes);
    CHECK_CUDA(cudaMemcpy(rk.out, poison.data(), img_bytes, cudaMemcpyHostToDevice));
    std::vector<uint8_t> stage(c.count * c.d->size + kGuardBytes, kGuard);
    CHECK_CUDA(cudaMemcpy(rk.stage, stage.data(), stage.size(), cudaMemcpyHostToDevice));
    for (uint32_t it = 0; it < iters; ++it) {
      in_img[r * iters + it] = w.pinned + (2 * (r * iters + it)) * img_bytes;
      out_img[r * iters + it] = in_img[r * iters + it] + img_bytes;
      input_image(c, r, it, in_img[r * iters + it]);
    }
  }
  for (uint32_t it = 0; it < iters; ++it) {
    for (int r = 0; r < n; ++r) {
      Rank& rk = w.ranks[r];
      CHECK_CUDA(cudaSetDevice(rk.dev));
      CHECK_CUDA(cudaMemcpyAsync(rk.in, in_img[r * iters + it], img_bytes, cudaMemcpyHostToDevice, rk.stream));
      if (!c.in_place && it > 0)  // re-poison the output
        CHECK_CUDA(cudaMemsetAsync(rk.out + kGuardBytes, kPoison, img_bytes - 2 * kGuardBytes, rk.stream));
      launch(w, c, r);
      if (c.poison_stage) CHECK_CUDA(cudaMemsetAsync(rk.stage, kPoison, c.count * c.d->size, rk.stream));
      CHECK_CUDA(cudaMemcpyAsync(out_img[r * iters + it], c.in_place ? rk.in : rk.out, img_bytes,
                                 cudaMemcpyDeviceToHost, rk.stream));
    }
  }
  wait_all(w, 60);
  uint64_t bad = 0;
  for (uint32_t it = 0; it < iters; ++it) {
    const std::vector<uint32_t> want = expected(c, n, it);
    for (int r = 0; r < n; ++r) {
      std::vector<uint8_t> img(out_img[r * iters + it], out_img[r * iters + it] + img_bytes);
      std::string f;
      const uint64_t b = check_output(c, img, want, &f);
      if (b && first->empty()) *first = "rank " + std::to_string(r) + " iter " + std::to_string(it) + ": " + f;
      bad += b;
    }
  }
  // Staging guards, trace words, epochs.
  const uint32_t grid = grid_for(w, c);
  for (int r = 0; r < n; ++r) {
    Rank& rk = w.ranks[r];
    std::vector<uint8_t> g(kGuardBytes);
    CHECK_CUDA(cudaSetDevice(rk.dev));
    CHECK_CUDA(cudaMemcpy(g.data(), rk.stage + c.count * c.d->size, kGuardBytes, cudaMemcpyDeviceToHost));
    for (uint8_t x : g)
      if (x != kGuard) {
        if (first->empty()) *first = "rank " + std::to_string(r) + ": staging guard overwritten";
        ++bad;
        break;
      }
    const SigState s = read_sig(rk);
    const bool trace_ok = s.variant == c.v->id && s.count == before[r].count + iters;
    bool epochs_ok = true;
    for (uint32_t b = 0; b < SIG_MAX_BLOCKS; ++b)
      epochs_ok &= s.epochs[b] == before[r].epochs[b] + (b < grid ? iters : 0);
    if (!trace_ok || !epochs_ok) {
      if (first->empty())
        *first = "rank " + std::to_string(r) + (trace_ok ? ": epochs wrong" : ": trace word wrong");
      ++bad;
    }
  }
  return bad;
}

void setup(World& w, int nranks, int ngpus, uint64_t max_bytes, const std::vector<char>& fatbin) {
  w.nranks = nranks;
  w.ngpus = ngpus;
  w.max_bytes = max_bytes;
  for (int d = 0; d < ngpus; ++d) {
    CHECK_CUDA(cudaSetDevice(d));
    for (int e = 0; e < ngpus; ++e) {
      if (e == d) continue;
      int can = 0;
      CHECK_CUDA(cudaDeviceCanAccessPeer(&can, d, e));
      if (!can) {
        std::fprintf(stderr, "GPU %d cannot access GPU %d\n", d, e);
        std::exit(4);
      }
      cudaError_t err = cudaDeviceEnablePeerAccess(e, 0);
      if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled) CHECK_CUDA(err);
      (void)cudaGetLastError();
    }
  }
  CHECK_CUDA(cudaDeviceGetAttribute(&w.sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK_CUDA(cudaLibraryLoadData(&w.lib, fatbin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  w.pinned_bytes = uint64_t(256) << 20;
  CHECK_CUDA(cudaMallocHost(&w.pinned, w.pinned_bytes));
  const uint64_t region = max_bytes + 64;  // room for the offsets
  for (int r = 0; r < nranks; ++r) {
    Rank rk;
    rk.dev = r % ngpus;
    rk.region = region;
    CHECK_CUDA(cudaSetDevice(rk.dev));
    CHECK_CUDA(cudaStreamCreateWithFlags(&rk.stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&rk.sig, SIG_SIZE));
    CHECK_CUDA(cudaMemset(rk.sig, 0, SIG_SIZE));
    CHECK_CUDA(cudaMalloc(&rk.in, region + 2 * kGuardBytes));
    CHECK_CUDA(cudaMalloc(&rk.out, region + 2 * kGuardBytes));
    CHECK_CUDA(cudaMalloc(&rk.stage, max_bytes + kGuardBytes));
    w.ranks.push_back(rk);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
}

void teardown(World& w) {
  for (auto& rk : w.ranks) {
    CHECK_CUDA(cudaSetDevice(rk.dev));
    CHECK_CUDA(cudaStreamDestroy(rk.stream));
    CHECK_CUDA(cudaFree(rk.sig));
    CHECK_CUDA(cudaFree(rk.in));
    CHECK_CUDA(cudaFree(rk.out));
    CHECK_CUDA(cudaFree(rk.stage));
  }
  CHECK_CUDA(cudaLibraryUnload(w.lib));
  CHECK_CUDA(cudaFreeHost(w.pinned));
  w.ranks.clear();
}

// Times back-to-back launches (no input rewrites), one host thread per rank
// so that issuing launches does not serialize the ranks; returns
// microseconds per launch on rank 0's stream (events).
double bench(World& w, const Case& c, int iters) {
  const cudaKernel_t k = kernel_for(w, c);
  const uint32_t grid = grid_for(w, c);
  double us = 0;
  std::vector<std::thread> threads;
  for (int r = 0; r < w.nranks; ++r) {
    threads.emplace_back([&, r] {
      Rank& rk = w.ranks[r];
      CHECK_CUDA(cudaSetDevice(rk.dev));
      ArtestArgs a = args_for(w, c, r);
      void* params[] = {&a};
      auto go = [&] {
        CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(grid), dim3(c.threads), params, 0,
                                    rk.stream));
      };
      for (int it = 0; it < 20; ++it) go();
      cudaEvent_t e0, e1;
      CHECK_CUDA(cudaEventCreate(&e0));
      CHECK_CUDA(cudaEventCreate(&e1));
      CHECK_CUDA(cudaEventRecord(e0, rk.stream));
      for (int it = 0; it < iters; ++it) go();
      CHECK_CUDA(cudaEventRecord(e1, rk.stream));
      CHECK_CUDA(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
      if (r == 0) us = 1000.0 * ms / iters;
      CHECK_CUDA(cudaEventDestroy(e0));
      CHECK_CUDA(cudaEventDestroy(e1));
    });
  }
  for (auto& t : threads) t.join();
  return us;
}

struct Tally {
  uint64_t cases = 0, failures = 0;
  void add(bool failed) {
    ++cases;
    failures += failed ? 1 : 0;
  }
};

// Every kernel over counts that hit each tail shape, aligned and misaligned
// offsets, in and out of place, two block sizes: one launch, then two back
// to back.
void run_matrix(World& w, Tally& t) {
  const uint64_t counts[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000, 4095, 4096, 4097, 65536 + 5, 1u << 20};
  for (const Variant& v : kVariants)
    for (const DType& d : kDTypes)
      for (uint32_t op = 0; op < 3; ++op)
        for (uint64_t count : counts)
          for (uint32_t offset : {0u, 1u, 8u})
            for (bool in_place : {false, true})
              for (uint32_t threads : {512u, 96u}) {
                if (threads == 96 && (count > 5000 || offset == 8)) continue;
                if (offset == 8 && op != OP_SUM) continue;
                if (count >= (1u << 20) && offset != 0) continue;
                if (threads < static_cast<uint32_t>(w.nranks)) continue;
                Case c{&v, &d, op, count, offset, in_place, threads};
                std::string first;
                const uint64_t bad = run_case(w, c, count >= (1u << 20) ? 1 : 2, &first);
                t.add(bad != 0);
                if (bad)
                  std::printf("FAIL %s: %llu bad (%s)\n", describe(c, w.nranks).c_str(),
                              static_cast<unsigned long long>(bad), first.c_str());
              }
}

// Many back-to-back launches with fresh inputs each time.
void run_stress(World& w, Tally& t) {
  for (const Variant& v : kVariants)
    for (bool in_place : {false, true})
      for (uint64_t count : {uint64_t(1000), uint64_t(65536 + 5)}) {
        Case c{&v, &kDTypes[2], OP_SUM, count, 0, in_place, 512};
        std::string first;
        const uint64_t bad = run_case(w, c, 50, &first);
        t.add(bad != 0);
        if (bad)
          std::printf("FAIL stress %s: %llu bad (%s)\n", describe(c, w.nranks).c_str(),
                      static_cast<unsigned long long>(bad), first.c_str());
      }
}

// Planted faults: SKIP_LAST and OVERRUN must be caught and the delay alone
// must not be; whether a barrier's removal shows depends on what the
// barrier protects in each mode and on timing, so those are reported.
void run_faults(World& w, Tally& t) {
  struct Fault {
    const char* name;
    uint32_t bits;
    bool must;
    bool poison_stage;
  };
  const Fault faults[] = {
      {"skip-last", INJECT_SKIP_LAST, true, false},
      {"overrun", INJECT_OVERRUN, true, false},
      {"no-start+delay", INJECT_NO_START_BARRIER | INJECT_DELAY, false, false},
      {"no-mid+delay", INJECT_NO_MID_BARRIER | INJECT_DELAY, false, false},
      {"no-end+delay", INJECT_NO_END_BARRIER | INJECT_DELAY, false, false},
      {"no-end+delay+poison", INJECT_NO_END_BARRIER | INJECT_DELAY, false, true},
      {"delay (control)", INJECT_DELAY, false, false},
      {"delay+poison (control)", INJECT_DELAY, false, true},
  };
  for (const Fault& ft : faults)
    for (const Variant& v : kVariants)
      for (bool in_place : {false, true})
        for (uint64_t count : {uint64_t(1000), uint64_t(65536 + 4)}) {
          Case c{&v, &kDTypes[2], OP_SUM, count, 0, in_place, 512, ft.bits, 1, 50000, ft.poison_stage};
          std::string first;
          const uint64_t bad = run_case(w, c, 20, &first);
          const bool control = (ft.bits & ~INJECT_DELAY) == 0;
          const bool fail = (ft.must && bad == 0) || (control && bad != 0);
          t.add(fail);
          std::printf("%s fault %-22s %-7s %-7s count=%-6llu np=%d: %s%s\n", fail ? "FAIL" : "    ", ft.name, v.name,
                      in_place ? "inplace" : "oop", static_cast<unsigned long long>(count), w.nranks,
                      bad ? "caught: " : "not caught", first.c_str());
        }
}

void run_bench(World& w) {
  for (const Variant& v : kVariants)
    for (uint64_t bytes :
         {uint64_t(4) << 10, uint64_t(64) << 10, uint64_t(256) << 10, uint64_t(1) << 20, uint64_t(4) << 20}) {
      Case c{&v, &kDTypes[2], OP_SUM, bytes / 2, 0, false, 512};
      g_current = std::string("bench ") + v.name;
      std::printf("bench %-7s bf16 sum %8llu B np=%d grid=%u: %8.2f us/launch\n", v.name,
                  static_cast<unsigned long long>(bytes), w.nranks, grid_for(w, c), bench(w, c, 200));
    }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FATBIN [max-ranks [bench]]\n", argv[0]);
    return 2;
  }
  FILE* f = std::fopen(argv[1], "rb");
  if (!f) {
    std::fprintf(stderr, "open %s\n", argv[1]);
    return 2;
  }
  std::vector<char> fatbin;
  char buf[1 << 16];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) fatbin.insert(fatbin.end(), buf, buf + got);
  std::fclose(f);
  const int max_ranks = argc > 2 ? std::atoi(argv[2]) : 8;
  const bool bench_only = argc > 3 && std::strcmp(argv[3], "bench") == 0;
  // Ranks of one GPU wait on each other from concurrent kernels; lazy
  // loading may serialize a first launch behind a running kernel.
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);

  int ngpus = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ngpus));
  std::printf("artest-selftest: %d GPU(s), up to %d ranks\n", ngpus, max_ranks);

  Tally t;
  for (int nranks : {1, 2, 3, 4, 8}) {
    if (nranks > max_ranks) continue;
    const bool bench_world = nranks == ngpus || (nranks == 2 && ngpus == 1);
    if (bench_only && !bench_world) continue;
    World w;
    setup(w, nranks, ngpus < nranks ? ngpus : nranks, (1u << 20) * 4, fatbin);
    if (!bench_only) {
      run_matrix(w, t);
      run_stress(w, t);
      if (nranks >= 2) run_faults(w, t);
    }
    if (bench_world) run_bench(w);
    teardown(w);
    std::printf("np=%d done\n", nranks);
    std::fflush(stdout);
  }
  std::printf("artest-selftest: %llu cases, %llu failed\n", static_cast<unsigned long long>(t.cases),
              static_cast<unsigned long long>(t.failures));
  return t.failures ? 1 : 0;
}
