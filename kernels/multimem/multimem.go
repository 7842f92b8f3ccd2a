// Package multimem is the multimem variant: NVLink SHARP, multimem.ld_reduce
// from the multicast address and multimem.st to every rank (multimem.cu).
package multimem

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
)

// ID is the trace id multimem's launches write. Never reuse a number.
const ID uint32 = 0x0055

// Variant is multimem's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "multimem",
		ID:      ID,
		Summary: "NVLink SHARP: multimem.ld_reduce from the multicast address, multimem.st to every rank (two-shot, or one-shot); cuda needs --allow-multicast",
		// Sum only: the switch reduces f16 and bf16 max/min but not f32's.
		DTypes: kernels.AllDTypes, Ops: []reference.Op{reference.Sum},
		MinRanks: 1, MaxRanks: 8,
		Needs: kernels.NeedMulticast | kernels.NeedSM90 | kernels.NeedP2P,
		// The switch's reduction order (and, for f32, precision) is not
		// specified: random sums are checked within the bound, as nccl's.
		Order:  reference.OrderUnknown,
		Kind:   kernels.KindKernel,
		Kernel: "multimem",
		// 36 x 512 as the other one-slot-per-thread kernels; a guess until
		// measured on an NVLS node.
		Blocks: 36, Threads: 512,
		HostBlocks: 0, // the host backend launches Grid's blocks too
		Params: []kernels.Param{{Name: "shots", Slot: 0, Default: 0, Min: OneShot, Max: TwoShot,
			Help: "1: one-shot, 2: two-shot, 0: auto by size"}},
		Resolve:  Resolve,
		GridFunc: Grid,
		Tune: kernels.TuneSpace{Blocks: kernels.TuneBlocks, Threads: kernels.TuneThreads,
			Params: map[string][]uint32{"shots": {OneShot, TwoShot}}},
		Host: hostmodel.Body(Host),
	}
}
