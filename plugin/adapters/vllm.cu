// vllm.cu: an adapter plugin for vLLM's custom allreduce, as the pinned
// flashinfer-python wheel ships it (flashinfer/comm/vllm_custom_all_reduce.cuh,
// "adapted from sglang + vllm", vLLM v0.8.2's csrc/custom_all_reduce.cuh).
// Nothing of it is copied here: `make plugins` downloads the wheel
// (ci/install-flashinfer.sh) and this file only #includes the header and
// drives its public class, vllm::CustomAllreduce, the way vLLM does:
//
//   - every rank's Signal is the start of its artest control region (zeroed
//     by artest at set-up, as vLLM zeroes its meta buffer); the bytes after
//     the Signal are the header's "tmp" buffer of the two-stage kernel
//     (get_tmp_buf: Signal + 1), so the control region is the ABI's largest;
//   - rank_data is a cudaMalloc'd buffer of RankData slots; register_buffer
//     gets every rank's registered input at one offset (artest opened the
//     peers' over CUDA IPC), and allreduce<T>(stream, input, output, n,
//     blocks, threads) finds the slot by the exact input pointer;
//   - blocks and threads default to vLLM's own (kMaxBlocks = 36, 512).
//
// What the header requires, and how it is declared:
//   - sum only; f32, f16, bf16 (16-bit types are converted to fp32, summed,
//     rounded once);
//   - 2, 4, 6 or 8 ranks (allreduce throws for others): min 2, max 8; a world
//     of 3, 5 or 7 fails at set-up with that reason (the ABI declares a range);
//   - 16-byte packets: element count a multiple of 16 / sizeof(T) and
//     16-byte-aligned addresses: align_bytes 16;
//   - the input must be registered (its exact address): needs_registered_input;
//     the ABI's offset gives each offset its own RankData slot;
//   - the two-stage kernel's tmp buffer (largest rank part of the message)
//     must fit after the Signal in 1 MiB: max_bytes (kMaxBytes below).
//
// Reduction order: UNKNOWN. The one-stage kernel (2 ranks; up to 4 ranks
// below 512 KiB, 8 ranks below 256 KiB) sums ranks 0, 1, ... in fp32 and
// rounds once, which is ARTEST_ORDER_RANKS_ASCENDING_F32, but the two-stage
// kernel (larger messages on 4 to 8 ranks) starts each rank's part at that
// rank (ptrs[i] = rank (rank + i) % ngpus), so a variant covering both
// cannot promise ascending order: sums are checked within the error bound.
//
// Graph capture: while artest captures the stream, the header's allreduce
// does not look the input up; it takes the slot at d_rank_data_base_ +
// graph_unreg_buffers_.size(), which vLLM fills after capture
// (register_graph_buffers). This adapter already knows every peer's address,
// so it points d_rank_data_base_ at the slot registered for the call's
// offset for that one call and drops the unregistered-buffer record after
// it. The slots of offsets 0 to kPreOffset are registered at set-up (every
// offset artest's matrix makes); another offset is registered at its first
// call outside a capture, and first seen inside one it is an error.
//
// In place in the registered buffer: vLLM never does it (its output is
// another tensor), and the one-stage kernel would overwrite this rank's
// input while peers still read it. The adapter writes to this rank's
// staging buffer and copies the result back on the stream (timed with it).
//
// Unverified on a GPU: compiled only (make plugins-adapters-check).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <exception>
#include <unordered_map>

#include <flashinfer/comm/vllm_custom_all_reduce.cuh>

#include "artest_plugin.h"

namespace {

constexpr uint64_t kControlBytes = ARTEST_MAX_CONTROL_BYTES;
constexpr uint64_t kTmpBytes = kControlBytes - sizeof(vllm::Signal);
// The two-stage kernel writes the largest part, (n/w + n%w) packets of 16
// bytes for n packets on w ranks, to the tmp buffer; w = 4 is the smallest
// world that uses it and needs the most: n*16/4 + 3*16 <= kTmpBytes.
constexpr uint64_t kMaxBytes = (4 * (kTmpBytes - 3 * 16)) / 16 * 16;
static_assert(kMaxBytes / 16 < (uint64_t)INT32_MAX, "allreduce takes an int size");
constexpr uint64_t kPreOffset = 4096; // offsets registered at set-up, step 16
constexpr size_t kSlots = 1024;       // RankData slots in rank_data

artest_world world;
vllm::CustomAllreduce *car;
void *rank_data;
// The RankData slot registered for each offset.
std::unordered_map<uint64_t, vllm::RankData *> slots;
thread_local char err[512];

int fail(const char *what, const char *why) {
	snprintf(err, sizeof err, "vllm:custom: %s: %s", what, why);
	return ARTEST_ERROR;
}

// reg registers every rank's registered input at offset with vLLM and
// remembers its slot (register_buffer copies it with cudaMemcpy: outside a
// capture only).
void reg(uint64_t offset) {
	void *ptrs[8] = {};
	for (uint32_t r = 0; r < world.world_size; r++)
		ptrs[r] = (char *)world.input[r] + offset;
	vllm::RankData *slot = car->d_rank_data_base_;
	car->register_buffer(ptrs);
	slots[offset] = slot;
}

template <typename T> cudaError_t load() {
	cudaFuncAttributes a;
	cudaError_t e = cudaSuccess;
	// Load every kernel now, outside any capture (lazy loading would load
	// at the first launch).
#define LOAD(n)                                                                                  \
	if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, vllm::cross_device_reduce_1stage<T, n>); \
	if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, vllm::cross_device_reduce_2stage<T, n>);
	LOAD(2) LOAD(4) LOAD(6) LOAD(8)
#undef LOAD
	return e;
}

int setup(const artest_world *w) {
	if (w->world_size % 2 != 0 || w->world_size > 8)
		return fail("setup", "vLLM's custom allreduce runs 2, 4, 6 or 8 ranks");
	if (w->control_bytes < kControlBytes)
		return fail("setup", "control region smaller than the declared 1 MiB");
	int dev = -1;
	cudaError_t e = cudaGetDevice(&dev);
	if (e == cudaSuccess) e = load<float>();
	if (e == cudaSuccess) e = load<half>();
	if (e == cudaSuccess) e = load<nv_bfloat16>();
	if (e == cudaSuccess) e = cudaMalloc(&rank_data, kSlots * sizeof(vllm::RankData));
	if (e != cudaSuccess)
		return fail("setup", cudaGetErrorString(e));
	if (dev != w->device)
		return fail("setup", "the CUDA runtime's current device is not artest's");
	world = *w;
	try {
		vllm::Signal *sig[8] = {};
		for (uint32_t r = 0; r < w->world_size; r++)
			sig[r] = (vllm::Signal *)w->control[r];
		car = new vllm::CustomAllreduce(sig, rank_data, kSlots * sizeof(vllm::RankData), (int)w->rank, (int)w->world_size,
		                                /*full_nvlink=*/true);
		for (uint64_t off = 0; off <= kPreOffset && off < w->input_bytes; off += 16)
			reg(off);
	} catch (const std::exception &x) {
		return fail("setup", x.what());
	}
	return ARTEST_OK;
}

template <typename T> void run(const artest_call *c, T *out, cudaStream_t s, bool capturing) {
	T *in = (T *)c->input;
	int n = (int)c->count, blocks = (int)c->params[0], threads = (int)c->params[1];
	if (!capturing) {
		car->allreduce<T>(s, in, out, n, blocks, threads);
		return;
	}
	// The slot the header reads while capturing (see the top).
	vllm::RankData *base = car->d_rank_data_base_;
	car->d_rank_data_base_ = slots[c->offset];
	car->graph_unreg_buffers_.clear();
	try {
		car->allreduce<T>(s, in, out, n, blocks, threads);
	} catch (...) {
		car->d_rank_data_base_ = base;
		car->graph_unreg_buffers_.clear();
		throw;
	}
	car->d_rank_data_base_ = base;
	car->graph_unreg_buffers_.clear();
}

int allreduce(const artest_call *c) {
	if (!car)
		return fail("allreduce", "no setup");
	if (c->op != ARTEST_SUM)
		return fail("allreduce", "sum only");
	if (c->count == 0) // the header would launch an empty grid
		return ARTEST_OK;
	if (c->input != (const char *)world.input[world.rank] + c->offset)
		return fail("allreduce", "the input is not in the registered buffer at the call's offset");
	cudaStream_t s = (cudaStream_t)(uintptr_t)c->stream;
	cudaStreamCaptureStatus st;
	cudaError_t e = cudaStreamIsCapturing(s, &st);
	if (e != cudaSuccess)
		return fail("allreduce", cudaGetErrorString(e));
	bool capturing = st == cudaStreamCaptureStatusActive;
	try {
		if (!slots.count(c->offset)) {
			if (capturing)
				return fail("allreduce", "an offset first seen inside a graph capture (registered offsets: 0 to 4096)");
			reg(c->offset);
		}
		// In place in the registered buffer goes through staging (see the top).
		bool in_place = c->output == c->input;
		void *out = in_place ? world.staging[world.rank] : c->output;
		switch (c->dtype) {
		case ARTEST_F16: run<half>(c, (half *)out, s, capturing); break;
		case ARTEST_BF16: run<nv_bfloat16>(c, (nv_bfloat16 *)out, s, capturing); break;
		case ARTEST_F32: run<float>(c, (float *)out, s, capturing); break;
		default: return fail("allreduce", "unsupported dtype");
		}
		if ((e = cudaGetLastError()) == cudaSuccess && in_place)
			e = cudaMemcpyAsync(c->output, out, c->count * (c->dtype == ARTEST_F32 ? 4 : 2), cudaMemcpyDeviceToDevice, s);
		if (e != cudaSuccess)
			return fail("allreduce", cudaGetErrorString(e));
	} catch (const std::exception &x) {
		return fail("allreduce", x.what());
	}
	return ARTEST_OK;
}

void teardown() {
	delete car;
	car = nullptr;
	slots.clear();
	if (rank_data)
		cudaFree(rank_data);
	rank_data = nullptr;
}

const char *last_error() { return err; }

artest_variant variant() {
	artest_variant v = {};
	v.name = "custom";
	v.summary = "vLLM's custom allreduce (flashinfer-python 0.7.2.post1 header): one-stage or two-stage, start/end barriers";
	v.dtypes = ARTEST_BIT(ARTEST_F32) | ARTEST_BIT(ARTEST_F16) | ARTEST_BIT(ARTEST_BF16);
	v.ops = ARTEST_BIT(ARTEST_SUM);
	v.min_ranks = 2;
	v.max_ranks = 8;
	v.max_bytes = kMaxBytes;
	v.align_bytes = 16;
	v.needs_registered_input = 1;
	v.order = ARTEST_ORDER_UNKNOWN;
	v.nparams = 2;
	v.params[0] = {"blocks", (uint32_t)vllm::kMaxBlocks, 1, (uint32_t)vllm::kMaxBlocks, "thread blocks at most (vLLM's block_limit)"};
	v.params[1] = {"threads", 512, 32, 512, "threads per block (vLLM's default 512)"};
	return v;
}

const artest_variant variants[] = {variant()};

artest_plugin describe() {
	artest_plugin p = {};
	p.abi_version = ARTEST_PLUGIN_ABI_VERSION;
	p.nvariants = 1;
	p.name = "vllm";
	p.variants = variants;
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
