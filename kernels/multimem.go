package kernels

import "github.com/artest/artest/sigblock"

// Launch parameters of multimem (kernels/multimem/multimem.cu).
//
// Param0, "shots": MultimemOneShot or MultimemTwoShot; 0 (auto) is
// resolved by MultimemResolve from the message size. The kernel traps on
// any other value.
//
// Param2 and Param3 are not user parameters: they hold the multicast delta
// (MulticastDelta), which the backend sets on every launch of a variant that
// needs multicast. The kernel traps when it is 0, so a launch that was not
// bound to a multicast object never executes a multimem instruction.
const (
	MultimemOneShot uint32 = 1
	MultimemTwoShot uint32 = 2
	// MultimemOneShotMaxBytes: auto picks one-shot up to this size, two-shot
	// above. A guess until the crossover is measured on an NVLS node
	// (one-shot makes the switch read every rank's whole message for every
	// rank; two-shot reads each once and adds a multimem.st broadcast).
	MultimemOneShotMaxBytes = 64 << 10
)

// Slots of Args that carry the multicast delta.
const (
	multicastDeltaLo = 2
	multicastDeltaHi = 3
)

// MultimemResolve fills shots when it is 0 (auto).
func MultimemResolve(a *Args, elemBytes int64) {
	if a.Param0 != 0 {
		return
	}
	if int64(a.Count)*elemBytes <= MultimemOneShotMaxBytes {
		a.Param0 = MultimemOneShot
	} else {
		a.Param0 = MultimemTwoShot
	}
}

// MultimemGrid is one 16-byte slot per thread over what each rank reduces:
// the whole message (one-shot) or one chunk (two-shot).
func MultimemGrid(a *Args, elem int64, maxBlocks, threads int) int {
	part := int64(a.Count)
	if a.Param0 == MultimemTwoShot {
		part = ChunkElems(part, int(a.NRanks), elem)
	}
	vecs := (part*elem + VecBytes - 1) / VecBytes
	g := int((vecs + int64(threads) - 1) / int64(threads))
	return max(1, min(g, maxBlocks, sigblock.MaxBlocks))
}

// SetMulticastDelta stores what a kernel adds to an address in this rank's
// multicast-bound buffers to get the multicast address of the same offset.
func SetMulticastDelta(a *Args, delta uint64) {
	*a.ParamSlot(multicastDeltaLo) = uint32(delta)
	*a.ParamSlot(multicastDeltaHi) = uint32(delta >> 32)
}

// MulticastDelta reads what SetMulticastDelta stored (0: none).
func MulticastDelta(a *Args) uint64 {
	return uint64(*a.ParamSlot(multicastDeltaHi))<<32 | uint64(*a.ParamSlot(multicastDeltaLo))
}
