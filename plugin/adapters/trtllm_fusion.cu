// trtllm_fusion.cu: an adapter plugin for the allreduce-only pattern of
// TensorRT-LLM's fusion allreduce, as the pinned flashinfer-python wheel
// ships it (flashinfer/comm/trtllm_allreduce_fusion.cuh), trtllm.cu's
// sibling. Nothing of it is copied here: `make plugins` downloads the wheel
// (ci/install-flashinfer.sh) and this file only #includes the header and
// calls its launcher,
//
//   trtllm_allreduce_fusion::allreduce_fusion_kernel_launcher<
//       AllReduceFusionPattern::kAllReduce, T, NRanks, Fp32Acc>(params, launch_with_pdl)
//
// which is what the header's public allreduce_fusion_op<T>(params, pdl,
// fp32_acc) dispatches to for pattern kAllReduce; called one level down so
// that the nine fusion patterns (RMSNorm, FP8 and FP4 quantisation) are not
// compiled. Both kernels of the header run here, without multicast:
//
//   - allreduce_fusion_kernel_oneshot_lamport (use_oneshot = true): every
//     rank pushes its message into every rank's Lamport buffer and polls its
//     own until no 16-byte vector of it holds -0.0, the header's "not yet
//     written" sentinel; real -0.0 inputs are rewritten to +0.0 before the
//     push (remove_neg_zero). No barrier at all.
//   - allreduce_fusion_kernel_twoshot_sync (use_oneshot = false): each rank
//     copies its message into its own comm buffer, a block barrier, each rank
//     reduces its share of tokens and writes the sums into every rank's comm
//     buffer, a second barrier, each rank reads its own.
//
// Four variants, two per kernel, by the launcher's Fp32Acc:
// trtllm-fusion:oneshot and :twoshot accumulate in the element type
// (fp32_acc = false, the default of the wheel's Python allreduce_fusion),
// :oneshot-fp32acc and :twoshot-fp32acc in fp32 (for f32 the two are the
// same kernel).
//
// How AllReduceFusionParams is filled:
//   - nranks, rank: the world's; size: the call's element count; hidden_dim:
//     the header reduces a [tokens x hidden_dim] tensor, one cluster per
//     token; the adapter takes as token the largest divisor of the message's
//     16-byte vectors that is at most kMaxTokenVectors (256: hidden_dim 2048
//     in bf16), so every 16-byte-aligned size has a shape; a width with no
//     factor of 2 is one block of that many threads, and 256 of them fit the
//     register file at 16 ranks (up to about 150 registers per thread in
//     this build), where 512 would not;
//   - allreduce_in / allreduce_out: the call's input and output (no peer
//     reads either: the one-shot pushes copies, the two-shot copies into its
//     comm buffer), so the input need not be registered, and in place is
//     the kernels' own business (each thread reads its input vector before it
//     writes that output vector); residual, norm, quant and scale pointers
//     stay null (pattern kAllReduce reads none of them);
//   - workspace: a device array of 3 * NRanks + 1 pointers, laid out as the
//     header reads it (SyncComm, LamportComm):
//       [r]             rank r's two-shot comm buffer: the start of its
//                       staging buffer, 2 x kTwoshotMaxBytes (the message,
//                       then the reduced tokens at tot_access);
//       [NRanks + r]    rank r's barrier flags: kBarrierFlagCount x NRanks
//                       ints in its control region (zeroed by artest; the
//                       barrier's flags cycle 0, 1, 2 from there);
//       [2 NRanks + r]  rank r's Lamport buffer: three slots of NRanks x
//                       kLamportMaxBytes in its staging buffer, after the
//                       comm buffer;
//       [3 NRanks]      this rank's words, in its control region: the block
//                       counter, the two-shot flag, the Lamport slot index,
//                       the Lamport slot size in bytes (set at set-up) and the
//                       size the next call clears (all else zeroed by artest).
//     There are two such workspaces, one for f16 and bf16 and one for f32,
//     each with its own Lamport buffers, barrier flags and words, sharing
//     the comm buffer: the sentinel is the element type's -0.0 (0x8000 per
//     16-bit element, 0x80000000 per f32 one) and a call clears the slot of
//     the call before it in its own element type, so one buffer cannot serve
//     both widths; flashinfer sizes one workspace per dtype for that reason.
//     The comm buffer is shared safely: a call reads a peer's comm buffer
//     only between its two barriers.
//   - Lamport initialisation and rotation: set-up fills this rank's three
//     slots with the element type's -0.0 (a small kernel of this file; the
//     header's sentinel bits are neg_zero<T>::neg_zero_bits) and writes the
//     slot size into word 3; every rank's set-up finishes before artest's
//     first call (artest agrees on the set-ups' results across ranks). The
//     kernel then rotates by itself, on the device: call k writes slot k % 3
//     (word 2), clears this rank's slot (k - 1) % 3 for the size the previous
//     call of this workspace used (word 4), and block 0 advances words 2 and
//     4 once every block of the call has counted itself in (word 0).
//   - launch_with_pdl = false; trigger_completion_at_end = true; blocks,
//     threads and cluster size are the launcher's own (from the token shape,
//     the SM count and the kernel's registers: a grid of at most the SM
//     count, clusters of at most 8 blocks).
//
// Graph capture: all the protocol's state (flags, slot index, clear size,
// counter) is in device memory and advanced by the kernels, so a replayed
// graph rotates the slots and cycles the flags as a fresh launch does; the
// host keeps nothing between calls. The launcher's one-time queries (SM
// version, SM count, registers per thread, largest cluster: function-local
// statics, filled at the first call of each dtype, world size and
// accumulation) are host-side calls, none a stream operation; they run
// inside a capture if that first call is captured. Set-up loads every kernel
// the world size uses (cudaFuncGetAttributes) so that none loads lazily
// inside a capture.
//
// What the header requires, and how it is declared:
//   - sum only (the kernels add); f32, f16, bf16;
//   - 2, 4, 8 or 16 ranks (allreduce_fusion_op's dispatch): min 2, max 16; a
//     world of another size fails at set-up, and so does each of its cases,
//     with that reason;
//   - 16-byte vectors: size % hidden_dim == 0 and hidden_dim % (16 bytes) ==
//     0: align_bytes 16 (one-shot); the two-shot's barrier needs blocks of
//     at least NRanks threads, which a token of at least 16 vectors gives:
//     align_bytes 256 (two-shot);
//   - message: the Lamport slot holds NRanks messages: kLamportMaxBytes
//     (1 MiB: kOneShotMaxToken, 128, tokens of 4096 bf16 elements) for the
//     one-shot; the comm buffer holds two: kTwoshotMaxBytes (16 MiB) for the
//     two-shot. staging_bytes covers 16 ranks (128 MiB per rank).
//
// Reduction order: the fp32acc variants are ARTEST_ORDER_RANKS_ASCENDING_F32
// (allreduce_sum<.., Fp32Acc = true> starts from rank 0's value converted to
// fp32, adds ranks 1, 2, ... in fp32 and rounds once; for f32 vec_add adds
// ranks 0, 1, ... in fp32), checked bit for bit. Not for -0.0 inputs: the
// one-shot rewrites them to +0.0 before it reduces, so a sum of -0.0 from
// every rank comes out +0.0 (artest's random and exact inputs are never
// -0.0). The others are ARTEST_ORDER_UNKNOWN: vec_add rounds to the element
// type after every addition (at 2 ranks that is the same single rounding).
//
// Staging is state: the Lamport slots must hold -0.0 wherever the next calls
// will poll, between calls, and artest's own variants (and other plugins)
// use the staging buffers as scratch. Run these variants alone in a run
// (--variant trtllm-fusion:...): another variant's call in between leaves
// stale data that a later poll takes as written (wrong sums) or overwrites
// a peer's pushed data with its own (a hang).
//
// Not adapted, of the header's kernels: the fusion patterns
// (kARResidualRMSNorm and its FP8, FP4, per-token-group FP8 and dynamic FP8
// quantising forms, with and without the norm output): their outputs are a
// residual sum, a norm and a quantised tensor, not an allreduce that artest
// can check; the launch with PDL (launch_with_pdl, and
// trigger_completion_at_end = false, which only matters with it): the ABI
// does not tell a plugin to wait for the producer, and artest skips plugin
// cases under --pdl. Of the wheel's other comm headers,
// trtllm_mnnvl_allreduce.cuh (both its kernels store through a multicast
// address of MNNVL fabric memory), trtllm_moe_allreduce_fusion.cuh (the MoE
// expert reduction or finalisation fused with the allreduce, residual and
// norm: fusion only) and mixed_comm.cuh (NVSHMEM and multicast) are not
// adapted; plugin/adapters/pcie_ipc.cu covers pcie_ipc_all_reduce.cuh.
//
// Unverified on a GPU: compiled only (make plugins-adapters-check).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <exception>
#include <type_traits>

#include <flashinfer/comm/trtllm_allreduce_fusion.cuh>

#include "artest_plugin.h"

namespace {

namespace fu = flashinfer::trtllm_allreduce_fusion;
constexpr fu::AllReduceFusionPattern kAllReduce = fu::AllReduceFusionPattern::kAllReduce;

constexpr uint32_t kMaxRanks = 16;
constexpr uint64_t kVectorBytes = fu::details::kBytesPerAccess;
constexpr uint64_t kMaxTokenVectors = 256;
constexpr uint64_t kLamportMaxBytes = 1u << 20;
constexpr uint64_t kTwoshotMaxBytes = 16u << 20;
constexpr uint64_t kCommBytes = 2 * kTwoshotMaxBytes;
// Per workspace: 3 slots of kMaxRanks messages (a world of n ranks uses n).
constexpr uint64_t kLamportBytes = 3 * kMaxRanks * kLamportMaxBytes;
constexpr uint64_t kStagingBytes = kCommBytes + 2 * kLamportBytes;

// Control region per workspace: the barrier flags, then the words.
constexpr uint64_t kFlagBytes = (uint64_t)fu::details::kBarrierFlagCount * kMaxRanks * sizeof(int);
constexpr uint64_t kWordsBytes = 64;
constexpr uint64_t kWorkspaceControlBytes = kFlagBytes + kWordsBytes;
constexpr uint64_t kControlBytes = 2 * kWorkspaceControlBytes;
constexpr int kSlotSizeWord = 3; // LamportComm reads the slot size from word 3
static_assert(kMaxRanks * kLamportMaxBytes <= (uint64_t)INT32_MAX, "the slot size is an int");
static_assert(kControlBytes <= ARTEST_MAX_CONTROL_BYTES, "control region");

// The sentinel, one 32-bit word of it: the header's -0.0 bits.
static_assert(fu::neg_zero<half>::neg_zero_bits == fu::neg_zero<nv_bfloat16>::neg_zero_bits, "f16 and bf16 share a workspace");
constexpr uint32_t kNegZero16 = (uint32_t)fu::neg_zero<half>::neg_zero_bits * 0x10001u;
constexpr uint32_t kNegZero32 = fu::neg_zero<float>::neg_zero_bits;

enum Workspace { kWs16 = 0, kWs32 = 1 };

artest_world world;
void **workspace[2]; // device arrays of 3 * n + 1 pointers
thread_local char err[512];

int fail(const char *what, const char *why) {
	snprintf(err, sizeof err, "trtllm-fusion: %s: %s", what, why);
	return ARTEST_ERROR;
}

__global__ void fill_words(uint32_t *p, uint64_t n, uint32_t v) {
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
		p[i] = v;
}

template <typename T, int N, bool Acc> cudaError_t load_one() {
	cudaFuncAttributes a;
	cudaError_t e = cudaFuncGetAttributes(&a, fu::allreduce_fusion_kernel_oneshot_lamport<kAllReduce, T, N, Acc, true>);
	if (e == cudaSuccess)
		e = cudaFuncGetAttributes(&a, fu::allreduce_fusion_kernel_twoshot_sync<kAllReduce, T, N, Acc>);
	return e;
}

template <int N> cudaError_t load() {
	cudaError_t e = load_one<float, N, false>();
	if (e == cudaSuccess) e = load_one<half, N, false>();
	if (e == cudaSuccess) e = load_one<half, N, true>();
	if (e == cudaSuccess) e = load_one<nv_bfloat16, N, false>();
	if (e == cudaSuccess) e = load_one<nv_bfloat16, N, true>();
	return e;
}

cudaError_t load_world(uint32_t n) {
	switch (n) {
	case 2: return load<2>();
	case 4: return load<4>();
	case 8: return load<8>();
	case 16: return load<16>();
	}
	return cudaErrorInvalidValue;
}

// workspace_of fills workspace w of a world of n ranks (see the top).
cudaError_t workspace_of(int w, uint32_t n, uint64_t slot) {
	void *ptrs[3 * kMaxRanks + 1] = {};
	uint64_t lamport = kCommBytes + (uint64_t)w * 3 * slot;
	for (uint32_t r = 0; r < n; r++) {
		char *ctl = (char *)world.control[r] + (uint64_t)w * kWorkspaceControlBytes;
		ptrs[r] = world.staging[r];
		ptrs[n + r] = ctl;
		ptrs[2 * n + r] = (char *)world.staging[r] + lamport;
	}
	char *words = (char *)world.control[world.rank] + (uint64_t)w * kWorkspaceControlBytes + kFlagBytes;
	ptrs[3 * n] = words;
	int slot_bytes = (int)slot;
	uint32_t sentinel = w == kWs16 ? kNegZero16 : kNegZero32;
	cudaError_t e = cudaMalloc(&workspace[w], (3 * n + 1) * sizeof(void *));
	if (e == cudaSuccess)
		e = cudaMemcpy(workspace[w], ptrs, (3 * n + 1) * sizeof(void *), cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = cudaMemcpy(words + kSlotSizeWord * sizeof(int), &slot_bytes, sizeof slot_bytes, cudaMemcpyHostToDevice);
	if (e == cudaSuccess) {
		fill_words<<<256, 256>>>((uint32_t *)((char *)world.staging[world.rank] + lamport), 3 * slot / 4, sentinel);
		e = cudaGetLastError();
	}
	return e;
}

int setup(const artest_world *w) {
	uint32_t n = w->world_size;
	if (w->backend != ARTEST_BACKEND_CUDA)
		return fail("setup", "the cuda backend only (the kernels are CUDA's)");
	if (!(n == 2 || n == 4 || n == 8 || n == 16))
		return fail("setup", "the fusion allreduce runs 2, 4, 8 or 16 ranks");
	uint64_t slot = n * kLamportMaxBytes;
	if (w->control_bytes < kControlBytes || w->staging_bytes < kCommBytes + 2 * 3 * slot)
		return fail("setup", "control region or staging buffer smaller than declared");
	int dev = -1;
	cudaError_t e = cudaGetDevice(&dev);
	if (e != cudaSuccess)
		return fail("setup", cudaGetErrorString(e));
	if (dev != w->device)
		return fail("setup", "the CUDA runtime's current device is not artest's");
	world = *w;
	e = load_world(n);
	if (e == cudaSuccess) e = workspace_of(kWs16, n, slot);
	if (e == cudaSuccess) e = workspace_of(kWs32, n, slot);
	if (e == cudaSuccess) e = cudaDeviceSynchronize(); // the fills end before set-up returns
	if (e != cudaSuccess)
		return fail("setup", cudaGetErrorString(e));
	return ARTEST_OK;
}

template <typename T, int N, bool Acc> cudaError_t launch(const fu::AllReduceFusionParams<T> &p) {
	return fu::allreduce_fusion_kernel_launcher<kAllReduce, T, N, Acc>(p, /*launch_with_pdl=*/false);
}

template <typename T, bool Acc> cudaError_t launch_ranks(const fu::AllReduceFusionParams<T> &p) {
	switch (p.nranks) {
	case 2: return launch<T, 2, Acc>(p);
	case 4: return launch<T, 4, Acc>(p);
	case 8: return launch<T, 8, Acc>(p);
	case 16: return launch<T, 16, Acc>(p);
	}
	return cudaErrorInvalidValue;
}

// token_vectors is the token width in 16-byte vectors for a message of
// vectors: its largest divisor not above kMaxTokenVectors.
uint64_t token_vectors(uint64_t vectors) {
	for (uint64_t t = vectors < kMaxTokenVectors ? vectors : kMaxTokenVectors; t > 1; t--)
		if (vectors % t == 0)
			return t;
	return 1;
}

struct Kind {
	bool oneshot, fp32acc;
};
// In the order of variants[] below.
constexpr Kind kinds[] = {{true, false}, {true, true}, {false, false}, {false, true}};

template <typename T> cudaError_t run(const artest_call *c, Kind k, cudaStream_t s) {
	uint64_t vectors = c->count * sizeof(T) / kVectorBytes;
	fu::AllReduceFusionParams<T> p{};
	p.nranks = (int)world.world_size;
	p.rank = (int)world.rank;
	p.size = (int)c->count;
	p.hidden_dim = (int)(token_vectors(vectors) * (kVectorBytes / sizeof(T)));
	p.workspace = workspace[std::is_same_v<T, float> ? kWs32 : kWs16];
	p.allreduce_in = const_cast<void *>(c->input);
	p.allreduce_out = c->output;
	p.use_oneshot = k.oneshot;
	p.stream = s;
	p.pattern = kAllReduce;
	p.trigger_completion_at_end = true;
	if constexpr (std::is_same_v<T, float>)
		return launch_ranks<T, false>(p); // Fp32Acc is for 16-bit types only
	else
		return k.fp32acc ? launch_ranks<T, true>(p) : launch_ranks<T, false>(p);
}

int allreduce(const artest_call *c) {
	if (!workspace[kWs16])
		return fail("allreduce", "no setup");
	if (c->op != ARTEST_SUM)
		return fail("allreduce", "sum only");
	if (c->count == 0) // the launcher would pick an empty grid
		return ARTEST_OK;
	if (c->variant >= sizeof kinds / sizeof kinds[0])
		return fail("allreduce", "no such variant");
	Kind k = kinds[c->variant];
	uint64_t elem = c->dtype == ARTEST_F32 ? 4 : 2;
	uint64_t bytes = c->count * elem;
	if (bytes % (k.oneshot ? kVectorBytes : 16 * kVectorBytes) != 0)
		return fail("allreduce", k.oneshot ? "the message must be a multiple of 16 bytes" : "the message must be a multiple of 256 bytes");
	if (bytes > (k.oneshot ? kLamportMaxBytes : kTwoshotMaxBytes))
		return fail("allreduce", "message larger than declared");
	cudaStream_t s = (cudaStream_t)(uintptr_t)c->stream;
	cudaError_t e;
	try {
		switch (c->dtype) {
		case ARTEST_F16: e = run<half>(c, k, s); break;
		case ARTEST_BF16: e = run<nv_bfloat16>(c, k, s); break;
		case ARTEST_F32: e = run<float>(c, k, s); break;
		default: return fail("allreduce", "unsupported dtype");
		}
	} catch (const std::exception &x) {
		return fail("allreduce", x.what());
	}
	if (e != cudaSuccess)
		return fail("allreduce", cudaGetErrorString(e));
	return ARTEST_OK;
}

void teardown() {
	for (void **&w : workspace) {
		if (w)
			cudaFree(w);
		w = nullptr;
	}
}

const char *last_error() { return err; }

artest_variant variant(const char *name, const char *summary, Kind k) {
	artest_variant v = {};
	v.name = name;
	v.summary = summary;
	v.dtypes = ARTEST_BIT(ARTEST_F32) | ARTEST_BIT(ARTEST_F16) | ARTEST_BIT(ARTEST_BF16);
	v.ops = ARTEST_BIT(ARTEST_SUM);
	v.min_ranks = 2;
	v.max_ranks = kMaxRanks;
	v.max_bytes = k.oneshot ? kLamportMaxBytes : kTwoshotMaxBytes;
	v.align_bytes = k.oneshot ? kVectorBytes : 16 * kVectorBytes;
	v.needs_registered_input = 0; // no peer reads the input
	v.order = k.fp32acc ? ARTEST_ORDER_RANKS_ASCENDING_F32 : ARTEST_ORDER_UNKNOWN;
	return v;
}

const artest_variant variants[] = {
    variant("oneshot", "TensorRT-LLM's Lamport one-shot allreduce, fusion pattern kAllReduce (flashinfer-python 0.7.2.post1 header): -0.0 sentinel, no barrier", kinds[0]),
    variant("oneshot-fp32acc", "the same Lamport one-shot accumulating in fp32 (fp32_acc)", kinds[1]),
    variant("twoshot", "TensorRT-LLM's two-shot fusion allreduce, pattern kAllReduce (flashinfer-python 0.7.2.post1 header): comm buffers, two block barriers", kinds[2]),
    variant("twoshot-fp32acc", "the same two-shot accumulating in fp32 (fp32_acc)", kinds[3]),
};
static_assert(sizeof variants / sizeof variants[0] == sizeof kinds / sizeof kinds[0], "one kind per variant");

artest_plugin describe() {
	artest_plugin p = {};
	p.abi_version = ARTEST_PLUGIN_ABI_VERSION;
	p.nvariants = sizeof variants / sizeof variants[0];
	p.name = "trtllm-fusion";
	p.variants = variants;
	p.staging_bytes = kStagingBytes;
	p.control_bytes = kControlBytes;
	p.setup = setup;
	p.allreduce = allreduce;
	p.teardown = teardown;
	p.last_error = last_error;
	return p;
}

const artest_plugin plugin = describe();

} // namespace

extern "C" const artest_plugin *artest_plugin_v1(void) { return &plugin; }
