package kernels

import (
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// Args is the one parameter every custom kernel takes, by value. Its layout is
// the C struct ArtestArgs in kernels/device/abi.cuh; abi_test.go checks sizes and
// offsets against the header, so a field added on one side only fails the
// build's tests. The host backend passes the same struct to its Go model of
// each kernel, so both backends see identical launch parameters.
type Args struct {
	// Per rank r: r's input buffer (already at the case's offset), r's
	// staging buffer and r's SignalBlock, as addresses valid in this process
	// (device addresses of opened IPC handles on cuda, synthetic addresses
	// on host).
	PeerIn     [sigblock.MaxRanks]uint64
	PeerStage  [sigblock.MaxRanks]uint64
	PeerSignal [sigblock.MaxRanks]uint64
	Out        uint64 // this rank's output (may equal PeerIn[Rank]: in-place)
	// Count is the elements of the collective's full buffer: the message of
	// an allreduce, a reduce-scatter's input, an all-gather's output; the
	// other buffer of the latter two is Count/NRanks elements (Coll).
	Count      uint64
	Rank       uint32
	NRanks     uint32
	Inject     uint32 // Inject* bits
	DelayRank  uint32 // rank that sleeps when InjectDelay is set
	DelayNs    uint64
	VariantID  uint32 // written to the trace word at the end of the launch
	Flags      uint32 // Flag* bits
	StageBytes uint64 // capacity of each staging buffer
	Param0     uint32 // variant-specific launch parameters (stages, lanes, slots):
	Param1     uint32 // their meaning is in the variant's registry entry
	Param2     uint32
	Param3     uint32
	// WaitTimeoutNs bounds every wait of the launch (barriers, ring slots
	// and credits), counted from the wait's first failed poll: a block
	// that waits longer records where in its rank's SignalBlock diag words
	// (sigblock.Diag*) and exits, so no kernel hangs the GPU for ever. 0:
	// unbounded.
	WaitTimeoutNs uint64
	// Launch tags (sigblock/tag.go, kernels/tag.go): PeerTag[p] is what this
	// launch expects in the high word of peer p's barrier flags, SelfTag
	// what it stores in the high word of its own. Both hash the call
	// (variant, dtype, op, count, grid, flags, parameters) with the
	// registration generation of the buffers concerned: peer p's as this
	// rank opened them (what PeerIn[p] points at) and this rank's own. A
	// barrier that finds another tag records DiagKindTagMismatch and the
	// block exits: one rank launching a different call, or a graph that
	// still holds a re-registered peer's old pointers, is diagnosed at the
	// first barrier instead of hanging or reading stale memory. The
	// backends set them (SetTags) once the grid is known.
	PeerTag [sigblock.MaxRanks]uint32
	SelfTag uint32
	Spare   uint32 // keeps the struct a multiple of 8 bytes without implicit padding
}

// Flags bits.
const (
	FlagInPlace uint32 = 1 << 0 // the output lies in this rank's registered input buffer
	// The collective, when not an allreduce: the kernel of a variant that
	// implements several (Variant.Colls) is chosen by name, and the bits
	// put the collective into the launch tag (CallHash) and tell the host
	// models which one they play. Collective c is bit c (CollFlag).
	FlagReduceScatter uint32 = 1 << 1
	FlagAllGather     uint32 = 1 << 2
)

// collFlags are the flags that name the collective: bits 1 to 7, one per
// collective but the allreduce (reference.Collectives' ids).
const collFlags uint32 = 0xfe

// CollFlag is the flag that names collective c (0 for the allreduce).
func CollFlag(c reference.Coll) uint32 {
	if c == reference.AllReduce || c > 7 {
		return 0
	}
	return 1 << uint(c)
}

// Coll is the collective a launch makes (its flags).
func (a *Args) Coll() reference.Coll {
	for _, c := range reference.Colls {
		if f := CollFlag(c); f != 0 && a.Flags&collFlags == f {
			return c
		}
	}
	return reference.AllReduce
}

// SetColl makes a's flags name collective c.
func (a *Args) SetColl(c reference.Coll) {
	a.Flags = a.Flags&^collFlags | CollFlag(c)
}

// OutCount is the elements of this rank's output: Count, or a
// reduce-scatter's chunk.
func (a *Args) OutCount() uint64 {
	return uint64(a.Coll().OutCount(int64(a.Count), int(a.NRanks)))
}

// Inject bits: faults compiled into every kernel and every host model as
// runtime switches, so the suite can prove that each protection matters.
// These are the ones every custom kernel shares; a variant's own switches
// (its Variant().Faults) take their bits in its folder, and
// kernels/registry's tests keep every bit distinct.
const (
	InjectNoEndBarrier   uint32 = 1 << 0 // skip the end barrier
	InjectNoStartBarrier uint32 = 1 << 1 // skip the start barrier
	InjectDelay          uint32 = 1 << 2 // DelayRank sleeps DelayNs after the start barrier, in every block
	InjectSkipLast       uint32 = 1 << 3 // planted bug: the last element is not written (poison must catch it)
	InjectOverrun        uint32 = 1 << 4 // planted bug: one element past the end is written (guards must catch it)
	InjectNoMidBarrier   uint32 = 1 << 5 // skip the mid barrier (twoshot, in-place oneshot)
	InjectPdlNoWait      uint32 = 1 << 7 // --pdl: the kernel reads its input without waiting for the producer (griddepcontrol.wait)
)
