package reference

import "fmt"

// Special inputs: signed zeros, subnormals, infinities, NaNs with payloads
// and the largest finite values, placed so that each rank's specials meet
// other ranks' specials at the same element. They are what sentinel-based
// kernels break on: a kernel that takes -0.0 (or +0.0) in its data for "not
// yet written" hangs or drops the zero's sign, one that flushes subnormals
// or accumulates in the 16-bit type loses them, one that sums from a +0
// accumulator turns -0 + -0 into +0.
//
// The layout is a pure function of (seed, rank, iteration, index), like the
// other kinds, and does not depend on the world size. Elements come in
// tiles of specialTileElems (16 bytes of a 16-bit dtype: one vector); the
// tile's pattern is specialCycle's entry at the tile's index plus a
// rotation drawn from (seed, iteration), so any 16 consecutive tiles hold
// every pattern:
//
//   - zeros: every rank -0; every rank +0; every rank a zero of random sign.
//   - words: pairs of adjacent elements (a 32-bit word of a 16-bit dtype, a
//     64-bit word of f32) whose halves are +0 and -0 on every rank, so the
//     word reads as a -0.0 of the wider float, as does the output's; one
//     rank's -0 half made the smallest negative subnormal (0x80010000 for
//     bf16 and f16 pairs); both halves -0; -0 and +0 with one rank's -0
//     made the largest negative subnormal.
//   - pairs: two ranks of the element (the pair, drawn with ranks 0 and 1
//     half the time, ranks below 4, 8 and 16 in the other half) each hold
//     any special value (a zero, a subnormal, the smallest normal, 1, the
//     largest finite value and its neighbour below, the smallest value of
//     the top binade, half and a quarter of the top binade's spacing, an
//     infinity or a NaN), every other rank a zero of random sign.
//   - subnormals: ranks 0 and 1 hold subnormals, the others zeros of random
//     sign; rank 0 walks through every subnormal of the dtype (both signs;
//     a selection for f32) in order, 8 per tile, so 64 KiB of f16 holds all
//     2046 of f16's on rank 0; rank 1 holds subnormals drawn at random.
//   - edges: the pair holds the largest finite value and one of: half the
//     top spacing of the same sign (the exact sum is a tie that rounds to
//     even, which is Inf: a sum that overflows in the 16-bit type but not
//     in fp32), a quarter of it (stays the largest), the largest value
//     again (Inf), its negation (+0), its neighbour below (Inf), the
//     smallest of the top binade (Inf), minus half the spacing (a tie that
//     rounds to the even neighbour below) or minus a quarter (the largest).
//   - cancel: the pair holds x and -x for a finite nonzero x: the sum is +0.
//   - big: every rank a value of the top binade, one sign for the element:
//     any two of them overflow the dtype, so N >= 2 ranks sum to Inf in any
//     order, in fp32 (where f16's sum is finite before the final rounding)
//     or in the dtype.
//   - inf/NaN: every rank +Inf, -Inf, a NaN, +1, -1, +0 or -0.
//   - NaNs: every rank a NaN; infs: every rank an infinity of one sign.
//
// At most two ranks hold a finite nonzero value at an element, except in
// the big pattern (all of one sign, pairwise overflowing) and in the
// inf/NaN pattern (±1: integers, exact in any order). So every element's
// sum has one right result, whatever the order and whether partial sums
// are kept in fp32 or in the dtype (doc.go, Special inputs).

// specialTileElems is the length of a tile of the special layout.
const specialTileElems = 8

// specialPattern is what a tile of special inputs holds.
type specialPattern uint8

const (
	patNegZeros specialPattern = iota
	patPosZeros
	patMixedZeros
	patWords
	patPairs
	patSubnormals
	patEdges
	patCancel
	patBig
	patInfNaN
	patNaNs
	patInfs
)

// specialCycle is the patterns of 16 consecutive tiles (rotated per seed
// and iteration): pairs and subnormals three times each, the rest once.
var specialCycle = [...]specialPattern{
	patNegZeros, patPairs, patSubnormals, patWords, patEdges, patMixedZeros, patPairs, patBig,
	patSubnormals, patInfNaN, patPosZeros, patCancel, patPairs, patNaNs, patSubnormals, patInfs,
}

// specialSubnormalSlots is how many entries of specialCycle are
// patSubnormals, and specialSubnormalSlot the order of each among them.
const specialSubnormalSlots = 3

var specialSubnormalSlot = func() (slot [len(specialCycle)]uint64) {
	n := uint64(0)
	for i, p := range specialCycle {
		if p == patSubnormals {
			slot[i] = n
			n++
		}
	}
	if n != specialSubnormalSlots {
		panic(fmt.Sprintf("reference: specialCycle has %d subnormal tiles, want %d", n, specialSubnormalSlots))
	}
	return slot
}()

// specialValues are one dtype's special values, as dtype bits. Magnitudes
// are positive; signed() adds the sign.
type specialValues struct {
	sign uint32
	// subs are positive subnormals: every one of f16 and bf16, and for f32
	// every bf16 subnormal widened (0x00010000..0x007f0000: the f32 words
	// that two bf16 halves, +0 below and a subnormal above, form) and a few
	// with low bits set.
	subs []uint32
	// minNormal is the smallest normal; one is 1; max the largest finite
	// value, maxLess its neighbour below, topLow the smallest value of the
	// top binade (2^emax); halfULP and quarterULP are half and a quarter of
	// the spacing of the top binade.
	minNormal, one, max, maxLess, topLow, halfULP, quarterULP, inf uint32
	// nans are quiet and signalling NaNs with payloads, of both signs, all
	// ones among them (the one pattern a kernel that takes some bit pattern
	// for "not yet written" might pick: oneshot-sentinel's stays exact
	// through it); none is the poison pattern or its quiet form.
	nans []uint32
	// quietNaN is the dtype's canonical quiet NaN, which reports show where
	// a NaN is expected.
	quietNaN uint32
}

func (v *specialValues) signed(mag uint32, neg bool) uint32 {
	if neg {
		return mag | v.sign
	}
	return mag
}

// sub is subnormal number m of the walk over both signs: magnitude
// subs[m mod n], negative for the second n.
func (v *specialValues) sub(m uint64) uint32 {
	n := uint64(len(v.subs))
	return v.signed(v.subs[m%n], m/n%2 == 1)
}

var specialF16 = &specialValues{
	sign: 0x8000, subs: countUp(1, 0x3ff, 1),
	minNormal: 0x0400, one: 0x3c00, max: 0x7bff, maxLess: 0x7bfe, topLow: 0x7800, // 65504, 65472, 32768
	halfULP: 0x4c00, quarterULP: 0x4800, inf: 0x7c00, // 16 and 8: the top spacing is 32
	nans:     []uint32{0x7e00, 0x7f01, 0x7fff, 0x7c01, 0x7d00, 0xffff, 0xfd55},
	quietNaN: 0x7e00,
}

var specialBF16 = &specialValues{
	sign: 0x8000, subs: countUp(1, 0x7f, 1),
	minNormal: 0x0080, one: 0x3f80, max: 0x7f7f, maxLess: 0x7f7e, topLow: 0x7f00, // 2^128-2^120, 2^128-2^121, 2^127
	halfULP: 0x7b00, quarterULP: 0x7a80, inf: 0x7f80, // 2^119 and 2^118: the top spacing is 2^120
	nans:     []uint32{0x7fc0, 0x7fc1, 0x7fff, 0x7f81, 0x7fa0, 0xffff, 0xff95},
	quietNaN: 0x7fc0,
}

var specialF32 = &specialValues{
	sign: 0x80000000,
	subs: append(countUp(0x00010000, 0x007f0000, 0x00010000),
		0x00000001, 0x00000002, 0x00000003, 0x00008000, 0x0000ffff, 0x00010001, 0x00400001, 0x00555555, 0x007fffff),
	minNormal: 0x00800000, one: 0x3f800000, max: 0x7f7fffff, maxLess: 0x7f7ffffe, topLow: 0x7f000000,
	halfULP: 0x73000000, quarterULP: 0x72800000, inf: 0x7f800000, // 2^103 and 2^102: the top spacing is 2^104
	nans:     []uint32{0x7fc00000, 0x7fc00001, 0x7fffffff, 0x7f800001, 0x7fa00000, 0xffffffff, 0xff812345},
	quietNaN: 0x7fc00000,
}

func countUp(from, to, step uint32) []uint32 {
	var out []uint32
	for x := from; x <= to; x += step {
		out = append(out, x)
	}
	return out
}

func specialValuesOf(d DType) *specialValues {
	switch d {
	case F32:
		return specialF32
	case F16:
		return specialF16
	case BF16:
		return specialBF16
	}
	panic(fmt.Sprintf("reference: unknown dtype %d", d))
}

// specialElem is what every rank's input at one element shares.
type specialElem struct {
	v   *specialValues
	pat specialPattern
	h   uint64 // the element's hash
	e   int    // the element's place in its tile
	// walk is rank 0's place in the subnormal walk (patSubnormals).
	walk uint64
	// a and b are the pair (patPairs, patEdges, patCancel).
	a, b int
}

// specialAt lays out element index of the special inputs of d under key.
func specialAt(v *specialValues, key, index uint64) specialElem {
	const cycle = uint64(len(specialCycle))
	t := index/specialTileElems + key%cycle
	s := specialElem{v: v, pat: specialCycle[t%cycle], h: elemHash(key, index), e: int(index % specialTileElems)}
	switch s.pat {
	case patSubnormals:
		tile := t/cycle*specialSubnormalSlots + specialSubnormalSlot[t%cycle]
		s.walk = tile*specialTileElems + uint64(s.e) + key>>16
	case patPairs, patEdges, patCancel:
		// Ranks 0 and 1 half the time; below 4, 8 and 16 a quarter, an
		// eighth and an eighth: every world size meets pairs inside it.
		span := 16
		switch {
		case s.h&1 != 0:
			span = 2
		case s.h&2 != 0:
			span = 4
		case s.h&4 != 0:
			span = 8
		}
		s.a = int(s.h>>8) % span
		s.b = (s.a + 1 + int(s.h>>16)%(span-1)) % span
	}
	return s
}

// field is rank's own 16 random bits of the element: field r%4 of hash
// word 1+r/4, so ranks' choices are independent.
func (s *specialElem) field(rank int) uint32 {
	if rank < 0 {
		panic(fmt.Sprintf("reference: input of rank %d", rank))
	}
	return uint32(hashWord(s.h, 1+rank/4) >> (16 * uint(rank%4)))
}

// bits is rank's input at the element, as dtype bits.
func (s *specialElem) bits(rank int) uint32 {
	v := s.v
	f := s.field(rank)
	zero := v.signed(0, f&1 != 0) // a zero of random sign
	switch s.pat {
	case patNegZeros:
		return v.sign
	case patPosZeros:
		return 0
	case patMixedZeros:
		return zero
	case patWords:
		// Pairs of elements: (+0, -0); (+0, -smallest subnormal on one of
		// ranks 0 and 1, -0 elsewhere); (-0, -0); (-0 or, on one of ranks 0
		// and 1, -largest subnormal; +0).
		lo := s.e%2 == 0
		one := rank == int(s.h>>8&1)
		switch s.e / 2 % 4 {
		case 0:
			return v.signed(0, !lo)
		case 1:
			if lo {
				return 0
			}
			return v.signed(either(one, v.subs[0], 0), true)
		case 2:
			return v.sign
		default:
			if !lo {
				return 0
			}
			return v.signed(either(one, v.subs[len(v.subs)-1], 0), true)
		}
	case patSubnormals:
		switch rank {
		case 0:
			return v.sub(s.walk)
		case 1:
			return v.sub(s.walk + uint64(len(v.subs)) + uint64(s.h>>24)%uint64(len(v.subs)))
		}
		return zero
	case patPairs:
		if rank == s.a || rank == s.b {
			return v.any(f)
		}
		return zero
	case patEdges:
		neg := s.h>>24&1 != 0
		switch rank {
		case s.a:
			return v.signed(v.max, neg)
		case s.b:
			switch s.h >> 25 % 8 {
			case 0:
				return v.signed(v.halfULP, neg)
			case 1:
				return v.signed(v.quarterULP, neg)
			case 2:
				return v.signed(v.max, neg)
			case 3:
				return v.signed(v.max, !neg)
			case 4:
				return v.signed(v.maxLess, neg)
			case 5:
				return v.signed(v.topLow, neg)
			case 6:
				return v.signed(v.halfULP, !neg)
			default:
				return v.signed(v.quarterULP, !neg)
			}
		}
		return zero
	case patCancel:
		x := v.finite(uint32(s.h >> 24))
		switch rank {
		case s.a:
			return x
		case s.b:
			return x ^ v.sign
		}
		return zero
	case patBig:
		neg := s.h>>24&1 != 0
		return v.signed([...]uint32{v.max, v.maxLess, v.topLow}[f>>1%3], neg)
	case patInfNaN:
		switch f >> 1 % 8 {
		case 0:
			return v.inf
		case 1:
			return v.inf | v.sign
		case 2, 3:
			return v.nans[f>>4%uint32(len(v.nans))]
		case 4:
			return v.one
		case 5:
			return v.one | v.sign
		default:
			return zero
		}
	case patNaNs:
		return v.nans[f>>1%uint32(len(v.nans))]
	case patInfs:
		return v.signed(v.inf, s.h>>24&1 != 0)
	}
	panic(fmt.Sprintf("reference: special pattern %d", s.pat))
}

// either is a where c holds, else b.
func either(c bool, a, b uint32) uint32 {
	if c {
		return a
	}
	return b
}

// any is a special value drawn by the 16 bits f: the class from the low 4,
// the sign from the next, the subnormal or NaN from the rest.
func (v *specialValues) any(f uint32) uint32 {
	neg := f>>4&1 != 0
	pick := f >> 5
	switch f % 16 {
	case 0:
		return 0
	case 1:
		return v.sign
	case 2, 3, 4:
		return v.signed(v.subs[pick%uint32(len(v.subs))], neg)
	case 5:
		return v.signed(v.minNormal, neg)
	case 6:
		return v.signed(v.one, neg)
	case 7, 8:
		return v.signed(v.max, neg)
	case 9:
		return v.signed(v.maxLess, neg)
	case 10:
		return v.signed(v.topLow, neg)
	case 11:
		return v.signed(v.halfULP, neg)
	case 12:
		return v.signed(v.quarterULP, neg)
	case 13:
		return v.signed(v.inf, neg)
	default:
		return v.nans[pick%uint32(len(v.nans))]
	}
}

// finite is a finite nonzero special value drawn by f (patCancel).
func (v *specialValues) finite(f uint32) uint32 {
	neg := f&1 != 0
	switch f >> 1 % 8 {
	case 0, 1:
		return v.signed(v.subs[f>>4%uint32(len(v.subs))], neg)
	case 2:
		return v.signed(v.minNormal, neg)
	case 3:
		return v.signed(v.one, neg)
	case 4:
		return v.signed(v.max, neg)
	case 5:
		return v.signed(v.topLow, neg)
	case 6:
		return v.signed(v.halfULP, neg)
	default:
		return v.signed(v.quarterULP, neg)
	}
}

// specialBits is rank's special input at index under key.
func specialBits(d DType, key uint64, rank int, index uint64) uint32 {
	s := specialAt(specialValuesOf(d), key, index)
	return s.bits(rank)
}

// fillSpecial is Fill for special inputs.
func (g Gen) fillSpecial(dst []byte, rank, iter int, first uint64) {
	v := specialValuesOf(g.DType)
	key := elemKey(g.Seed, iter)
	n := len(dst) / g.DType.Size()
	parallelRanges(n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			s := specialAt(v, key, first+uint64(j))
			g.DType.SetBits(dst, j, s.bits(rank))
		}
	})
}
