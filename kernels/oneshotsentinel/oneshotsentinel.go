// Package oneshotsentinel is the oneshot-sentinel variant: oneshot without
// barriers or flags, every rank pushing its input into every peer's
// staging with the data as its own flag (oneshot_sentinel.cu).
package oneshotsentinel

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
)

// ID is the trace id oneshot-sentinel's launches write. Never reuse a number.
const ID uint32 = 0x0059

// oneshot-sentinel's own fault switches (kernels.Args.Inject bits; the
// INJECT_SENTINEL_* constants in oneshot_sentinel.cuh).
const (
	// InjectSentinelNoWait: a slot is used without waiting for it to be
	// written, so an empty or stale one goes through.
	InjectSentinelNoWait uint32 = 1 << 13
	// InjectSentinelNoClear: a slot is left as it was read, so the next
	// launch of its half takes it for new data.
	InjectSentinelNoClear uint32 = 1 << 14
)

// Variant is oneshot-sentinel's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "oneshot-sentinel",
		ID:      ID,
		Summary: "oneshot without barriers or flags: every rank pushes its input into every peer's staging as complemented bits (all-zero staging reads as empty), the reader polls the data itself, reduces locally and clears what it read",
		DTypes:  kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:       kernels.NeedP2P,
		Order:       reference.OrderRankAscendingF32,
		Kind:        kernels.KindKernel,
		Kernel:      "oneshot_sentinel",
		EarlyReturn: "no end barrier by design: a rank pushes its input into every peer's staging and reduces its own; no peer reads its buffers after it returns",
		// Threads grows with the message (staging.go says how it was
		// measured); Blocks caps the grid at one block per SM of an H100
		// or H200 (132), Threads the block at kernels.MaxThreads.
		Blocks: maxBlocks, Threads: kernels.MaxThreads, ThreadsFunc: Threads,
		HostBlocks:  4,
		TooBig:      TooBig,
		StageNeed:   StageBytes,
		ZeroStaging: true,
		Faults: []kernels.Fault{
			{Name: "sentinel-no-wait", Bit: InjectSentinelNoWait, Help: "slots used without waiting for them to be written"},
			{Name: "sentinel-no-clear", Bit: InjectSentinelNoClear, Help: "slots left full after they are read"},
		},
		Host: hostmodel.Body(Host),
	}
}
