// pcie_ipc.cu: an adapter plugin for flashinfer's PCIe IPC allreduce, the SM
// kernels of the pinned flashinfer-python wheel's
// flashinfer/comm/pcie_ipc_all_reduce.cuh (custom allreduces for machines
// without NVLink; they run over NVLink too, as peer stores and loads, and use
// no multicast). Nothing of it is copied here: `make plugins` downloads the
// wheel (ci/install-flashinfer.sh) and this file only #includes the header and
// calls what the wheel's binding calls:
//
//   - set-up: compute_workspace_layout(world_size, max_numel, elem_size,
//     max_blocks) and make_peer_views(ipc_ptrs, world_size, rank, layout),
//     with ipc_ptrs the start of every rank's artest staging buffer, which
//     holds the rank's workspace slab (signal words, pack scratch, block
//     scratch, and the copy-engine part this adapter leaves unused);
//   - call: all_reduce<T>(input, output, numel, views, rank, world_size,
//     max_blocks, max_numel, blocks, threads, variant, use_pdl = false,
//     stream).
//
// The header's Variant picks the kernel with the world size, and each
// Variant is an artest variant:
//
//   pcie-ipc:unstaged     2 ranks ipc_tp2_remote_push_kernel<Stream = false>,
//                         4 push_oneshot_param_kernel, 8 ipc_topo_rsag8_push_param_kernel
//   pcie-ipc:staged       2 ipc_tp2_remote_push_kernel<Stream = true>,
//                         4 ipc_rsag_push_param_kernel<4>, 8 ipc_topo_rsag8_block_param_kernel
//   pcie-ipc:staged-ring  4 ipc_rsag_ring_push_param_kernel<4>, 8 ipc_topo_rsag8_ring_push_param_kernel
//   pcie-ipc:flat-staged  8 ipc_rsag_push_param_kernel<8>
//
// The sentinel kernels (both 2-rank ones, push_oneshot_param_kernel,
// ipc_rsag_push_param_kernel at 4 and 8, ipc_topo_rsag8_push_param_kernel,
// ipc_rsag_ring_push_param_kernel) synchronise through the payload: a rank
// pushes its 16-byte packs into a peer's scratch with every real +0.0
// rewritten to -0.0, the reader polls until no element of a pack is +0.0
// ("not yet written"), then stores +0.0 back; the ring kernel adds per-block
// barriers on the signal words between its passes. The 8-rank topology block
// and ring kernels synchronise by those barriers alone and leave their
// payload in the block scratch, which no sentinel kernel reads (the header
// gives the two families separate scratch regions). Two epoch halves of
// each scratch region alternate by a call counter in this rank's signal
// words, advanced by the kernels.
//
// How the parameters are filled:
//   - max_numel: kMaxBytes / 2 (the largest message in elements of a 2-byte
//     type; elem_size 2, as the binding, which takes f16 and bf16 only);
//     max_blocks: kMaxBlocks (64): the workspace is laid out for that many
//     blocks, and the blocks parameter may not exceed it;
//   - input / output: the call's (no peer reads either: the kernels push
//     copies of the input), so the input need not be registered; in place
//     the kernels read each input pack before the output pack at the same
//     index is written (by the same thread, or by one that first waited for
//     that pack's pushed copy);
//   - blocks, threads: --param blocks=N (1 to 64, default 16) and
//     threads=N (32 to 1024, default 256), the grid the header launches as
//     given; at 8 ranks the staged kernel needs blocks % 4 == 0 (each
//     quarter of the grid takes one chunk), else the call fails with that
//     reason;
//   - the slab: this rank's is zeroed at set-up (the binding's pcie_ipc_init
//     does the same), which is every sentinel's "not yet written" and every
//     counter's start; every rank's set-up finishes before artest's first
//     call (artest agrees on the set-ups' results across ranks).
//
// Graph capture: every counter (epochs, barrier generations, arrival
// counts) is in the slab and advanced by the kernels, so a replayed graph
// behaves as a fresh launch; the host keeps nothing between calls. Set-up
// loads every kernel the world size uses (cudaFuncGetAttributes) so that
// none loads lazily inside a capture.
//
// What the header requires, and how it is declared:
//   - sum only (the kernels add); f16 and bf16 (the kernels have an f32
//     path, but the binding refuses other element sizes, so flashinfer never
//     runs it; not declared);
//   - 2, 4 or 8 ranks: declared per variant (unstaged and staged 2 to 8,
//     staged-ring 4 to 8, flat-staged 8); a world of 3, 5, 6 or 7 ranks
//     fails at set-up, and so does each of its cases, with that reason;
//   - whole 16-byte packs: align_bytes 16;
//   - numel * 2 <= the workspace's max payload: max_bytes kMaxBytes (4 MiB);
//     staging_bytes is the slab of 8 ranks (about 135 MiB per rank).
//
// Reduction order: ARTEST_ORDER_UNKNOWN. At 2 ranks each rank adds its own
// value and its peer's, one rounding (the same sum on both); at 4 and 8 the
// owner of a pack adds ranks in order, or island partial sums pairwise,
// with the 16-bit type's own addition, rounding after every one.
//
// The sentinel rewrite changes signs of zero, read from the header: at 4
// and 8 ranks every input is rewritten before it is added, so +0.0 inputs
// sum to -0.0 where IEEE gives +0.0, and a +0.0 sum that an owner publishes
// to its peers arrives as -0.0 (the owner writes +0.0, its peers -0.0); at
// 2 ranks a rank adds its own input as it is to its peer's rewritten one,
// so a -0.0 and a +0.0 give -0.0 on the rank that holds the -0.0 and +0.0
// on the other. artest's random inputs are never zero; its exact inputs
// (--input exact) can be +0.0 and their sums often are, so at 4 and 8 ranks
// the sentinel kernels are expected to fail bit-exact checks there.
//
// Staging is state: the scratch must hold +0.0 wherever the next calls will
// poll, between calls, and artest's own variants (and other plugins) use
// the staging buffers as scratch. Run these variants alone in a run
// (--variant pcie-ipc:...): another variant's call in between leaves stale
// data that a later poll takes as written (wrong sums), or breaks a barrier
// word (a hang).
//
// Not adapted: the copy-engine ring (Variant kCopyEngineRing,
// kCopyEngineIsland and kCopyEngineRingMemop, pcie_ipc_ce_ring.cuh, which
// all_reduce refuses and the binding routes to ce_ring_all_reduce_flat /
// _island): it copies with cudaMemcpyAsync on side streams it owns, ordered
// by events, while the ABI has a plugin launch only on artest's stream; it
// excludes 2 ranks, and its memop form (cuStreamWriteValue32) runs on SM120
// only. PDL (use_pdl): the binding refuses it (the 8-rank block kernel
// triggers launch completion before its last stores), and artest skips
// plugin cases under --pdl. pcie_ipc_all_gather.cuh and
// pcie_ipc_reduce_scatter.cuh are not allreduces.
//
// Unverified on a GPU: compiled only (make plugins-adapters-check).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <flashinfer/comm/pcie_ipc_all_reduce.cuh>

#include "artest_plugin.h"

namespace {

namespace pi = flashinfer::comm::pcie_ipc;

constexpr uint64_t kMaxBytes = 4u << 20;
constexpr int kElemSize = 2;
constexpr int64_t kMaxNumel = kMaxBytes / kElemSize;
constexpr int kMaxBlocks = 64;

artest_world world;
pi::PeerViews views;
bool ready;
thread_local char err[512];

int fail(const char *what, const char *why) {
	snprintf(err, sizeof err, "pcie-ipc: %s: %s", what, why);
	return ARTEST_ERROR;
}

// slab_bytes is one rank's workspace slab in a world of n ranks.
uint64_t slab_bytes(int n) { return (uint64_t)pi::workspace_size(n, kMaxNumel, kElemSize, kMaxBlocks); }

template <typename T> cudaError_t load_type(uint32_t n) {
	cudaFuncAttributes a;
	cudaError_t e = cudaSuccess;
#define LOAD(k) \
	if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, k);
	switch (n) {
	case 2:
		LOAD((pi::ipc_tp2_remote_push_kernel<T, false, false>))
		LOAD((pi::ipc_tp2_remote_push_kernel<T, true, false>))
		break;
	case 4:
		LOAD((pi::push_oneshot_param_kernel<T, 4, false, false>))
		LOAD((pi::ipc_rsag_push_param_kernel<T, 4, false>))
		LOAD((pi::ipc_rsag_ring_push_param_kernel<T, 4, false>))
		break;
	case 8:
		LOAD((pi::ipc_topo_rsag8_push_param_kernel<T, false>))
		LOAD((pi::ipc_topo_rsag8_block_param_kernel<T, false>))
		LOAD((pi::ipc_topo_rsag8_ring_push_param_kernel<T, false>))
		LOAD((pi::ipc_rsag_push_param_kernel<T, 8, false>))
		break;
	}
#undef LOAD
	return e;
}

int setup(const artest_world *w) {
	int n = (int)w->world_size;
	if (w->backend != ARTEST_BACKEND_CUDA)
		return fail("setup", "the cuda backend only (the kernels are CUDA's)");
	if (!(n == 2 || n == 4 || n == 8))
		return fail("setup", "the PCIe IPC allreduce runs 2, 4 or 8 ranks");
	pi::WorkspaceLayout layout = pi::compute_workspace_layout(n, kMaxNumel, kElemSize, kMaxBlocks);
	if (w->staging_bytes < layout.total_bytes)
		return fail("setup", "staging buffer smaller than declared");
	int dev = -1;
	cudaError_t e = cudaGetDevice(&dev);
	if (e != cudaSuccess)
		return fail("setup", cudaGetErrorString(e));
	if (dev != w->device)
		return fail("setup", "the CUDA runtime's current device is not artest's");
	world = *w;
	int64_t ptrs[pi::kMaxWorldSize] = {};
	for (int r = 0; r < n; r++)
		ptrs[r] = (int64_t)(uintptr_t)w->staging[r];
	views = pi::make_peer_views(ptrs, n, (int)w->rank, layout);
	e = load_type<half>(n);
	if (e == cudaSuccess) e = load_type<nv_bfloat16>(n);
	if (e == cudaSuccess) e = cudaMemset(w->staging[w->rank], 0, layout.total_bytes);
	if (e == cudaSuccess) e = cudaDeviceSynchronize(); // zeroed before set-up returns
	if (e != cudaSuccess)
		return fail("setup", cudaGetErrorString(e));
	ready = true;
	return ARTEST_OK;
}

// In the order of variants[] below.
constexpr pi::Variant kinds[] = {pi::Variant::kUnstaged, pi::Variant::kStaged, pi::Variant::kStagedRing, pi::Variant::kFlatStaged};

// refused is why the header does not run variant v at n ranks, or null.
const char *refused(pi::Variant v, int n, int blocks) {
	if (n == 2 && v != pi::Variant::kUnstaged && v != pi::Variant::kStaged)
		return "2 ranks run unstaged and staged only";
	if (v == pi::Variant::kFlatStaged && n != 8)
		return "flat-staged runs 8 ranks only";
	if (v == pi::Variant::kStaged && n == 8 && blocks % 4 != 0)
		return "staged at 8 ranks needs blocks a multiple of 4 (--param blocks=N)";
	return nullptr;
}

int allreduce(const artest_call *c) {
	if (!ready)
		return fail("allreduce", "no setup");
	if (c->op != ARTEST_SUM)
		return fail("allreduce", "sum only");
	if (c->count == 0) // the kernels would have no pack to move
		return ARTEST_OK;
	if (c->variant >= sizeof kinds / sizeof kinds[0])
		return fail("allreduce", "no such variant");
	int n = (int)world.world_size, blocks = (int)c->params[0], threads = (int)c->params[1];
	pi::Variant v = kinds[c->variant];
	if (const char *why = refused(v, n, blocks))
		return fail("allreduce", why);
	if (blocks < 1 || blocks > kMaxBlocks || threads < n || threads > 1024)
		return fail("allreduce", "blocks or threads out of range");
	uint64_t bytes = c->count * kElemSize;
	if (bytes % 16 != 0 || bytes > kMaxBytes)
		return fail("allreduce", "the message must be whole 16-byte packs, at most the declared size");
	cudaStream_t s = (cudaStream_t)(uintptr_t)c->stream;
	int64_t count = (int64_t)c->count;
	cudaError_t e;
	switch (c->dtype) {
	case ARTEST_F16:
		e = pi::all_reduce<half>((const half *)c->input, (half *)c->output, count, views, (int)world.rank, n, kMaxBlocks,
		                         kMaxNumel, blocks, threads, v, /*use_pdl=*/false, s);
		break;
	case ARTEST_BF16:
		e = pi::all_reduce<nv_bfloat16>((const nv_bfloat16 *)c->input, (nv_bfloat16 *)c->output, count, views, (int)world.rank, n,
		                                kMaxBlocks, kMaxNumel, blocks, threads, v, /*use_pdl=*/false, s);
		break;
	default: return fail("allreduce", "f16 and bf16 only");
	}
	if (e != cudaSuccess)
		return fail("allreduce", cudaGetErrorString(e));
	return ARTEST_OK;
}

void teardown() { ready = false; }

const char *last_error() { return err; }

artest_variant variant(const char *name, const char *summary, uint32_t min_ranks) {
	artest_variant v = {};
	v.name = name;
	v.summary = summary;
	v.dtypes = ARTEST_BIT(ARTEST_F16) | ARTEST_BIT(ARTEST_BF16);
	v.ops = ARTEST_BIT(ARTEST_SUM);
	v.min_ranks = min_ranks;
	v.max_ranks = pi::kMaxWorldSize;
	v.max_bytes = kMaxBytes;
	v.align_bytes = 16;
	v.needs_registered_input = 0; // no peer reads the input
	v.order = ARTEST_ORDER_UNKNOWN;
	v.nparams = 2;
	v.params[0] = {"blocks", 16, 1, (uint32_t)kMaxBlocks, "thread blocks (the header launches this grid; 8-rank staged: a multiple of 4)"};
	v.params[1] = {"threads", 256, 32, 1024, "threads per block"};
	return v;
}

const artest_variant variants[] = {
    variant("unstaged", "flashinfer's PCIe IPC allreduce, Variant kUnstaged (flashinfer-python 0.7.2.post1 header): push to every peer at once, +0.0 sentinel", 2),
    variant("staged", "flashinfer's PCIe IPC allreduce, Variant kStaged: staged pushes (islands of 4 at 8 ranks)", 2),
    variant("staged-ring", "flashinfer's PCIe IPC allreduce, Variant kStagedRing: staged pushes in neighbour order, 4 or 8 ranks", 4),
    variant("flat-staged", "flashinfer's PCIe IPC allreduce, Variant kFlatStaged: staged pushes without islands, 8 ranks", 8),
};
static_assert(sizeof variants / sizeof variants[0] == sizeof kinds / sizeof kinds[0], "one kind per variant");

artest_plugin describe() {
	artest_plugin p = {};
	p.abi_version = ARTEST_PLUGIN_ABI_VERSION;
	p.nvariants = sizeof variants / sizeof variants[0];
	p.name = "pcie-ipc";
	p.variants = variants;
	p.staging_bytes = slab_bytes(pi::kMaxWorldSize); // the slab grows with the world
	p.control_bytes = 0;
	p.setup = setup;
	p.allreduce = allreduce;
	p.teardown = teardown;
	p.last_error = last_error;
	return p;
}

const artest_plugin plugin = describe();

} // namespace

extern "C" const artest_plugin *artest_plugin_v1(void) { return &plugin; }
