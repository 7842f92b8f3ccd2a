package sigblock

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Launch tags: the high word of every barrier flag (layout.go). A tag is
// the registration generation of the sender's buffers (mod 256) in its top
// TagGenBits bits over a 24-bit hash of the call (kernels.CallHash:
// variant, dtype, op, count, grid, flags, parameters), so a reader of a
// mismatch can tell "the same call, other buffers" (a peer re-registered
// and a graph still holds its old pointers) from "another call".
const (
	TagGenBits  = 8
	TagGenShift = 32 - TagGenBits
	TagCallMask = 1<<TagGenShift - 1
)

// MakeTag is the tag of a call whose hash is call, on buffers of
// registration generation gen (only its low TagGenBits bits count: after
// 256 re-registrations a generation reads as its old self again, which a
// diagnosis can miss but never invents).
func MakeTag(call, gen uint32) uint32 { return gen<<TagGenShift | call&TagCallMask }

// TagGen and TagCall split a tag.
func TagGen(tag uint32) uint32  { return tag >> TagGenShift }
func TagCall(tag uint32) uint32 { return tag & TagCallMask }

func (b Block) word64(off int) *uint64 {
	if off < 0 || off+8 > len(b) || off%8 != 0 {
		panic(fmt.Sprintf("signal: 64-bit word offset %d outside a %d-byte block", off, len(b)))
	}
	p := unsafe.Pointer(&b[off])
	if uintptr(p)%8 != 0 {
		panic(fmt.Sprintf("signal: 64-bit word at offset %d is not 8-byte aligned in memory", off))
	}
	return (*uint64)(p)
}

// Load64 and Store64 access a 64-bit word atomically (the flags and epoch
// words: the tag or claim travels in the same access as the epoch).
func (b Block) Load64(off int) uint64     { return atomic.LoadUint64(b.word64(off)) }
func (b Block) Store64(off int, v uint64) { atomic.StoreUint64(b.word64(off), v) }

// FlagValue is a flag's 64-bit value: the epoch low, the tag high.
func FlagValue(tag, epoch uint32) uint64 { return uint64(tag)<<32 | uint64(epoch) }

// FlagTag is the tag peer p stored with its last flag for block blk and
// phase ph.
func (b Block) FlagTag(ph, blk, p int) uint32 { return uint32(b.Load64(FlagOffset(ph, blk, p)) >> 32) }

// ClaimEpoch is the start of a launch's block blk, as the kernels'
// epoch_begin: one atomic OR sets the claim and returns the epoch word as
// it was. It returns the epoch this launch uses (completed launches + 1)
// and whether another launch of this rank held the claim already (then
// the caller must not run the block: the state is in use).
func (b Block) ClaimEpoch(blk int) (epoch uint32, held bool, claim uint32) {
	old := atomic.OrUint64(b.word64(EpochOffset(blk)), uint64(EpochClaim)<<32)
	return uint32(old) + 1, old>>32 != 0, uint32(old >> 32)
}

// EndEpoch is the end of a launch's block blk (epoch_end): one store that
// records the epoch as completed and clears the claim.
func (b Block) EndEpoch(blk int, epoch uint32) { b.Store64(EpochOffset(blk), uint64(epoch)) }

// Claim reads block blk's claim word (non-zero while a launch runs it, or
// after a launch's block gave up and exited).
func (s Snapshot) Claim(blk int) uint32 { return s.Word(EpochOffset(blk) + 4) }

// FlagTag reads the tag half of Flag[ph][blk][p].
func (s Snapshot) FlagTag(ph, blk, p int) uint32 { return s.Word(FlagOffset(ph, blk, p) + 4) }

// tagMismatchText explains a tag mismatch seen by a barrier: want is what
// the waiting rank expected of peer, seen what peer's flag carried.
func tagMismatchText(peer int, want, seen uint32) string {
	wg, sg := TagGen(want), TagGen(seen)
	if TagCall(want) == TagCall(seen) && wg != sg {
		if Reached(sg<<TagGenShift, wg<<TagGenShift) {
			return fmt.Sprintf("rank %d re-registered its buffers (generation %d) after this launch was captured (generation %d): a graph replayed with a peer's old pointers (tag %#08x, want %#08x)",
				peer, sg, wg, seen, want)
		}
		return fmt.Sprintf("rank %d launched with its buffers of generation %d, this launch holds generation %d: a graph captured before it re-registered was replayed there (tag %#08x, want %#08x)",
			peer, sg, wg, seen, want)
	}
	return fmt.Sprintf("rank %d launched a different call (tag %#08x, want %#08x: size, variant, dtype, op, grid or parameters differ)",
		peer, seen, want)
}
