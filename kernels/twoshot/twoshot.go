// Package twoshot is the twoshot variant: a reduce-scatter of 1/N of the
// message into staging, a mid barrier, an all-gather (pull or push), and
// an end barrier (twoshot.cu).
package twoshot

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
)

// ID is the trace id twoshot's launches write. Never reuse a number.
const ID uint32 = 0x0052

// Variant is twoshot's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "twoshot",
		ID:      ID,
		Summary: "reduce-scatter into staging, mid barrier, all-gather from peers' staging, end barrier",
		DTypes:  kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  kernels.NeedP2P,
		Order:  reference.OrderRankAscendingF32,
		Kind:   kernels.KindKernel,
		Kernel: "twoshot",
		Blocks: 36, Threads: 512,
		HostBlocks: 4,
		Params:     params,
		Resolve:    Resolve,
		GridFunc:   Grid,
		// Pull or push all-gather: the auto rule's crossover is what is tuned.
		Tune: kernels.TuneSpace{Blocks: kernels.TuneBlocks, Threads: kernels.TuneThreads,
			Params: map[string][]uint32{"gather": {GatherPull, GatherPush}}},
		Host: hostmodel.Body(Host),
	}
}

// Grid is one 16-byte vector per thread over the chunk each rank reduces
// (kernels.ChunkElems).
func Grid(a *kernels.Args, elem int64, maxBlocks, threads int) int {
	return kernels.VecGrid(kernels.ChunkElems(int64(a.Count), int(a.NRanks), elem), elem, maxBlocks, threads)
}

// PushMinBytes is where auto switches from pull to push. Untuned: on 4
// H200 push beat pull from 256 KiB to 4 MiB and lost from 16 MiB
// (docs/perf.md), and the tuning table picks gather per size for bf16 at
// 2 and 4 ranks. Push trades a second round of
// NVLink reads (and the end barrier) for writes that overlap the reads,
// plus a local copy of (n-1)/n of the message, which costs more than it
// saves only when the message is small.
const PushMinBytes = 512 << 10

var params = []kernels.Param{{Name: "gather", Slot: 0, Default: GatherAuto,
	Min: GatherPull, Max: GatherPush,
	Help: "1: pull (read peers' staging), 2: push (write into peers' staging), 0: auto by size"}}

// Resolve picks the gather for auto, the same on every rank (it
// depends on the message size only).
func Resolve(a *kernels.Args, elemBytes int64) {
	if a.Param0 != GatherAuto {
		return
	}
	a.Param0 = GatherPull
	if int64(a.Count)*elemBytes >= PushMinBytes {
		a.Param0 = GatherPush
	}
}
