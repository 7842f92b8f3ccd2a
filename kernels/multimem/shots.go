package multimem

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/sigblock"
)

// Launch parameters of multimem (multimem.cu).
//
// Param0, "shots": OneShot or TwoShot; 0 (auto) is resolved by Resolve
// from the message size. The kernel traps on any other value.
//
// Param2 and Param3 are not user parameters: they hold the multicast delta
// (kernels.MulticastDelta), which the backend sets on every launch of a
// variant that needs multicast.
const (
	OneShot uint32 = 1
	TwoShot uint32 = 2
	// OneShotMaxBytes: auto picks one-shot up to this size, two-shot
	// above. A guess until the crossover is measured on an NVLS node
	// (one-shot makes the switch read every rank's whole message for every
	// rank; two-shot reads each once and adds a multimem.st broadcast).
	OneShotMaxBytes = 64 << 10
)

// Resolve fills shots when it is 0 (auto).
func Resolve(a *kernels.Args, elemBytes int64) {
	if a.Param0 != 0 {
		return
	}
	if int64(a.Count)*elemBytes <= OneShotMaxBytes {
		a.Param0 = OneShot
	} else {
		a.Param0 = TwoShot
	}
}

// Grid is one 16-byte slot per thread over what each rank reduces: the
// whole message (one-shot) or one chunk (two-shot).
func Grid(a *kernels.Args, elem int64, maxBlocks, threads int) int {
	part := int64(a.Count)
	if a.Param0 == TwoShot {
		part = kernels.ChunkElems(part, int(a.NRanks), elem)
	}
	vecs := (part*elem + kernels.VecBytes - 1) / kernels.VecBytes
	g := int((vecs + int64(threads) - 1) / int64(threads))
	return max(1, min(g, maxBlocks, sigblock.MaxBlocks))
}
