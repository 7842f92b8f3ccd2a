// trtllm.cu: an adapter plugin for TensorRT-LLM's custom allreduce, as the
// pinned flashinfer-python wheel ships it (flashinfer/comm/trtllm_allreduce.cuh),
// vllm.cu's twin. Nothing of it is copied here: `make plugins` downloads the
// wheel (ci/install-flashinfer.sh) and this file only #includes the header
// and calls its entry point, trtllm_allreduce::customAllReduce<T>(params,
// strategy, config, fusion op, pdl, stream), the way flashinfer's binding
// (csrc/trtllm_allreduce.cu) and AllReduceParams::deserialize fill it:
//
//   - peer_comm_buffer_ptrs: every rank's shared comm buffer, ping or pong
//     by the flag's parity (even: the first half, as deserialize). They are
//     the halves of artest's staging buffers (staging_bytes: two messages);
//     the kernel copies this rank's input into its own (COPY_INPUT, config 0:
//     no memcpy, no push mode), so the input need not be registered;
//   - peer_barrier_ptrs_in / _out: two flag arrays in every rank's control
//     region (zeroed by artest: 0 is TRT-LLM's released state);
//   - barrier_flag: a counter on the host, +1 per call from 1, as
//     deserialize's *flag_ptr += 1; every rank makes the same calls, so
//     the ranks' flags agree;
//   - no fusion (AllReduceFusionOp::NONE), no PDL; blocks and threads are
//     the header's own (kernelLaunchConfig: at most 24 blocks of 512).
//
// Two variants, one per strategy: trtllm:oneshot (every rank reduces the
// whole message) and trtllm:twoshot (reduce-scatter, then all-gather).
// What the header requires, and how it is declared:
//   - sum only (the kernels add); f32, f16, bf16;
//   - 2, 4, 6, 8 or 16 ranks (the dispatch errors for others): min 2, max
//     16; another world size fails each call with that reason;
//   - 16-byte vectors: oneshot align_bytes 16; twoshot needs the element
//     count to be a multiple of ranks * 16 bytes: align_bytes 128 covers 2, 4
//     and 8 ranks; on 6 or 16 ranks another size fails with the reason;
//   - message at most kMaxBytes (each staging half holds one).
//
// Reduction order: UNKNOWN. Both kernels sum rank 0, 1, ... ("always reduce
// from rank 0 to ensure stable reduce order"), but start from T(0) (+0: an
// all -0 sum comes out +0) and round to T after every addition (vec_add
// returns vec_t<T>), so for 16-bit types it is not one fp32 sum rounded once.
//
// Graph capture: barrier_flag is a kernel argument, so a graph replays the
// flags it was captured with; artest's graph modes replay one captured call
// several times, whose barriers then find their flags already set. That is
// the header's protocol (TRT-LLM passes a fresh flag per call), and artest
// checks what comes of it.
//
// Unverified on a GPU: compiled only (make plugins-adapters-check).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <exception>

#include <flashinfer/comm/trtllm_allreduce.cuh>

#include "artest_plugin.h"

namespace {

namespace ar = flashinfer::trtllm_allreduce;

constexpr uint64_t kMaxBytes = 8u << 20;        // per call; each staging half holds one
constexpr uint64_t kBarrierBytes = 4096;        // per flag array: 16 ranks * (2*24 + 3) flags fit
constexpr uint64_t kControlBytes = 2 * kBarrierBytes;
static_assert(ar::MAX_RANKS_PER_NODE * (2 * ar::MAX_ALL_REDUCE_BLOCKS + 3) * 4 <= kBarrierBytes, "barrier flags fit");

artest_world world;
uint32_t flag; // the last call's barrier flag (deserialize's counter)
thread_local char err[512];

int fail(const char *what, const char *why) {
	snprintf(err, sizeof err, "trtllm: %s: %s", what, why);
	return ARTEST_ERROR;
}

int setup(const artest_world *w) {
	if (w->control_bytes < kControlBytes || w->staging_bytes < 2 * kMaxBytes)
		return fail("setup", "control region or staging buffer smaller than declared");
	int dev = -1;
	cudaError_t e = cudaGetDevice(&dev);
	if (e != cudaSuccess)
		return fail("setup", cudaGetErrorString(e));
	if (dev != w->device)
		return fail("setup", "the CUDA runtime's current device is not artest's");
	world = *w;
	flag = 0;
	return ARTEST_OK;
}

template <typename T> cudaError_t run(const artest_call *c, ar::AllReduceStrategyType strat, cudaStream_t s) {
	uint32_t n = world.world_size;
	++flag;
	ar::AllReduceParams<T> p{};
	p.elts_total = c->count;
	p.local_rank = world.rank;
	p.ranks_per_node = n;
	p.local_input_buffer_ptr = c->input;
	p.local_output_buffer_ptr = c->output;
	p.barrier_flag = flag;
	uint64_t half = flag % 2 == 0 ? 0 : kMaxBytes;
	for (uint32_t r = 0; r < n; r++) {
		p.peer_comm_buffer_ptrs[r] = (char *)world.staging[r] + half;
		p.peer_barrier_ptrs_in[r] = (uint32_t *)world.control[r];
		p.peer_barrier_ptrs_out[r] = (uint32_t *)((char *)world.control[r] + kBarrierBytes);
	}
	p.fusion_params.hidden_size = (int)c->count;
	return ar::customAllReduce<T>(p, strat, ar::AllReduceStrategyConfig(0), ar::AllReduceFusionOp::NONE,
	                              /*launch_with_pdl=*/false, s);
}

int allreduce(const artest_call *c) {
	if (c->op != ARTEST_SUM)
		return fail("allreduce", "sum only");
	uint32_t n = world.world_size;
	if (!(n == 2 || n == 4 || n == 6 || n == 8 || n == 16))
		return fail("allreduce", "TensorRT-LLM's custom allreduce runs 2, 4, 6, 8 or 16 ranks");
	if (c->count == 0) // kernelLaunchConfig would pick 0 threads
		return ARTEST_OK;
	ar::AllReduceStrategyType strat = c->variant == 0 ? ar::AllReduceStrategyType::ONESHOT : ar::AllReduceStrategyType::TWOSHOT;
	uint64_t elem = c->dtype == ARTEST_F32 ? 4 : 2;
	if (c->variant == 1 && (c->count * elem) % (16 * n) != 0)
		return fail("allreduce", "twoshot needs a message of a multiple of 16 bytes times the ranks");
	cudaStream_t s = (cudaStream_t)(uintptr_t)c->stream;
	cudaError_t e;
	try {
		switch (c->dtype) {
		case ARTEST_F16: e = run<half>(c, strat, s); break;
		case ARTEST_BF16: e = run<__nv_bfloat16>(c, strat, s); break;
		case ARTEST_F32: e = run<float>(c, strat, s); break;
		default: return fail("allreduce", "unsupported dtype");
		}
	} catch (const std::exception &x) {
		return fail("allreduce", x.what());
	}
	if (e == cudaSuccess)
		e = cudaGetLastError(); // the header ignores cudaLaunchKernelEx's status
	if (e != cudaSuccess)
		return fail("allreduce", cudaGetErrorString(e));
	return ARTEST_OK;
}

const char *last_error() { return err; }

artest_variant variant(const char *name, const char *summary, uint32_t align) {
	artest_variant v = {};
	v.name = name;
	v.summary = summary;
	v.dtypes = ARTEST_BIT(ARTEST_F32) | ARTEST_BIT(ARTEST_F16) | ARTEST_BIT(ARTEST_BF16);
	v.ops = ARTEST_BIT(ARTEST_SUM);
	v.min_ranks = 2;
	v.max_ranks = 16;
	v.max_bytes = kMaxBytes;
	v.align_bytes = align;
	v.needs_registered_input = 0; // the kernel copies the input into its comm buffer
	v.order = ARTEST_ORDER_UNKNOWN;
	return v;
}

// Index 0 is oneshot, 1 twoshot (allreduce picks the strategy by it).
const artest_variant variants[] = {
    variant("oneshot", "TensorRT-LLM's one-shot allreduce (flashinfer-python 0.7.2.post1 header): ping-pong comm buffers, block barrier", 16),
    variant("twoshot", "TensorRT-LLM's two-shot allreduce (flashinfer-python 0.7.2.post1 header): reduce-scatter, block barrier, all-gather", 128),
};

artest_plugin describe() {
	artest_plugin p = {};
	p.abi_version = ARTEST_PLUGIN_ABI_VERSION;
	p.nvariants = 2;
	p.name = "trtllm";
	p.variants = variants;
	p.staging_bytes = 2 * kMaxBytes;
	p.control_bytes = kControlBytes;
	p.setup = setup;
	p.allreduce = allreduce;
	p.last_error = last_error;
	return p;
}

const artest_plugin plugin = describe();

} // namespace

extern "C" const artest_plugin *artest_plugin_v1(void) { return &plugin; }

// Both kernels copy the caller's input into this rank's comm buffer
// (COPY_INPUT) and peers read only the comm buffers, which alternate by
// the barrier flag's parity: a rank may return while a peer still reads
// the buffer of this call, since the next call writes the other one and
// the call after that waits at its barrier for every peer. Stress's
// witness then reports their leads without a warning.
namespace {
const char *const early_reasons[] = {
    "the kernel copies the input into its own comm buffers, alternated by the barrier flag's parity: peers never read the caller's buffers",
    "the kernel copies the input into its own comm buffers, alternated by the barrier flag's parity: peers never read the caller's buffers",
};
const artest_early_return early = {ARTEST_EARLY_RETURN_VERSION, 2, early_reasons};
} // namespace

extern "C" const artest_early_return *artest_early_return_v1(void) { return &early; }
