// Package oneshotll is the oneshot-ll variant: oneshot without barriers,
// every rank pushing its input into every rank's staging as LL words
// (oneshot_ll.cu).
package oneshotll

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
)

// ID is the trace id oneshot-ll's launches write. Never reuse a number.
const ID uint32 = 0x0056

// InjectLlNoFlag is oneshot-ll's own fault switch (a kernels.Args.Inject
// bit, INJECT_LL_NO_FLAG in oneshot_ll.cuh): a slot is used without checking
// its sequence, so stale data from an older launch goes through.
const InjectLlNoFlag uint32 = 1 << 12

// Variant is oneshot-ll's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "oneshot-ll",
		ID:      ID,
		Summary: "oneshot without barriers: every rank pushes its input into every rank's staging as LL words (data and sequence in one 8-byte store), then reduces locally",
		Slower: "slower than oneshot-sentinel at every size measured (2 H200, bf16 sum, graph replays, 1 KiB to 1 MiB, ee9e3fd): " +
			"1.19x to 1.30x its time up to 64 KiB, 1.44x at 256 KiB and 1.77x at 1 MiB (10.09 against 5.69 us); " +
			"its LL words carry 4 data bytes in 8, twice the bytes on the links, and oneshot-sentinel also reads its first input " +
			"before the launch checks, counts its blocks after its pushes, reduces its own slot from a register, polls without " +
			"the clock first and, at 2 ranks, advances its sequence before its tail (the last three together 0.37 to 0.42 us " +
			"up to 64 KiB, measured on oneshot-sentinel); it stays for the LL protocol and its sequence check",
		DTypes: kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  kernels.NeedP2P,
		Order:  reference.OrderRankAscendingF32,
		Kind:   kernels.KindKernel,
		Kernel: "oneshot_ll",
		// A correct oneshot-ll led by up to 124 us on 2 H200
		// (docs/results/2026-11-26-h200-x2-stress.md).
		EarlyReturn: "no end barrier by design: a rank pushes its input into every peer's staging and reduces its own; no peer reads its buffers after it returns",
		// oneshot's 36 x 512 until artest tune measures it on H200.
		Blocks: 36, Threads: 512,
		HostBlocks: 4,
		TooBig:     TooBig,
		StageNeed:  StageBytes,
		Faults: []kernels.Fault{{Name: "ll-no-flag", Bit: InjectLlNoFlag,
			Help: "slots used without checking their sequence"}},
		Host: hostmodel.Body(Host),
	}
}
