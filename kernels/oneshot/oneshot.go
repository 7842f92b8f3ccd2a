// Package oneshot is the oneshot variant: every rank reads all peers'
// inputs and reduces all of it (oneshot.cu), between a start and an end
// barrier.
package oneshot

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
)

// ID is the trace id oneshot's launches write. Never reuse a number.
const ID uint32 = 0x0051 // 'Q' for one-shot

// Variant is oneshot's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "oneshot",
		ID:      ID,
		Summary: "every rank reads all peers' inputs and reduces all of it; start and end barriers",
		DTypes:  kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  kernels.NeedP2P,
		Order:  reference.OrderRankAscendingF32,
		Kind:   kernels.KindKernel,
		Kernel: "oneshot",
		// 36 x 512 is vLLM's one-shot default on H100; re-measured by artest tune.
		Blocks: 36, Threads: 512,
		HostBlocks: 4,
		Tune:       kernels.TuneSpace{Blocks: kernels.TuneBlocks, Threads: kernels.TuneThreads},
		Host:       hostmodel.Body(Host),
	}
}
