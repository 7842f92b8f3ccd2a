package reference

import (
	"fmt"
	"math"
)

// Expectation is what one output element must be.
type Expectation struct {
	// BitExact says the output must equal Bits bit for bit. Otherwise it
	// must be within Bound of Value.
	BitExact bool
	// Bits is the expected dtype bits when BitExact; otherwise Value rounded
	// to the dtype, for reports.
	Bits uint32
	// Value is the expected value (BitExact) or the float64 reference sum,
	// which is exact for the generator's inputs (see doc.go).
	Value float64
	// Bound is the largest |got - Value| a correct implementation can
	// produce in some order; 0 when BitExact.
	Bound float64
	// What special inputs leave open (doc.go, Special inputs); all false
	// for the other kinds. NaN: the result must be a NaN of any sign and
	// payload (Bits is the dtype's quiet NaN, for reports). OrNaN: a NaN is
	// right as well as Bits (max and min with a NaN among numbers).
	// EitherZero: Bits is a zero and the other zero is right too (max and
	// min of +0 and -0). A NaN is never right when it is the poison
	// pattern, a signalling NaN that no input is and arithmetic never
	// yields (it quiets): only an unwritten output holds it. Its quiet form
	// is right, though: arithmetic that combines a NaN's bits with another
	// input's can yield it (Go's max and min on amd64 OR the operands'
	// bits: bf16 0x7fc1 and 0x006d give 0x7fed, the quiet poison).
	NaN, OrNaN, EitherZero bool
}

// Accepts reports whether got, dtype bits, meets a bit-exact expectation:
// got is Bits, or one of the results special inputs leave open.
func (e Expectation) Accepts(d DType, got uint32) bool {
	if d.isNaN(got) {
		return (e.NaN || e.OrNaN) && got != PoisonBits(d)
	}
	return !e.NaN && (got == e.Bits || e.EitherZero && got == e.Bits^d.signBit())
}

// acceptText describes what Accepts takes, e.g. "+0 (0x0000) or -0
// (0x8000)"; "" when Bits is the only right result.
func (e Expectation) acceptText(d DType) string {
	const nan = "a NaN (any sign and payload)"
	switch {
	case e.NaN:
		return nan
	case e.EitherZero && e.OrNaN:
		return d.Describe(0) + ", " + d.Describe(d.signBit()) + " or " + nan
	case e.EitherZero:
		return d.Describe(0) + " or " + d.Describe(d.signBit())
	case e.OrNaN:
		return d.Describe(e.Bits) + " or " + nan
	}
	return ""
}

// BitExact reports whether outputs under spec are compared bit for bit:
// always for Exact and Special inputs (Special: where IEEE 754 defines the
// result), for max and min, and for a declared order; only a Random sum in
// an unknown order is compared within a bound.
func (s CheckSpec) BitExact() bool {
	return s.Gen.Kind != Random || s.Op != Sum || s.Order != OrderUnknown
}

// Expect returns the expectation for output element index under spec. Check
// uses the same code for every element.
func (s CheckSpec) Expect(index uint64) Expectation {
	r := newReducer(s)
	return r.expect(index)
}

// reducer computes expected outputs for one CheckSpec.
type reducer struct {
	dtype   DType
	op      Op
	s       *scheme
	key     uint64
	n       int
	bounded bool
	// special: the inputs are Special ones (s is nil; specialExpect).
	special *specialValues
	// The bound is boundAbs*sum|x_r| + boundRef*|ref| (doc.go).
	boundAbs, boundRef float64
	// For ulp counts in the bounded loop: 1/ulp(x) for a float64 x with
	// biased exponent e >= minBiasedExp is the float64 with biased exponent
	// invULPBase - e (ulp(x) = 2^(e-1023-precision+1)).
	minBiasedExp, invULPBase uint64
}

func newReducer(s CheckSpec) reducer {
	if s.NRanks < 1 {
		panic(fmt.Sprintf("reference: CheckSpec.NRanks = %d, need at least 1", s.NRanks))
	}
	if s.Op > Min {
		panic(fmt.Sprintf("reference: unknown op %d", s.Op))
	}
	if s.Order > OrderRankAscendingF32 {
		panic(fmt.Sprintf("reference: unknown order %d", s.Order))
	}
	f := s.Gen.DType.format() // panics on an unknown dtype
	u := s.Gen.DType.UnitRoundoff()
	var sch *scheme
	var special *specialValues
	if s.Gen.Kind == Special {
		special = specialValuesOf(s.Gen.DType)
	} else {
		sch = s.Gen.scheme()
	}
	return reducer{
		dtype:        s.Gen.DType,
		op:           s.Op,
		s:            sch,
		special:      special,
		key:          elemKey(s.Gen.Seed, s.Iter),
		n:            s.NRanks,
		bounded:      !s.BitExact(),
		boundAbs:     float64(s.NRanks-1) * u,
		boundRef:     u,
		minBiasedExp: uint64(f.minExp + 1023),
		invULPBase:   uint64(2*1023 + f.precision - 1),
	}
}

// accF32 is the OrderRankAscendingF32 reduction of the element with hash h:
// acc = x0, then acc = acc op x_r for r = 1..n-1 in float32. For max, min
// and Exact inputs it is also the exact result, whatever the order.
func (r *reducer) accF32(h uint64) float32 {
	if r.op != Sum {
		return r.extreme(h)
	}
	switch v := r.s.vals; len(v) {
	case 0:
		return sumF32Random(r.n, h)
	case 1 << exactBits:
		return sumVals((*[1 << exactBits]float32)(v), r.n, h)
	case 1 << bf16RandomWidth:
		return sumVals((*[1 << bf16RandomWidth]float32)(v), r.n, h)
	case 1 << f16RandomWidth:
		return sumVals((*[1 << f16RandomWidth]float32)(v), r.n, h)
	}
	panic("reference: no sum for this scheme")
}

// extreme is max or min in rank order. The host backend's matrix runs it
// for two ops of three, so it walks the hash words as sumVals does: one
// hash per word of fields, not one per rank.
func (r *reducer) extreme(h uint64) float32 {
	s := r.s
	isMax := r.op == Max
	w := h
	acc := s.value(w & s.mask)
	w >>= s.width
	for rank := 1; rank < r.n; rank++ {
		if rank%s.perWord == 0 {
			w = hashWord(h, rank/s.perWord)
		}
		v := s.value(w & s.mask)
		w >>= s.width
		if (isMax && v > acc) || (!isMax && v < acc) {
			acc = v
		}
	}
	return acc
}

// sumF64 returns the float64 sum of the Random inputs of the element with
// hash h and the sum of their magnitudes, both exact (see fixedSum).
func (r *reducer) sumF64(h uint64) (ref, abs float64) {
	var sum, mag int64
	switch f := r.s.fixed; len(f) {
	case 0:
		sum, mag = fixedSumF32(r.n, h)
	case 1 << bf16RandomWidth:
		sum, mag = fixedSum((*[1 << bf16RandomWidth]uint64)(f), r.n, h)
	case 1 << f16RandomWidth:
		sum, mag = fixedSum((*[1 << f16RandomWidth]uint64)(f), r.n, h)
	default:
		panic("reference: no fixed-point sum for this scheme")
	}
	return float64(sum) * r.s.unit, float64(mag) * r.s.unit
}

// roundF32 rounds a float32 result to the dtype's bits.
func (r *reducer) roundF32(acc float32) uint32 {
	switch r.dtype {
	case BF16:
		return uint32(BF16FromF32(acc))
	case F16:
		return uint32(F16FromF32(acc))
	default:
		return math.Float32bits(acc)
	}
}

// bound is the accepted |got - ref| of a Random sum in an unknown order.
func (r *reducer) bound(ref, abs float64) float64 {
	return r.boundAbs*abs + r.boundRef*math.Abs(ref)
}

func (r *reducer) expect(index uint64) Expectation {
	if r.special != nil {
		return r.expectSpecial(index, make([]uint32, r.n))
	}
	h := elemHash(r.key, index)
	if r.bounded {
		ref, abs := r.sumF64(h)
		return Expectation{Bits: r.dtype.FromF64(ref), Value: ref, Bound: r.bound(ref, abs)}
	}
	bits := r.roundF32(r.accF32(h))
	return Expectation{BitExact: true, Bits: bits, Value: r.dtype.ToF64(bits)}
}

// expectSpecial fills in with every rank's special input at index and
// returns the expectation for them.
func (r *reducer) expectSpecial(index uint64, in []uint32) Expectation {
	s := specialAt(r.special, r.key, index)
	for rank := range in {
		in[rank] = s.bits(rank)
	}
	return specialExpect(r.dtype, r.op, r.special, in)
}

// specialExpect is the expectation for the inputs in (dtype bits, rank
// order) under IEEE 754, round to nearest even.
//
// Sum: acc = x0, acc += x_r in float32 for r = 1..N-1, rounded once to the
// dtype; a NaN result (a NaN among the inputs, or infinities of both
// signs) is expected as a NaN of any payload and sign. For the special
// layout this is the one result of every order, in fp32 or in the dtype
// (special.go): -0 when every input is -0, +0 for any other exact zero,
// Inf of the sign where the sum overflows the dtype.
//
// Max and min: the largest (smallest) input that is not a NaN, bit for
// bit, except that where it is a zero and zeros of both signs are among
// the inputs, either zero is right (fmaxf and IEEE 754-2008 maxNum may
// return either; 754-2019 maximum returns +0 for max, -0 for min, which
// is what Bits holds). Where a NaN is among numbers, a NaN is right too:
// 754-2019 maximum and minimum propagate it, 754-2008 maxNum, C's fmax and
// CUDA's fmaxf return the number. Only NaNs: a NaN.
func specialExpect(d DType, op Op, v *specialValues, in []uint32) Expectation {
	nan := Expectation{BitExact: true, NaN: true, Bits: v.quietNaN, Value: math.NaN()}
	if op == Sum {
		acc := d.ToF32(in[0])
		for _, x := range in[1:] {
			acc += d.ToF32(x)
		}
		if acc != acc {
			return nan
		}
		bits := d.FromF32(acc)
		return Expectation{BitExact: true, Bits: bits, Value: d.ToF64(bits)}
	}
	isMax := op == Max
	var m float32
	numbers, nans, posZero, negZero := false, false, false, false
	for _, x := range in {
		f := d.ToF32(x)
		switch {
		case f != f:
			nans = true
			continue
		case f == 0 && x&d.signBit() != 0:
			negZero = true
		case f == 0:
			posZero = true
		}
		if !numbers || isMax && f > m || !isMax && f < m {
			m, numbers = f, true
		}
	}
	if !numbers {
		return nan
	}
	e := Expectation{BitExact: true, Bits: d.FromF32(m), Value: float64(m), OrNaN: nans}
	if m == 0 && posZero && negZero {
		e.EitherZero = true
		e.Bits = 0
		if !isMax {
			e.Bits = d.signBit()
		}
		e.Value = d.ToF64(e.Bits)
	}
	return e
}
