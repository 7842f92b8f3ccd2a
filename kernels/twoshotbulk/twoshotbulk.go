// Package twoshotbulk is the twoshot-bulk variant: twoshot's pull
// all-reduce (reduce-scatter into staging, mid barrier, all-gather from
// peers' staging, end barrier) whose all-gather moves whole tiles with the
// sm_90 bulk-copy engine (twoshot_bulk.cu).
package twoshotbulk

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
)

// ID is the trace id twoshot-bulk's launches write. Never reuse a number.
const ID uint32 = 0x0057

// Buffers is the number of tile buffers in one block's shared memory
// (TWOSHOT_BULK_BUFFERS in twoshot_bulk.cuh; twoshotbulk_test.go checks
// the two agree): three loads in flight while a tile is stored.
const Buffers = 4

// Variant is twoshot-bulk's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "twoshot-bulk",
		ID:      ID,
		Summary: "twoshot (pull) whose all-gather moves tiles with cp.async.bulk through shared memory; start, mid and end barriers",
		// docs/results/2026-11-26-h100-x4-fieldbest-nccl-tests (plugin-bench-np4.json.xz).
		Slower: "slower than twoshot at every size measured (4 H100, bf16 sum, graph replays, 1 KiB to 256 MiB): " +
			"1.32x to 1.44x twoshot's time up to 4 MiB and 1.56x to 1.68x from 16 MiB (2053 against 1224 us at 256 MiB); " +
			"one thread per block issues every bulk copy in 8 KiB tiles, which twoshot's partition cannot lengthen " +
			"(four tile buffers instead of two gained 3 % or less from 16 MiB on one H100)",
		DTypes: kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  kernels.NeedP2P | kernels.NeedSM90,
		Order:  reference.OrderRankAscendingF32,
		Kind:   kernels.KindKernel,
		Kernel: "twoshot_bulk",
		// twoshot's launch defaults: the same grid and partition.
		Blocks: 36, Threads: 512,
		HostBlocks:  4,
		GridFunc:    Grid,
		SharedBytes: SharedBytes,
		Tune:        kernels.TuneSpace{Blocks: kernels.TuneBlocks, Threads: kernels.TuneThreads},
		Host:        hostmodel.Body(Host),
	}
}

// Grid is twoshot's: one 16-byte vector per thread over the chunk each
// rank reduces (kernels.ChunkElems).
func Grid(a *kernels.Args, elem int64, maxBlocks, threads int) int {
	return kernels.VecGrid(kernels.ChunkElems(int64(a.Count), int(a.NRanks), elem), elem, maxBlocks, threads)
}

// SharedBytes is the dynamic shared memory one block needs: Buffers tiles
// of one 16-byte vector per thread (artest_twoshot_bulk_shared_bytes in
// twoshot_bulk.cuh), 32 KiB at 512 threads. The kernel traps when its
// launch has less.
func SharedBytes(_ *kernels.Args, threads int) int {
	return Buffers * threads * kernels.VecBytes
}
