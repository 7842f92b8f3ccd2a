// cuda_oneshot.cu: the example plugin, a plain one-shot allreduce over CUDA
// IPC memory that artest hands it (plugin/README.md walks through it).
// Every rank reads every rank's registered input, reduces in rank order in
// fp32, rounds once and writes its output; a start barrier (peers' inputs are
// ready) and an end barrier (peers are done reading ours) on the control
// regions, one flag per block and peer. The call number lives on the device
// (Control::epoch), so CUDA graph replays count too. It launches only on
// the stream artest passes and never synchronises, so artest's graph
// capture records its kernels.
//
// It uses artest's device helpers (artest_device.h): flags are set with
// artest_put and awaited with artest_wait, so a lost peer ends in a give-up
// record at artest's deadline instead of a hung GPU, and block 0 ends each
// call with artest_trace; artest_device_info_v1 declares it. Built with
// -DEXAMPLE_NO_DEVICE_INFO it does not export that symbol: artest passes no
// device fields, the waits have no deadline, nothing is traced.
//
// Planted bugs for artest's own tests, declared as fault switches
// (artest_faults_v1: --inject example:NAME turns one on for a run) and also
// chosen with the environment variable ARTEST_EXAMPLE_BUG=NAME, as in the
// host twin: "skip-last" leaves the last element
// unwritten (the poison must catch it), "no-end-barrier" skips the end
// barrier and makes the last rank read about 200 us late (stress must catch
// a peer's next input read by this call), "no-trace" skips artest_trace (the
// trace check must catch it), "hang": the last rank never tells its peers it
// reached the start barrier (they must give up at the deadline, naming it),
// "spin": the last rank's block 0 spins forever on a flag no one sets,
// outside artest's deadline (a kernel that never returns: artest's
// watchdog must end the job), "spin-sync": the same, and every call then
// waits for its kernel (cudaStreamSynchronize, outside a graph capture),
// so the last rank's main thread blocks inside the plugin's call.
//
// Build (make plugins-cuda):
//   nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler -fPIC -shared -I<artest>/plugin -o cuda_oneshot.so cuda_oneshot.cu
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artest_device.h"

namespace {

constexpr int kMaxBlocks = 64, kThreads = 512;

struct Control { // one per rank, zeroed by artest
	uint64_t start[kMaxBlocks][ARTEST_MAX_RANKS]; // start[b][p]: peer p reached call e
	uint64_t end[kMaxBlocks][ARTEST_MAX_RANKS];
	uint64_t epoch[kMaxBlocks]; // calls finished by this rank's block b
	uint64_t never;             // no one writes it: the "spin" bug waits for it
};

// Wait points, named in artest_device_info_v1 for the diagnosis.
enum : uint32_t { kPointStart = 0, kPointEnd = 1 };

// Planted bugs, in artest_faults_v1's order: bit i of a call's faults (the
// kernel plays no-end-barrier, no-trace, hang and spin; skip-last is the
// host's, a shorter count; spin-sync is spin and the host's wait).
enum : uint32_t { kBugSkipLast, kBugNoEnd, kBugNoTrace, kBugHang, kBugSpin, kBugSpinSync, kBugs };
const artest_fault bug_names[kBugs] = {
	{"skip-last", "the last element is not written"},
	{"no-end-barrier", "the call skips its end barrier and the last rank reads about 200 us late"},
	{"no-trace", "the kernel does not write the trace word"},
	{"hang", "the last rank never tells its peers it reached the start barrier"},
	{"spin", "the last rank's kernel spins for ever"},
	{"spin-sync", "the last rank's kernel spins for ever and every call waits for its kernel"},
};
__host__ __device__ constexpr uint32_t bit(uint32_t b) { return 1u << b; }

struct Peers {
	const char *in[ARTEST_MAX_RANKS];
	Control *ctl[ARTEST_MAX_RANKS];
};

artest_world world;
char err[256];
uint32_t env_bugs; // ARTEST_EXAMPLE_BUG's, read at setup: bit(kBug*)

__device__ float to_f(float x) { return x; }
__device__ float to_f(__half x) { return __half2float(x); }
__device__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ T from_f(float x);
template <> __device__ float from_f<float>(float x) { return x; }
template <> __device__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// A wait that gives up (artest's deadline) makes the whole block leave:
// __syncthreads_or tells every thread, so none is left at a barrier the
// others never reach. artest reads the record when the stream is done.
template <typename T, int OP>
__global__ void __launch_bounds__(kThreads) oneshot(Peers P, int rank, int n, size_t offset, size_t count, T *out, T *stage,
                                                    artest_device d, uint32_t bug) {
	Control *me = P.ctl[rank];
	const int b = blockIdx.x, t = threadIdx.x;
	const uint64_t e = me->epoch[b] + 1;
	bool quit = false;
	if ((bug & (bit(kBugSpin) | bit(kBugSpinSync))) && rank == n - 1 && b == 0 && t == 0) // the planted kernel that never returns
		while (*(volatile uint64_t *)&me->never == 0)
			;
	if (t < n) { // start barrier
		if (!((bug & bit(kBugHang)) && rank == n - 1 && t != rank)) // the planted hang: peers never hear of the last rank
			artest_put(&P.ctl[t]->start[b][rank], e);
		quit = !artest_wait(&d, &me->start[b][t], e, t, kPointStart);
	}
	if (__syncthreads_or(quit))
		return;
	const bool end_barrier = !(bug & bit(kBugNoEnd));
	if (!end_barrier && rank == n - 1) // the planted bug's slow reader: the last rank reads late
		for (int k = 0; k < 200; k++)
			__nanosleep(1000);
	T *dst = stage ? stage : out; // in place: peers still read our input
	for (size_t i = (size_t)b * blockDim.x + t; i < count; i += (size_t)gridDim.x * blockDim.x) {
		float acc = to_f(((const T *)(P.in[0] + offset))[i]);
		for (int r = 1; r < n; r++) {
			float x = to_f(((const T *)(P.in[r] + offset))[i]);
			acc = OP == ARTEST_SUM ? acc + x : OP == ARTEST_MAX ? fmaxf(acc, x) : fminf(acc, x);
		}
		dst[i] = from_f<T>(acc);
	}
	__syncthreads();
	if (end_barrier && t < n) { // end barrier: peers' block b read all they read of our input
		artest_put(&P.ctl[t]->end[b][rank], e);
		quit = !artest_wait(&d, &me->end[b][t], e, t, kPointEnd);
	}
	if (__syncthreads_or(quit))
		return;
	if (stage)
		for (size_t i = (size_t)b * blockDim.x + t; i < count; i += (size_t)gridDim.x * blockDim.x)
			out[i] = stage[i];
	if (t == 0)
		me->epoch[b] = e;
	if (b == 0 && t == 0 && !(bug & bit(kBugNoTrace))) // once per call, after block 0's end barrier
		artest_trace(&d);
}

template <typename T>
void launch(const artest_call *c, const Peers &P, int blocks, cudaStream_t s, uint32_t bugs) {
	bool late = (c->flags & ARTEST_CALL_IN_PLACE) && (c->flags & ARTEST_CALL_REGISTERED);
	T *out = (T *)c->output, *stage = late ? (T *)world.staging[world.rank] : nullptr;
	int r = (int)world.rank, n = (int)world.world_size;
	size_t written = (bugs & bit(kBugSkipLast)) && c->count > 0 ? c->count - 1 : c->count;
	artest_device d = artest_device_of(c);
	switch (c->op) {
	case ARTEST_SUM: oneshot<T, ARTEST_SUM><<<blocks, kThreads, 0, s>>>(P, r, n, c->offset, written, out, stage, d, bugs); break;
	case ARTEST_MAX: oneshot<T, ARTEST_MAX><<<blocks, kThreads, 0, s>>>(P, r, n, c->offset, written, out, stage, d, bugs); break;
	default: oneshot<T, ARTEST_MIN><<<blocks, kThreads, 0, s>>>(P, r, n, c->offset, written, out, stage, d, bugs);
	}
}

// load makes the runtime load every kernel now, outside any stream capture
// (with lazy loading a kernel would otherwise load at its first launch).
template <typename T> cudaError_t load() {
	cudaFuncAttributes a;
	cudaError_t e = cudaFuncGetAttributes(&a, oneshot<T, ARTEST_SUM>);
	if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, oneshot<T, ARTEST_MAX>);
	if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, oneshot<T, ARTEST_MIN>);
	return e;
}

int setup(const artest_world *w) {
	if (w->control_bytes < sizeof(Control)) {
		snprintf(err, sizeof err, "control region of %llu bytes, need %zu", (unsigned long long)w->control_bytes, sizeof(Control));
		return ARTEST_ERROR;
	}
	// artest made its GPU's primary context current on this thread: the
	// runtime must find it there.
	int dev = -1;
	cudaError_t e = cudaGetDevice(&dev);
	if (e == cudaSuccess) e = load<float>();
	if (e == cudaSuccess) e = load<__half>();
	if (e == cudaSuccess) e = load<__nv_bfloat16>();
	if (e != cudaSuccess) {
		snprintf(err, sizeof err, "setup: %s", cudaGetErrorString(e));
		return ARTEST_ERROR;
	}
	if (dev != w->device) {
		snprintf(err, sizeof err, "setup: the CUDA runtime is on device %d, artest on device %d", dev, (int)w->device);
		return ARTEST_ERROR;
	}
	world = *w;
	const char *bug = getenv("ARTEST_EXAMPLE_BUG");
	env_bugs = 0;
	for (uint32_t b = 0; bug && b < kBugs; b++)
		if (strcmp(bug, bug_names[b].name) == 0)
			env_bugs |= bit(b);
	return ARTEST_OK;
}

int allreduce(const artest_call *c) {
	Peers P;
	for (uint32_t r = 0; r < world.world_size; r++) {
		P.in[r] = (const char *)world.input[r];
		P.ctl[r] = (Control *)world.control[r];
	}
	unsigned long long need = (c->count + kThreads - 1) / kThreads;
	int blocks = (int)(need < c->params[0] ? need : c->params[0]);
	if (blocks < 1)
		blocks = 1;
	cudaStream_t s = (cudaStream_t)(uintptr_t)c->stream;
	const uint32_t bugs = env_bugs | artest_faults_of(c);
	switch (c->dtype) {
	case ARTEST_F16: launch<__half>(c, P, blocks, s, bugs); break;
	case ARTEST_BF16: launch<__nv_bfloat16>(c, P, blocks, s, bugs); break;
	default: launch<float>(c, P, blocks, s, bugs);
	}
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess) {
		snprintf(err, sizeof err, "launch: %s", cudaGetErrorString(e));
		return ARTEST_ERROR;
	}
	cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
	if ((bugs & bit(kBugSpinSync)) && cudaStreamIsCapturing(s, &cs) == cudaSuccess && cs == cudaStreamCaptureStatusNone) {
		if ((e = cudaStreamSynchronize(s)) != cudaSuccess) { // the planted synchronous wait
			snprintf(err, sizeof err, "synchronize: %s", cudaGetErrorString(e));
			return ARTEST_ERROR;
		}
	}
	return ARTEST_OK;
}

const char *last_error() { return err; }

artest_variant variant() {
	artest_variant v = {};
	v.name = "oneshot";
	v.summary = "one-shot: every rank reduces all ranks' inputs in rank order in fp32; start and end barriers";
	v.dtypes = ARTEST_BIT(ARTEST_F32) | ARTEST_BIT(ARTEST_F16) | ARTEST_BIT(ARTEST_BF16);
	v.ops = ARTEST_BIT(ARTEST_SUM) | ARTEST_BIT(ARTEST_MAX) | ARTEST_BIT(ARTEST_MIN);
	v.min_ranks = 1;
	v.max_ranks = ARTEST_MAX_RANKS;
	v.needs_registered_input = 1; // artest copies staged inputs in
	v.order = ARTEST_ORDER_RANKS_ASCENDING_F32;
	v.nparams = 1;
	v.params[0] = {"blocks", 36, 1, kMaxBlocks, "thread blocks (512 threads each) at most"};
	return v;
}

const artest_variant variants[] = {variant()};

artest_plugin describe() {
	artest_plugin p = {};
	p.abi_version = ARTEST_PLUGIN_ABI_VERSION;
	p.nvariants = 1;
	p.name = "example";
	p.variants = variants;
	p.control_bytes = sizeof(Control);
	p.setup = setup;
	p.allreduce = allreduce;
	p.last_error = last_error;
	return p;
}

const artest_plugin plugin = describe();

} // namespace

extern "C" const artest_plugin *artest_plugin_v1(void) { return &plugin; }

const artest_faults faults = {ARTEST_FAULTS_VERSION, kBugs, bug_names};

extern "C" const artest_faults *artest_faults_v1(void) { return &faults; }

#ifndef EXAMPLE_NO_DEVICE_INFO
namespace {

artest_device_info describe_device() {
	static artest_device_variant v[1] = {};
	v[0].uses_helpers = 1;
	v[0].npoints = 2;
	v[0].points[kPointStart] = "start barrier";
	v[0].points[kPointEnd] = "end barrier";
	artest_device_info info = {};
	info.version = ARTEST_DEVICE_VERSION;
	info.nvariants = 1;
	info.variants = v;
	return info;
}

const artest_device_info device_info = describe_device();

} // namespace

extern "C" const artest_device_info *artest_device_info_v1(void) { return &device_info; }
#endif
