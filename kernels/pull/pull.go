// Package pull is the pull variant: a reduce-scatter and an all-gather in
// which each rank reads what it needs straight from its peers' inputs
// between a start and an end barrier (pull.cu). They are twoshot's two
// halves made collectives of their own: twoshot's reduce-scatter writes
// its chunk into staging for its all-gather to read; here the
// reduce-scatter writes the rank's output, and the all-gather reads the
// peers' inputs.
package pull

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
)

// ID is the trace id pull's launches write. Never reuse a number.
const ID uint32 = 0x0058

// Variant is pull's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name: "pull",
		ID:   ID,
		Summary: "reduce-scatter and all-gather: each rank reads its chunk of every peer's input, or every peer's input, " +
			"straight over P2P; start and end barriers",
		Colls:  []reference.Coll{reference.ReduceScatter, reference.AllGather},
		DTypes: kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  kernels.NeedP2P,
		Order:  reference.OrderRankAscendingF32,
		Kind:   kernels.KindKernel,
		Kernel: "pull",
		// twoshot's launch, whose halves these are.
		Blocks: 36, Threads: 512,
		HostBlocks: 4,
		GridFunc:   Grid,
		Host:       hostmodel.Body(Host),
	}
}

// Grid is one 16-byte vector per thread over one rank's chunk
// (Count/NRanks elements): the reduce-scatter reduces one chunk, and the
// all-gather's thread copies the same slot of every chunk.
func Grid(a *kernels.Args, elem int64, maxBlocks, threads int) int {
	return kernels.VecGrid(reference.Chunk(int64(a.Count), int(a.NRanks)), elem, maxBlocks, threads)
}
