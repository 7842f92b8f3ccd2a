package kernels

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// CallHash is what every rank must agree on for one launch, hashed: the
// variant, dtype, op, element count, world size, grid (blocks and threads),
// the flags (in place or not: it decides the barrier sequence) and the
// variant's declared launch parameters (Params; not the other Param
// words, which may carry per-rank values such as multimem's address
// delta). Buffers and the deadline are not in it: they differ between
// ranks by nature. FNV-1a over the little-endian words, folded to the
// tag's 24 call bits (sigblock.MakeTag).
func CallHash(v *Variant, d reference.DType, o reference.Op, a *Args, blocks, threads int) uint32 {
	words := []uint64{uint64(v.ID), uint64(d), uint64(o), a.Count, uint64(a.NRanks), uint64(blocks),
		uint64(threads), uint64(a.Flags)}
	for _, p := range v.Params {
		words = append(words, uint64(p.Slot)<<32|uint64(*a.ParamSlot(p.Slot)))
	}
	h := fnv.New32a()
	var buf [8]byte
	for _, w := range words {
		binary.LittleEndian.PutUint64(buf[:], w)
		h.Write(buf[:])
	}
	s := h.Sum32()
	return (s ^ s>>sigblock.TagGenShift) & sigblock.TagCallMask
}

// SetTags writes the launch tags into a: SelfTag from this rank's own
// buffer generation, PeerTag[p] from the generation of peer p's buffers as
// this rank holds them (gens[p]; a nil gens counts every generation as 0).
func SetTags(a *Args, call uint32, gens []uint32) {
	gen := func(r int) uint32 {
		if r < len(gens) {
			return gens[r]
		}
		return 0
	}
	a.SelfTag = sigblock.MakeTag(call, gen(int(a.Rank)))
	for p := 0; p < sigblock.MaxRanks; p++ {
		a.PeerTag[p] = 0
		if p < int(a.NRanks) {
			a.PeerTag[p] = sigblock.MakeTag(call, gen(p))
		}
	}
}
