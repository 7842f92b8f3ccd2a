// Package oneshotcpasync is the oneshot-cpasync variant: oneshot with a
// cp.async pipeline of peer data through shared memory
// (oneshot_cpasync.cu).
package oneshotcpasync

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
)

// ID is the trace id oneshot-cpasync's launches write. Never reuse a
// number.
const ID uint32 = 0x0053

// Variant is oneshot-cpasync's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "oneshot-cpasync",
		ID:      ID,
		Summary: "oneshot with a cp.async pipeline (stages x 16-byte copies from every peer into shared memory); start and end barriers",
		// docs/results/2026-11-22-h200-x4-bench-tune-pdl-hangs/run5 (bench4-np2.json);
		// the reason: docs/results/2026-11-26-h100-h200-x2-nccl-win-vllm-study.md.
		Slower: "slower than oneshot at every size measured (2 H200, bf16 sum, graph replays, 1 KiB to 256 MiB): " +
			"1.05x to 1.2x oneshot's time up to 256 KiB and 1.5x to 2.1x from 1 MiB (1755 against 821 us at 256 MiB); " +
			"the loss is its cp.async reads of a peer's memory over NVLink: at one rank, local memory only, it is faster " +
			"than oneshot (354 against 740 us at 256 MiB, H100), and 4 stages with 132 blocks change nothing over NVLink (1755 against 1753 us)",
		DTypes: kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  kernels.NeedP2P | kernels.NeedSM80,
		Order:  reference.OrderRankAscendingF32,
		Kind:   kernels.KindKernel,
		Kernel: "oneshot_cpasync",
		// Untuned (with them it is slower than oneshot at every size on
		// 4 H200: docs/perf.md): 256 threads keep 3
		// stages at 8 ranks to 96 KiB of shared memory (SharedBytes),
		// two blocks per SM; 72 blocks x 256 threads is oneshot's thread count.
		Blocks: 72, Threads: 256,
		HostBlocks: 4,
		Params: []kernels.Param{{Name: "stages", Slot: 0, Default: DefaultStages,
			Min: MinStages, Max: MaxStages, Help: "cp.async pipeline stages"}},
		SharedBytes: SharedBytes,
		// Stages beyond 4 cost shared memory (SharedBytes) that the
		// second block per SM needs; 2..4 brackets the default 3.
		Tune: kernels.TuneSpace{Blocks: kernels.TuneBlocks, Threads: kernels.TuneThreads,
			Params: map[string][]uint32{"stages": {2, 3, 4}}},
		Host: hostmodel.Body(Host),
	}
}
