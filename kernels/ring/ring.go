// Package ring is the ring variant: Disruptor-style slot rings per lane in
// peers' staging, a ring reduce-scatter and all-gather in one persistent
// producer/consumer kernel (ring.cu).
package ring

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
)

// ID is the trace id the ring's launches write. Never reuse a number.
const ID uint32 = 0x0054

// Variant is the ring's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "ring",
		ID:      ID,
		Summary: "Disruptor-style slot rings per lane (sequences, credits) in peers' staging: ring reduce-scatter and all-gather in one persistent producer/consumer kernel",
		// docs/results/2026-11-26-h200-h100x2-poison-partitions-nccl-tests (call 10).
		Slower: "slower than oneshot and twoshot at every size measured (2 H100, bf16 sum, graph replays, 1 KiB to 256 MiB): " +
			"24 to 27 us up to 1 MiB, 3.1x twoshot's time (a floor not yet taken apart: each piece waits for its sequence " +
			"and credit over the link), and 2.5x to 6x twoshot's time from 4 MiB",
		DTypes: kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 8,
		Needs: kernels.NeedP2P,
		// Chunk c is summed from rank c around the ring in float32 (protocol.go):
		// not rank-ascending, so random sums are checked within the bound.
		Order:  reference.OrderUnknown,
		Kind:   kernels.KindKernel,
		Kernel: "ring",
		// A correct ring led by up to 32 us on 2 H200
		// (docs/results/2026-11-26-h200-x2-stress.md).
		EarlyReturn: "each rank pushes its chunks into its neighbour's slots and reads only its own: the last slots it sent may be consumed after it returns",
		// One block per lane (Grid); 512 threads is untuned (the H200
		// tuning sweep tried no other block size for the ring).
		Blocks: MaxLanes, Threads: 512,
		HostBlocks: 0, // the host backend launches Grid's blocks too
		Params:     params,
		Resolve:    Resolve,
		// At the stress matrix's sizes (4100 B to 1 MiB) the defaults
		// resolve to 2 slots of one piece per step at 2 ranks, where a
		// producer can never be a lap ahead of its reader, so a credit
		// check that is wrong is never needed (RunsAhead). 1 KiB slots
		// give 4 to 8 slots, 3 to 6 pieces per step and 12 to 264
		// pieces a lane there: the producer may lap its reader.
		StressParams: map[string]uint32{"slot-bytes": 1 << 10},
		GridFunc:     Grid,
		// The ring's grid is its lane count (Grid): blocks are not an
		// axis. Slot bytes and slots bracket the defaults (64 KiB, 8) by a
		// factor of 4 and 2; Resolve shrinks them for small messages,
		// which tune.Enumerate then counts as duplicates.
		Tune: kernels.TuneSpace{Threads: []int{256, 512},
			Params: map[string][]uint32{
				"lanes":      {1, 2, 4, 8, 16, 32},
				"slot-bytes": {16 << 10, 64 << 10, 256 << 10},
				"slots":      {4, 8, 16},
			}},
		Faults: []kernels.Fault{{Name: "no-credit-wait", Bit: InjectNoCreditWait,
			Help: "the producer does not wait for credit"}},
		Host: hostmodel.Body(Host),
	}
}
